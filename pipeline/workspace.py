"""The benchmark repository a pipeline command works in (InferenceX) and what it reads there.

Where the masters, changelog, thresholds (InferenceX shape: default + models), golden acceptance
lengths and relpipe's `images.lock.yaml` are is the repository's era, which
`changelog.repository` detects (every era InferenceX has had); `.relpipe/` under the root holds
run records and the stage cache (gitignored). Every file is optional except where a command
needs it.

Everything read here is untrusted input: YAML goes through the strict loader of
`changelog.configs.semdiff` (duplicate keys, aliases and tabs rejected).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..changelog.configs.points import plan_key
from ..changelog.configs.semdiff import load_yaml
from ..changelog.errors import ChangelogError
from ..changelog.repository.checkout import Checkout, open_checkout
from ..changelog.repository.detect import (
    canonical_repository,
    linked_repository,
    read_override,
)
from ..changelog.repository.era import MASTER_SUFFIX, Era
from ..changelog.repository.launch import check_key
from ..core import suggest
from ..core.errors import RelpipeError
from ..core.files import read_capped
from ..engine.errors import EngineError
from ..engine.evals.thresholds import Thresholds, load
from ..validate.errors import ValidateError
from ..validate.gate import git as githook
from .errors import PipelineError

STATE = Path(".relpipe")
_MAX_YAML = 16 * 1024 * 1024


@dataclass(frozen=True)
class Point:
    """One benchmark point of a config key, and the eval batch it maps to on the qualifying host."""

    name: str  # e.g. "agentic-coding/tp8/conc4"
    concurrency: int
    batch: int


@dataclass(frozen=True, kw_only=True)
class ConfigKey:
    key: str
    master: str  # path relative to the repository
    image: str
    framework: str | None
    model_prefix: str | None
    points: tuple[Point, ...]
    # WARN findings at file:line: master fields relpipe does not know (it never refuses them)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def state(self) -> Path:
        return self.root / STATE

    @cached_property
    def checkout(self) -> Checkout:
        """The repository and its era (`changelog.repository`), detected once."""
        try:
            found = open_checkout(self.root)
        except ChangelogError as exc:
            raise PipelineError(str(exc)) from None
        return Checkout(self.root, found.era, found.repository)

    @property
    def era(self) -> Era:
        """The repository's era (`changelog.repository`)."""
        return self.checkout.era

    def repository_url(self, default: str) -> str:
        """The benchmark repository's canonical URL, from its identity and never a fork's
        `origin` (`changelog.repository.detect.canonical_repository`: the override file's
        `repository`, the `upstream` remote, its changelog's own links), else `default`."""
        changelog = self.root / self.era.changelog
        try:
            linked = linked_repository(read_capped(changelog, _MAX_YAML, "the changelog"))
        except RelpipeError:
            linked = None
        try:
            remotes = githook.remote_urls(str(self.root))
        except ValidateError:
            remotes = {}
        remotes.pop("origin", None)  # a fork's clone: its origin is not the repository
        found = canonical_repository(
            named=None, override=self.checkout.repository, remotes=remotes, linked=linked
        )
        return found or default

    @property
    def changelog(self) -> Path:
        return Path(self.era.changelog)  # relative to the root, as the release writes it

    @cached_property
    def lock(self) -> Path | None:
        """The lock file a team opted into (`[tool.relpipe] lock = "images.lock.yaml"` in
        `.relpipe.toml`), else None: InferenceX has none, and relpipe keeps its pins in its own
        state (`pipeline.pins`)."""
        try:
            override = read_override(str(self.root)) or {}
        except ChangelogError as exc:
            raise PipelineError(str(exc)) from None
        return Path(self.era.lock) if "lock" in override else None

    def masters(self) -> list[Path]:
        return self.checkout.masters()

    def read_yaml(self, path: Path) -> Any:
        try:
            size = path.stat().st_size
            if size > _MAX_YAML:
                raise PipelineError(
                    f"{path}: {size} bytes is over the {_MAX_YAML}-byte limit for YAML input"
                )
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PipelineError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
        except OSError as exc:
            raise PipelineError(f"cannot read {path}: {exc.strerror}") from exc
        try:
            return load_yaml(
                text, str(path.relative_to(self.root) if path.is_relative_to(self.root) else path)
            )
        except ChangelogError as exc:
            raise PipelineError(str(exc)) from exc

    def config_key(self, key: str, max_batch: int) -> ConfigKey:
        """Find `key` in the master configs and expand its benchmark points (fail if
        absent/ambiguous).
        """
        found: list[tuple[Path, Mapping[str, Any]]] = []
        known: list[str] = []  # every key, for the suggestion when `key` is not one
        for master in self.masters():
            doc = self.read_yaml(master)
            if isinstance(doc, dict):
                known += [k for k in doc if isinstance(k, str)]
                if isinstance(doc.get(key), dict):
                    found.append((master, doc[key]))
        if not found:
            names = ", ".join(p.name for p in self.masters()) or (
                f"no {self.era.masters}/*{MASTER_SUFFIX}"
            )
            raise PipelineError(
                f"config key {key!r} is not in {names} under {self.root}"
                f"{suggest.did_you_mean(key, known)}"
            )
        if len(found) > 1:
            raise PipelineError(
                f"config key {key!r} is defined in {len(found)} master configs; keep one"
            )
        master, cfg = found[0]
        try:
            lines = master.read_text(encoding="utf-8").splitlines()
            warnings = check_key(self.checkout, master, key, cfg, lines)
        except ChangelogError as exc:
            raise PipelineError(str(exc)) from None
        image = cfg.get("image")
        if not isinstance(image, str) or not image:
            raise PipelineError(f"{master.name}: config key {key} has no image")
        return ConfigKey(
            key=key,
            master=str(master.relative_to(self.root)),
            image=image,
            framework=_opt_str(cfg.get("framework")),
            model_prefix=_opt_str(cfg.get("model-prefix")),
            points=expand_points(key, cfg, max_batch),
            warnings=tuple(warnings),
        )

    def thresholds(self) -> dict[str, Any]:
        """thresholds.yaml as {default, models}, read by the engine's own strict reader."""

        path = self.root / self.era.thresholds
        if not path.is_file():
            return {}
        try:
            parsed = load(str(path))
        except EngineError as exc:
            raise PipelineError(str(exc)) from exc
        return {
            "default": dict(parsed.default),
            "models": {k: dict(v) for k, v in parsed.models.items()},
        }

    def file_hash(self, rel: Path | str) -> str | None:
        path = self.root / rel
        if not path.is_file():
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def tree_hash(self, rel: Path | str) -> str | None:
        """Hash of the YAML files under a folder (a stage input: golden files, configs)."""
        folder = self.root / rel
        if not folder.is_dir():
            return None
        h = hashlib.sha256()
        for path in sorted(folder.rglob("*.yaml")):
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()


def _opt_str(value: object) -> str | None:
    return str(value) if value is not None else None


def expand_points(key: str, cfg: Mapping[str, Any], max_batch: int) -> tuple[Point, ...]:
    """The key's points as InferenceX's generator plans them (`changelog.configs.points`, the one
    plan the notes and C10 also use); the eval batch is the concurrency capped at `max_batch`."""
    try:
        planned = plan_key(key, cfg)
    except ChangelogError as exc:
        raise PipelineError(str(exc)) from exc
    return tuple(
        Point(p.name, p.concurrency, max(1, min(p.concurrency, max_batch))) for p in planned
    )


def threshold_for(
    thresholds: Mapping[str, Any], model_prefix: str | None, suite: str
) -> float | None:
    """The engine's lookup (InferenceX's: exact model-prefix, then default); None when nothing
    applies."""

    table = Thresholds(dict(thresholds.get("default") or {}), dict(thresholds.get("models") or {}))
    try:
        return float(table.lookup(suite, model_prefix or "")[0])
    except EngineError:
        return None
