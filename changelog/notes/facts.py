"""The release facts record (`release.json`, schema 1): everything the release notes may state.

Owns parsing (`ReleaseFacts.from_json`, fail closed: wrong types, unknown fields, malformed
references/digests/versions are one-line `ChangelogError`s) and the canonical JSON form
(`to_json`; `from_json(to_json(f)) == f`). Free text from upstream (commit subjects, risk notes) is
kept as given here and escaped by the renderer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core import jsonload
from ...core.commit import Commit
from ...core.files import read_capped
from ...core.status import STATUSES, Status
from ..configs.semdiff import (
    Change,
    KeyPoints,
    change_from_json,
    change_to_json,
    points_from_json,
    points_to_json,
)
from ..errors import ChangelogError

SCHEMA = 1
MAX_FACTS = 4 * 1024 * 1024
MAX_STRING = 2000
IMAGE_REF = re.compile(
    r"(?:[a-z0-9][a-z0-9.-]*(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_!-]{0,127}")
COMMIT = re.compile(r"[0-9a-f]{7,40}")
IDENT = re.compile(r"[A-Za-z0-9*][A-Za-z0-9*._/-]{0,199}")
RISK_KINDS = ("missing-fix", "note")


class _Obj:
    """A JSON object being parsed: typed getters that name the field in every error."""

    def __init__(self, data: object, where: str, allowed: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            raise ChangelogError(f"{where} must be a JSON object; fix release.json")
        extra = sorted(set(data) - set(allowed))
        if extra:
            raise ChangelogError(f"{where} has unknown fields {extra}; fix release.json")
        self.data: Mapping[str, Any] = data
        self.where = where

    def _fail(self, name: str, want: str) -> ChangelogError:
        return ChangelogError(f"{self.where}.{name} must be {want}; fix release.json")

    def text(
        self, name: str, pattern: re.Pattern[str] | None = None, *, optional: bool = False
    ) -> Any:
        value = self.data.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or len(value) > MAX_STRING:
            raise self._fail(name, f"a non-empty string of at most {MAX_STRING} characters")
        if pattern is not None and not pattern.fullmatch(value):
            raise self._fail(name, f"matching {pattern.pattern[:60]!r}, got {value[:80]!r}")
        return value

    def integer(self, name: str, *, optional: bool = False) -> Any:
        value = self.data.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self._fail(name, "a non-negative integer")
        return value

    def number(self, name: str, *, optional: bool = False) -> Any:
        value = self.data.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            raise self._fail(name, "a number")
        return float(value)

    def items(self, name: str) -> list[Any]:
        value = self.data.get(name, [])
        if not isinstance(value, list):
            raise self._fail(name, "a list")
        return value

    def idents(self, name: str) -> tuple[str, ...]:
        return tuple(_ident(v, f"{self.where}.{name}[{i}]") for i, v in enumerate(self.items(name)))

    def obj(self, name: str) -> Any:
        return self.data.get(name, {})


def _ident(value: object, where: str) -> str:
    if not isinstance(value, str) or not IDENT.fullmatch(value):
        raise ChangelogError(
            f"{where} must be an identifier (letters, digits, *._/-), got {str(value)[:80]!r}; "
            "fix release.json"
        )
    return value


@dataclass(frozen=True)
class Engine:
    name: str
    version: str
    commit: str | None = None


@dataclass(frozen=True, kw_only=True)
class Image:
    ref: str
    digest: str | None = None
    engine: Engine | None = None
    rocm: str | None = None
    packages: tuple[tuple[str, str], ...] = ()  # (name, version), sorted by name


@dataclass(frozen=True)
class RelevantChange:
    path: str
    category: str
    pr: int | None = None


@dataclass(frozen=True)
class Precision:
    """Precision evidence: watched files unchanged, changed but not in precision paths, relevant."""

    unchanged: tuple[str, ...] = ()
    changed_not_relevant: tuple[str, ...] = ()
    relevant: tuple[RelevantChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.unchanged or self.changed_not_relevant or self.relevant)


@dataclass(frozen=True)
class CheckStatus:
    """A verdict check as the release notes show it: its id and status (`core.check.Check` is
    the whole record; release.json keeps only these two)."""

    id: str  # C1..C12
    status: Status


@dataclass(frozen=True, kw_only=True)
class EvalScore:
    suite: str
    score: float
    threshold: float | None = None
    samples: int | None = None


@dataclass(frozen=True)
class Validation:
    checks: tuple[CheckStatus, ...] = ()
    evals: tuple[EvalScore, ...] = ()


HISTORY_VERDICTS = (
    "regression",
    "improvement",
    "within-noise",
    "failed",
    "below-threshold",
    "no-baseline",
    "missing",
    "unstable-acceptance",
)  # fmt: skip - changelog.results.regressions' kinds


@dataclass(frozen=True, kw_only=True)
class PointChange:
    """One benchmark point and metric of a key vs the previous image (the history's judgement)."""

    key: str
    point: str
    metric: str
    old: float | None
    new: float | None
    change: float | None  # relative
    band: float | None  # relative, like `change` (a score's band divided by the old score)
    verdict: str  # HISTORY_VERDICTS


@dataclass(frozen=True, kw_only=True)
class Risk:
    """`missing-fix`: upstream PR `repo#pr` is not in the image. `note`: free text in both
    languages.
    """

    kind: str
    pr: int | None = None
    repo: str | None = None
    text: str | None = None
    text_zh: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReleaseFacts:
    config_keys: tuple[str, ...]
    new_image: Image
    old_image: Image | None = None
    commits: tuple[Commit, ...] = ()
    commit_count: int | None = None  # commits between old and new engine; `commits` may be a subset
    config_changes: tuple[Change, ...] = ()
    points_plan: tuple[KeyPoints, ...] = ()
    precision: Precision = Precision()
    validation: Validation = Validation()
    risks: tuple[Risk, ...] = ()
    history: tuple[PointChange, ...] = ()  # every point of the key vs the previous image
    schema: int = SCHEMA

    @classmethod
    def from_json(cls, data: object) -> ReleaseFacts:
        top = _Obj(
            data,
            "release",
            (
                "schema",
                "config_keys",
                "old_image",
                "new_image",
                "commits",
                "commit_count",
                "config_changes",
                "points_plan",
                "precision",
                "validation",
                "risks",
                "history",
            ),
        )
        schema = top.data.get("schema")
        if not isinstance(schema, int) or isinstance(schema, bool) or schema != SCHEMA:
            raise ChangelogError(
                f"release.schema must be {SCHEMA}, got {schema!r}; "
                "regenerate release.json with this relpipe"
            )
        keys = top.idents("config_keys")
        if not keys:
            raise ChangelogError("release.config_keys must name at least one config key")
        old = top.data.get("old_image")
        return cls(
            config_keys=keys,
            new_image=_image(top.data.get("new_image"), "release.new_image"),
            old_image=None if old is None else _image(old, "release.old_image"),
            commits=tuple(
                _commit(c, f"release.commits[{i}]") for i, c in enumerate(top.items("commits"))
            ),
            commit_count=top.integer("commit_count", optional=True),
            config_changes=tuple(change_from_json(c) for c in top.items("config_changes")),
            points_plan=tuple(points_from_json(p) for p in top.items("points_plan")),
            precision=_precision(top.obj("precision")),
            validation=_validation(top.obj("validation")),
            risks=tuple(_risk(r, f"release.risks[{i}]") for i, r in enumerate(top.items("risks"))),
            history=tuple(
                _point_change(p, f"release.history[{i}]")
                for i, p in enumerate(top.items("history"))
            ),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "config_keys": list(self.config_keys),
            "old_image": None if self.old_image is None else _image_json(self.old_image),
            "new_image": _image_json(self.new_image),
            "commits": [
                _drop_none({"sha": c.sha, "subject": c.subject, "pr": c.pr, "repo": c.repo})
                for c in self.commits
            ],
            "commit_count": self.commit_count,
            "config_changes": [change_to_json(c) for c in self.config_changes],
            "points_plan": [points_to_json(p) for p in self.points_plan],
            "precision": {
                "unchanged": list(self.precision.unchanged),
                "changed_not_relevant": list(self.precision.changed_not_relevant),
                "relevant": [
                    _drop_none({"path": r.path, "category": r.category, "pr": r.pr})
                    for r in self.precision.relevant
                ],
            },
            "validation": {
                "checks": [{"id": c.id, "status": c.status} for c in self.validation.checks],
                "evals": [
                    _drop_none(
                        {
                            "suite": e.suite,
                            "score": e.score,
                            "threshold": e.threshold,
                            "samples": e.samples,
                        }
                    )
                    for e in self.validation.evals
                ],
            },
            "risks": [
                _drop_none(
                    {
                        "kind": r.kind,
                        "pr": r.pr,
                        "repo": r.repo,
                        "text": r.text,
                        "text_zh": r.text_zh,
                    }
                )
                for r in self.risks
            ],
            "history": [
                {
                    "key": h.key,
                    "point": h.point,
                    "metric": h.metric,
                    "old": h.old,
                    "new": h.new,
                    "change": h.change,
                    "band": h.band,
                    "verdict": h.verdict,
                }
                for h in self.history
            ],
        }


def load(path: str | Path) -> ReleaseFacts:
    """Read and parse a `release.json` file (untrusted: size-capped, strict JSON)."""
    p = Path(path)
    raw = read_capped(p, MAX_FACTS, "facts file", error=ChangelogError)
    try:
        data = jsonload.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ChangelogError(
            f"facts file {p} is not valid UTF-8 JSON ({exc}); regenerate it"
        ) from None
    return ReleaseFacts.from_json(data)


def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def _image(data: object, where: str) -> Image:
    o = _Obj(data, where, ("ref", "digest", "engine", "rocm", "packages"))
    engine = None
    if o.data.get("engine") is not None:
        e = _Obj(o.data["engine"], f"{where}.engine", ("name", "version", "commit"))
        engine = Engine(
            e.text("name", IDENT),
            e.text("version", VERSION),
            e.text("commit", COMMIT, optional=True),
        )
    packages = o.data.get("packages") or {}
    if not isinstance(packages, dict):
        raise ChangelogError(
            f"{where}.packages must be an object of name: version; fix release.json"
        )
    pk = _Obj(packages, f"{where}.packages", tuple(packages))
    return Image(
        ref=o.text("ref", IMAGE_REF),
        digest=o.text("digest", DIGEST, optional=True),
        engine=engine,
        rocm=o.text("rocm", VERSION, optional=True),
        packages=tuple(
            sorted((_ident(n, f"{where}.packages"), pk.text(n, VERSION)) for n in packages)
        ),
    )


def _image_json(image: Image) -> dict[str, Any]:
    return _drop_none(
        {
            "ref": image.ref,
            "digest": image.digest,
            "engine": None
            if image.engine is None
            else _drop_none(
                {
                    "name": image.engine.name,
                    "version": image.engine.version,
                    "commit": image.engine.commit,
                }
            ),
            "rocm": image.rocm,
            "packages": dict(image.packages) or None,
        }
    )


def _commit(data: object, where: str) -> Commit:
    o = _Obj(data, where, ("sha", "subject", "pr", "repo"))
    return Commit(
        sha=o.text("sha", COMMIT),
        subject=o.text("subject"),
        pr=o.integer("pr", optional=True),
        repo=o.text("repo", IDENT, optional=True),
    )


def _precision(data: object) -> Precision:
    o = _Obj(data, "release.precision", ("unchanged", "changed_not_relevant", "relevant"))

    relevant = []
    for i, item in enumerate(o.items("relevant")):
        r = _Obj(item, f"release.precision.relevant[{i}]", ("path", "category", "pr"))
        relevant.append(
            RelevantChange(
                r.text("path", IDENT), r.text("category", IDENT), r.integer("pr", optional=True)
            )
        )
    return Precision(o.idents("unchanged"), o.idents("changed_not_relevant"), tuple(relevant))


def _validation(data: object) -> Validation:
    o = _Obj(data, "release.validation", ("checks", "evals"))
    checks = []
    for i, item in enumerate(o.items("checks")):
        c = _Obj(item, f"release.validation.checks[{i}]", ("id", "status"))
        cid, status = c.text("id", re.compile(r"C[0-9]{1,2}")), c.text("status")
        if status not in STATUSES:
            raise ChangelogError(
                f"release.validation.checks[{i}].status must be one of {', '.join(STATUSES)}"
            )
        checks.append(CheckStatus(cid, Status(status)))
    evals = []
    for i, item in enumerate(o.items("evals")):
        e = _Obj(item, f"release.validation.evals[{i}]", ("suite", "score", "threshold", "samples"))
        evals.append(
            EvalScore(
                suite=e.text("suite", IDENT),
                score=e.number("score"),
                threshold=e.number("threshold", optional=True),
                samples=e.integer("samples", optional=True),
            )
        )
    return Validation(tuple(checks), tuple(evals))


def _point_change(data: object, where: str) -> PointChange:
    fields = ("key", "point", "metric", "old", "new", "change", "band", "verdict")
    o = _Obj(data, where, fields)
    verdict = o.text("verdict")
    if verdict not in HISTORY_VERDICTS:
        raise ChangelogError(f"{where}.verdict must be one of {HISTORY_VERDICTS}; fix release.json")
    return PointChange(
        key=o.text("key", IDENT),
        point=o.text("point"),
        metric=o.text("metric"),
        old=o.number("old", optional=True),
        new=o.number("new", optional=True),
        change=o.number("change", optional=True),
        band=o.number("band", optional=True),
        verdict=verdict,
    )


def _risk(data: object, where: str) -> Risk:
    o = _Obj(data, where, ("kind", "pr", "repo", "text", "text_zh"))
    risk = Risk(
        kind=o.text("kind"),
        pr=o.integer("pr", optional=True),
        repo=o.text("repo", IDENT, optional=True),
        text=o.text("text", optional=True),
        text_zh=o.text("text_zh", optional=True),
    )
    if risk.kind not in RISK_KINDS:
        raise ChangelogError(f"{where}.kind must be one of {RISK_KINDS}; fix release.json")
    if risk.kind == "missing-fix" and (risk.pr is None or risk.repo is None):
        raise ChangelogError(f"{where}: a missing-fix risk needs pr and repo")
    if risk.kind == "note" and (risk.text is None or risk.text_zh is None):
        # Both halves must say the same thing; free text cannot be translated by machine here.
        raise ChangelogError(f"{where}: a note risk needs text and text_zh (English and Chinese)")
    return risk
