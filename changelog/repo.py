"""The benchmark repository: which InferenceX layout a checkout has, and where everything is.

InferenceX has had three layouts (told apart by their files, never by a date):

- pre-2026-07: masters and runners in `.github/configs/`; the rest as 2026-08;
- 2026-08 (`tree/`): `configs/*-master.yaml`, `configs/runners.yaml`, `perf-changelog.yaml`,
  `utils/evals/thresholds.yaml`, `golden_al_distribution/`, `MODELS.md`, `docs/`;
- 2026-10 (`tree-2026-10/`): all of it under `inferencex-e2e/` with the Python package
  `inferencex-e2e/infx/` (thresholds in `infx/evals/`, golden AL in `infx/golden_al_distribution/`,
  the validator in `infx/workflows/`, MODELS.md and the checklist in `docs/`), runners with
  `clusters:`, and srt-slurm recipe rows (`srt-recipe`, `srt-recipe-dir`).

`detect` is the one pure decision (a predicate over repository paths in, a `Layout` out), so the
review (which reads a git commit) and the commands (which read a working tree) agree. A
`.relpipe.toml` at the checkout root (`[tool.relpipe]`: `layout = "2026-10"` and/or any `Layout`
path field) covers the next move without a relpipe release. Key -> launch files (CONFIG_FILE
recipes, `srt-recipe` rows with or without `srt-recipe-dir`, single-node launch scripts,
srt-slurm cluster hooks) are the pure functions below, shared by golden AL and the review.
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from relpipe.changelog import layout as files
from relpipe.changelog.errors import ChangelogError

OVERRIDE = ".relpipe.toml"
PROJECT_2026_10 = "inferencex-e2e"
_CONFIG_FILE = re.compile(r"CONFIG_FILE=([^\s\"':]+)(?::([^\s\"']+))?")


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Repository-relative POSIX paths of everything relpipe reads in one layout."""

    name: str
    masters: str  # folder of *-master.yaml
    runners: str
    changelog: str
    thresholds: str
    golden: str  # golden AL folder
    validator: str  # InferenceX's own validate_perf_changelog.py
    models: str  # MODELS.md
    checklist: str
    waivers: str  # folder of <PR>.md
    codeowners: tuple[str, ...]  # first existing wins
    lock: str  # relpipe's images.lock.yaml
    agents: str  # AGENTS.md
    single_recipes: str  # srt-slurm recipes of single-node keys
    multi_recipes: str  # srt-slurm recipes of multinode keys (CONFIG_FILE=recipes/X)
    project: str = ""  # the folder the launch paths (benchmarks/, runners/) are under
    # master fields this repository adds to InferenceX's schema (`[tool.relpipe] extra-fields`)
    extra_fields: tuple[str, ...] = ()

    def at(self, rel: str) -> str:
        """A path of the project (`benchmarks/...`, `runners/...`) from the checkout root."""
        return f"{self.project}/{rel}" if self.project else rel


_CODEOWNERS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
_E2E = PROJECT_2026_10
# The changelog and masters folders of each layout are the commit hook's (`changelog.layout`,
# standard library only); this module adds everything else relpipe reads.
_FOLDERS = {name: (changelog, masters) for name, changelog, masters in files.LAYOUTS}


def _where(name: str) -> tuple[str, str, str]:
    """(changelog, masters folder, runners file) of one of `changelog.layout`'s layouts."""
    changelog, masters = _FOLDERS[name]
    return (
        posixpath.join(changelog, files.CHANGELOG),
        masters,
        posixpath.join(masters, "runners.yaml"),
    )


_ROOT, _E2E_FILES, _GITHUB = _where("root"), _where("e2e"), _where("github")


_2026_08 = Layout(
    name="2026-08",
    changelog=_ROOT[0],
    masters=_ROOT[1],
    runners=_ROOT[2],
    thresholds="utils/evals/thresholds.yaml",
    golden="golden_al_distribution",
    validator="utils/validate_perf_changelog.py",
    models="MODELS.md",
    checklist="docs/PR_REVIEW_CHECKLIST.md",
    waivers="docs/waiver",
    codeowners=_CODEOWNERS,
    lock="images.lock.yaml",
    agents="AGENTS.md",
    single_recipes="benchmarks/single_node/srt-slurm-recipes",
    multi_recipes="benchmarks/multi_node/srt-slurm-recipes",
)
LAYOUTS: tuple[Layout, ...] = (
    _2026_08,
    Layout(
        name="2026-10",
        project=_E2E,
        changelog=_E2E_FILES[0],
        masters=_E2E_FILES[1],
        runners=_E2E_FILES[2],
        thresholds=f"{_E2E}/infx/evals/thresholds.yaml",
        golden=f"{_E2E}/infx/golden_al_distribution",
        validator=f"{_E2E}/infx/workflows/validate_perf_changelog.py",
        models=f"{_E2E}/docs/MODELS.md",
        checklist=f"{_E2E}/docs/PR_REVIEW_CHECKLIST.md",
        waivers=f"{_E2E}/docs/waiver",
        codeowners=(f"{_E2E}/.github/CODEOWNERS", *_CODEOWNERS),
        lock=f"{_E2E}/images.lock.yaml",
        agents="AGENTS.md",
        single_recipes=f"{_E2E}/benchmarks/single_node/srt-slurm-recipes",
        multi_recipes=f"{_E2E}/benchmarks/multi_node/srt-slurm-recipes",
    ),
    # Before 2026-07-02 the masters and runners lived under .github/; the rest as in 2026-08.
    replace(
        _2026_08,
        name="pre-2026-07",
        changelog=_GITHUB[0],
        masters=_GITHUB[1],
        runners=_GITHUB[2],
    ),
)
_BY_NAME = {layout.name: layout for layout in LAYOUTS}
_PATH_FIELDS = tuple(f.name for f in fields(Layout) if f.name not in ("name", "extra_fields"))
_LISTS = ("codeowners", "extra-fields")


def is_master(path: str, masters: str) -> bool:
    """`path` is a master config: a `*-master.yaml` directly in the `masters` folder."""
    folder, name = posixpath.split(path)
    return folder == masters and name.endswith("-master.yaml")


def detect(
    has_masters: Callable[[str], bool], override: Mapping[str, Any] | None = None, where: str = "."
) -> Layout:
    """The layout whose masters folder holds `*-master.yaml` files (`has_masters(folder)`).

    `override` is the `[tool.relpipe]` table: `layout` names one of LAYOUTS, other keys replace
    its paths. No match, or more than one, is a one-line ChangelogError naming what was looked for.
    """
    table = dict(override or {})
    name = table.pop("layout", None)
    unknown = sorted(set(table) - set(_PATH_FIELDS) - set(_LISTS))
    if unknown:
        raise ChangelogError(
            f"{where}/{OVERRIDE}: unknown [tool.relpipe] field(s) {', '.join(unknown)}; "
            f"known: layout, extra-fields, {', '.join(_PATH_FIELDS)}"
        )
    if name is not None:
        if name not in _BY_NAME:
            raise ChangelogError(
                f"{where}/{OVERRIDE}: layout {name!r} is not one of {', '.join(_BY_NAME)}"
            )
        found = [_BY_NAME[name]]
    else:
        found = [layout for layout in LAYOUTS if has_masters(layout.masters)]
        if "masters" in table:
            found = found[:1] or [LAYOUTS[0]]
    if len(found) > 1:
        names = " and ".join(f"{f.masters}/*-master.yaml" for f in found)
        raise ChangelogError(
            f"{where}: the checkout mixes layouts ({names}); remove the stale copy or name "
            f"the layout in {OVERRIDE} ([tool.relpipe] layout = ...)"
        )
    if not found:
        looked = ", ".join(f"{f.masters}/*-master.yaml" for f in LAYOUTS)
        raise ChangelogError(
            f"{where}: not an InferenceX checkout: looked for {looked}; "
            f"point --repo at the repository root or describe it in {OVERRIDE}"
        )
    values: dict[str, Any] = {}
    for key, value in table.items():
        listed = key in _LISTS
        ok = (not listed and isinstance(value, str)) or (
            listed and isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            kind = "a list of strings" if listed else "a path string"
            raise ChangelogError(f"{where}/{OVERRIDE}: [tool.relpipe] {key} must be {kind}")
        values[key.replace("-", "_")] = tuple(value) if listed else value
    return replace(found[0], **values)


def read_override(root: Path) -> dict[str, Any] | None:
    """`[tool.relpipe]` (or `[relpipe]`) of `<root>/.relpipe.toml`, None when there is none."""
    path = root / OVERRIDE
    if not path.is_file():
        return None
    try:
        doc = tomllib.loads(path.read_bytes()[: 64 * 1024].decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ChangelogError(f"{path}: not valid TOML ({exc})") from None
    table = doc.get("tool", {}).get("relpipe", doc.get("relpipe"))
    if not isinstance(table, dict):
        raise ChangelogError(f"{path}: no [tool.relpipe] table")
    return table


def _has_masters(root: Path) -> Callable[[str], bool]:
    def check(folder: str) -> bool:
        try:
            return any(n.endswith("-master.yaml") for n in os.listdir(root / folder))
        except OSError:
            return False

    return check


def find_root(start: Path) -> Path:
    """The checkout root for a directory given as --repo: `inferencex-e2e/` itself (2026-10)
    resolves to its parent, whose layout relpipe knows."""
    start = start.resolve()
    if start.name == PROJECT_2026_10 and (start / "infx").is_dir():
        return start.parent
    return start


@dataclass(frozen=True)
class Repo:
    """A benchmark repository checkout and its layout."""

    root: Path
    layout: Layout

    def path(self, rel: str) -> Path:
        return self.root / rel

    def masters(self) -> list[Path]:
        return sorted((self.root / self.layout.masters).glob("*-master.yaml"))

    def codeowners(self) -> str | None:
        return next((p for p in self.layout.codeowners if (self.root / p).is_file()), None)


def open_repo(path: str | os.PathLike[str]) -> Repo:
    """The repository at `path` (a checkout root, or 2026-10's `inferencex-e2e/`)."""
    given = Path(path)
    if not given.is_dir():
        raise ChangelogError(
            f"--repo {given} is not a directory; point it at an InferenceX checkout"
        )
    root = find_root(given)
    return Repo(root, detect(_has_masters(root), read_override(root), str(given)))


def is_checkout(path: Path) -> bool:
    """Whether `path` holds a benchmark repository of a known layout (no error either way)."""
    try:
        open_repo(path)
    except ChangelogError:
        return False
    return True


# ---------------------------------------------------------------- key -> launch files


def config_file_recipes(layout: Layout, texts: Iterable[str]) -> list[tuple[str, str | None, str]]:
    """`CONFIG_FILE=recipes/X[:selector]` settings as (repository path, selector, the text):
    `recipes/X` is srt-slurm's name for the multinode recipes folder; other paths as written."""
    out = []
    for text in texts:
        m = _CONFIG_FILE.search(text)
        if m:
            named = m.group(1)
            path = (
                f"{layout.multi_recipes}/{named[len('recipes/') :]}"
                if named.startswith("recipes/")
                else layout.at(named)
            )
            out.append((path, m.group(2), text))
    return out


def srt_recipe(layout: Layout, cfg: Mapping[str, Any], reference: str) -> tuple[str, str | None]:
    """An `srt-recipe`/`eval-srt-recipe` row as (repository path, selector): relative to
    `<recipes>/<srt-recipe-dir>/` when the key has `srt-recipe-dir` (2026-10 schema 2), else a
    project path as written (`benchmarks/single_node/srt-slurm-recipes/...`)."""
    path, sep, selector = reference.partition(":")
    folder = cfg.get("srt-recipe-dir")
    if isinstance(folder, str) and folder:
        base = layout.multi_recipes if cfg.get("multinode") is True else layout.single_recipes
        full = f"{base}/{folder}/{path}"
    else:
        full = layout.at(path)
    return posixpath.normpath(full), selector if sep else None


def outside(path: str) -> bool:
    """A repository-relative path that leaves the repository (absolute, or through `..`)."""
    norm = posixpath.normpath(path)
    return path.startswith("/") or norm == ".." or norm.startswith("../")


def script_candidates(
    layout: Layout, cfg: Mapping[str, Any], scenario: str, spec: str, hw: str
) -> list[str]:
    """The single-node launch scripts the runners try for a key, in order: `benchmarks/
    single_node/<agentic/|fixed_seq_len/><prefix>_<precision>_<hw>_<framework><_mtp>.sh`, then
    `..._<hw><_trt><_mtp>.sh` (runners/launch_mi355x-amds.sh, launch_b200-dgxc.sh)."""
    prefix, precision = str(cfg.get("model-prefix", "")), str(cfg.get("precision", ""))
    framework = str(cfg.get("framework", ""))
    subdir = "agentic/" if scenario == "agentic-coding" else "fixed_seq_len/"
    mtp = "_mtp" if spec == "mtp" else ""
    base = layout.at(f"benchmarks/single_node/{subdir}{prefix}_{precision}_{hw}")
    trt = "_trt" if framework == "trt" else ""
    return list(dict.fromkeys([f"{base}_{framework}{mtp}.sh", f"{base}{trt}{mtp}.sh"]))


def runner_hardware(runner: str) -> str:
    """The hardware a runner label names (`cluster:mi355x-amds` -> mi355x)."""
    return runner.removeprefix("cluster:").split("-")[0].split("_")[0]


def cluster_hook(layout: Layout, runner: str) -> str | None:
    """The srt-slurm setup hook of a `cluster:` runner (2026-10)."""
    if not runner.startswith("cluster:"):
        return None
    return layout.at(f"runners/srt-slurm/hooks/{runner.removeprefix('cluster:')}/setup.sh")


def agentic_client(layout: Layout) -> str:
    """The srt-slurm agentic benchmark client (2026-10's AgentX wrapper)."""
    return layout.at("benchmarks/srt_agentic.sh")


def check_key(repo: Repo, master: Path, key: str, cfg: Mapping[str, Any], lines: list[str]) -> None:
    """Refuse a key relpipe cannot read faithfully, in one line naming the file and line: a
    master field no known schema has, or an `srt-recipe` row that leaves the repository or
    names a missing file (2026-10's validator rejects both too)."""
    from relpipe.changelog.configs.schema import line_of, line_with, unknown_fields

    rel = master.relative_to(repo.root).as_posix() if master.is_absolute() else str(master)
    start = line_of(lines, 1, key)
    for place, name in unknown_fields(key, cfg):
        if name not in repo.layout.extra_fields:
            raise ChangelogError(
                f"{rel}:{line_of(lines, start, name)}: unknown master field {name!r}"
                f"{f' in {place}' if place else ''} of {key}; relpipe does not know what it "
                "means (run `relpipe doctor`, or list it in .relpipe.toml [tool.relpipe] "
                "extra-fields)"
            )
    for ref in _srt_refs(cfg):
        path, _ = srt_recipe(repo.layout, cfg, ref)
        where = f"{rel}:{line_with(lines, start, ref)}"
        if outside(path):
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key} leaves the repository")
        full = repo.root / path
        if not full.resolve().is_relative_to(repo.root.resolve()):
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key} links out of the repository")
        if not full.is_file():
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key}: {path} does not exist")


def _srt_refs(cfg: Mapping[str, Any]) -> list[str]:
    scenarios = cfg.get("scenarios")
    out = []
    for arms in scenarios.values() if isinstance(scenarios, Mapping) else []:
        for arm in arms if isinstance(arms, list) else []:
            space = arm.get("search-space") if isinstance(arm, Mapping) else None
            for item in space if isinstance(space, list) else []:
                for name in ("srt-recipe", "eval-srt-recipe"):
                    ref = item.get(name) if isinstance(item, Mapping) else None
                    if isinstance(ref, str) and ref:
                        out.append(ref.partition(":")[0])
    return list(dict.fromkeys(out))
