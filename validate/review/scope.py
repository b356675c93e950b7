"""Which files a config key runs: its master-config block, launch scripts, runners and recipes.

Resolution follows InferenceX, with evidence for each step:
- runner: `configs/runners.yaml` `labels[<runner>]` lists nodes; the workflow runs
  `runners/launch_${RUNNER_NAME%%_*}.sh` for a node (`.github/workflows/benchmark-tmpl.yml`).
- single-node script: the launchers try `benchmarks/single_node/<subdir><prefix>_<precision>_<hw>
  _<framework><_mtp>.sh`, then `<prefix>_<precision>_<hw><_trt><_mtp>.sh` (`_trt` for trt only),
  where subdir is `agentic/` for agentic-coding and `fixed_seq_len/` otherwise and `_mtp` marks
  `spec-decoding: mtp` (e.g. runners/launch_mi355x-amds.sh, launch_b200-dgxc.sh).
- multi-node: `CONFIG_FILE=recipes/X[:selector]` in additional-settings is
  `benchmarks/multi_node/srt-slurm-recipes/X` (see recipe.py), its `setup_script:` is
  `srt-slurm-recipes/configs/<name>`; a disagg wrapper `benchmarks/multi_node/<prefix>_<precision>_
  <hw>_<framework>.sh` when present.
- helpers: `source`/`.`/`bash` of a repository `.sh` from a script, followed MAX_HOPS deep.
- 2026-10 (`changelog.repository`): `srt-recipe`/`eval-srt-recipe` rows (under `srt-recipe-dir` when
  the key has one), the cluster's srt-slurm hook `runners/srt-slurm/hooks/<cluster>/setup.sh`
  (a `clusters:` entry of the runners file) and, for agentic rows, `benchmarks/srt_agentic.sh`.
Every path comes from the source's era (`changelog.repository`), so every era resolves the same way.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from ...changelog.configs.load import load_yaml, resolve_key
from ...changelog.configs.schema import line_of, scenarios_of, unknown_fields
from ...changelog.errors import ChangelogError
from ...changelog.repository import launch as keyfiles
from ...changelog.repository.era import Era
from ...core.check import Evidence
from ..errors import ValidateError
from . import shell
from .recipe import Recipe, RecipeError, effective, located
from .rx import rx
from .source import Source

MAX_HOPS = 4
_TOP_KEY = re2.compile(r"""^(?:"([^"]+)"|'([^']+)'|([^\s#'"][^:]*?))\s*:\s*(?:#.*)?$""")
_SOURCED = re2.compile(r"(?:^|[;&|(]\s*|\$\(\s*)(?:source|\.|bash|sh)\s+(.*)$")
_CD = re2.compile(r"^cd\s+[\"']?([^\"'\s|;&)]+)")
_SH_WORD = re2.compile(r"""["']?([^\s"';|&]*\.sh)\b""")
_DIR_PREFIXES = (
    '$(dirname "$0")/',
    "$(dirname $0)/",
    '$(dirname "${BASH_SOURCE[0]}")/',
    "$SCRIPT_DIR/",
    "${SCRIPT_DIR}/",
)
_ROOT_PREFIXES = (
    "$INFERENCEX_ROOT/",
    "${INFERENCEX_ROOT}/",
    "$GITHUB_WORKSPACE/",
    "${GITHUB_WORKSPACE}/",
    "$INFMAX_CONTAINER_WORKSPACE/",
    "/workspace/",
    "./",
)


@dataclass(frozen=True)
class FileUse:
    """A file a key runs, its role and the evidence of why (the line that names it)."""

    path: str
    role: str  # script | helper | runner | recipe | master
    via: Evidence


@dataclass(frozen=True, kw_only=True)
class KeyScope:
    key: str
    master: str
    line: int  # first line of the key's block
    end: int  # last line of the block
    config: Mapping[str, Any]
    files: tuple[FileUse, ...]
    recipes: tuple[Recipe, ...]
    unresolved: tuple[Evidence, ...] = ()  # a script or recipe named but not found / not readable

    @property
    def framework(self) -> str:
        return str(self.config.get("framework", ""))

    @property
    def agentic(self) -> bool:
        return "agentic-coding" in (scenarios_of(self.config) or {})

    def spec_decoding(self) -> set[str]:
        return {str(v) for v in _values_of(self.config, "spec-decoding")} - {"none"}


@dataclass(kw_only=True)
class Masters:
    """Master configs of the repository: configs, and each key's file and line range."""

    configs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    where: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)
    # A key in two master files (InferenceX's load_config_files refuses the merge): the first
    # definition is kept for scoping; (key, (file, line) of the first, (file, line) of the other).
    across: list[tuple[str, tuple[str, int], tuple[str, int]]] = field(default_factory=list)
    # Fields no schema relpipe knows (the repository's own rules are the authority on its
    # schema): a WARN of the `master-fields` check at file:line, never a stop.
    unknown: list[Evidence] = field(default_factory=list)


def _values_of(node: Any, name: str) -> Iterable[Any]:
    if isinstance(node, Mapping):
        for k, v in node.items():
            if k == name and not isinstance(v, Mapping | list):
                yield v
            else:
                yield from _values_of(v, name)
    elif isinstance(node, list):
        for item in node:
            yield from _values_of(item, name)


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, Mapping):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def master_paths(source: Source) -> list[str]:
    folder = source.era.masters
    return [p for p in source.files(folder) if source.era.is_master(p)]


_PARSED: dict[tuple[str, str], Any] = {}  # (path, sha256 of text) -> parsed master, per process


def _parsed_master(text: str, path: str) -> Any:
    """A master file parsed strictly, once per content per process (a 376 KB file takes ~0.5 s;
    the checks never modify the result)."""

    key = (path, hashlib.sha256(text.encode()).hexdigest())
    if key not in _PARSED:
        try:
            doc = load_yaml(text, path)
        except ChangelogError as exc:
            raise ValidateError(str(exc)) from None
        if len(_PARSED) >= 8:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = doc
    return _PARSED[key]


def load_masters(source: Source) -> Masters:
    """Every `configs/*-master.yaml` (not deprecated/), strictly; a key in two files is recorded
    in `across` (the `yaml-keys` check FAILs it) and its first definition kept."""
    masters = Masters()
    paths = master_paths(source)
    source.prefetch(paths)
    for path in paths:
        text = source.text(path)
        if text is None:
            continue
        doc = _parsed_master(text, path)
        if not isinstance(doc, dict):
            raise ValidateError(f"{path}: not a mapping of config keys; check the file")
        lines = text.splitlines()
        masters.lines[path] = lines
        starts = []
        for i, line in enumerate(lines):
            m = _TOP_KEY.match(line)
            if m:
                starts.append((m.group(1) or m.group(2) or m.group(3), i + 1))
        bounds = {
            k: (s, (starts[j + 1][1] - 1) if j + 1 < len(starts) else len(lines))
            for j, (k, s) in enumerate(starts)
        }
        for key, cfg in doc.items():
            key = str(key)
            start, end = bounds.get(key, (1, len(lines)))
            if key in masters.configs:
                first = masters.where[key]
                masters.across.append((key, (first[0], first[1]), (path, start)))
                continue
            masters.unknown += _unknown_fields(source.era, path, lines, key, start, cfg)
            masters.configs[key] = cfg if isinstance(cfg, Mapping) else {}
            masters.where[key] = (path, start, end)
    return masters


def block_of(lines: list[str], key: str) -> tuple[int, int] | None:
    """The 1-based (first, last) lines of a top-level key's block in a master's lines."""
    starts = []
    for i, line in enumerate(lines):
        m = _TOP_KEY.match(line)
        if m:
            starts.append((m.group(1) or m.group(2) or m.group(3), i + 1))
    for j, (name, start) in enumerate(starts):
        if name == key:
            return start, (starts[j + 1][1] - 1) if j + 1 < len(starts) else len(lines)
    return None


def _unknown_fields(
    era: Era, path: str, lines: list[str], key: str, start: int, cfg: Any
) -> list[Evidence]:
    """Fields of a key that neither relpipe's schema nor the era's (`Era.master_fields`) nor
    the override's `extra-fields` has, at file:line."""
    if not isinstance(cfg, Mapping):
        return []
    extra = set(era.extra_fields) | era.master_fields
    return [
        Evidence.at(
            path,
            line_of(lines, start, name),
            f"unknown master field `{name}` in {f'{place} of ' if place else ''}{key}",
        )
        for place, name in unknown_fields(key, cfg)
        if name not in extra
    ]


def select_keys(masters: Masters, patterns: Sequence[str]) -> list[str]:
    """Config keys named by `patterns` (`*` globs, as the changelog's config-keys)."""
    keys: list[str] = []
    for pattern in patterns:
        try:
            keys += resolve_key(pattern, list(masters.configs))
        except ChangelogError as exc:
            raise ValidateError(str(exc)) from None
    return list(dict.fromkeys(keys))


def _runner_labels(source: Source) -> dict[str, list[tuple[str, int]]]:
    """`labels:` of the runners file as label -> [(node, line)] and 2026-10's `clusters:` as
    `cluster:<name>` -> [(name, line)], from a line scan."""
    runners = source.era.runners
    memo = source.memo.get(("labels", runners))
    if isinstance(memo, dict):
        return memo
    labels: dict[str, list[tuple[str, int]]] = {}
    current: list[tuple[str, int]] | None = None
    section = ""
    for i, line in enumerate(source.lines(runners)):
        if line and not line.startswith((" ", "#")):
            section = line.split(":")[0]
            current = None
        elif section == "labels" and rx(r"^  \S").match(line):
            current = labels.setdefault(line.strip().rstrip(":").strip("'\""), [])
        elif section == "clusters" and rx(r"^  [^\s#]").match(line):
            name = line.strip().rstrip(":").strip("'\"")
            labels[f"cluster:{name}"] = [(name, i + 1)]
            current = None
        elif current is not None and line.strip().startswith("- "):
            current.append((line.strip()[2:].strip().strip("'\""), i + 1))
    source.memo[("labels", runners)] = labels
    return labels


def lines_of(source: Source, path: str) -> list[shell.Line]:
    """A script's logical lines, parsed once per run."""
    memo = source.memo.get(("shell", path))
    if memo is None:
        memo = shell.logical_lines(source.text(path) or "")
        source.memo[("shell", path)] = memo
    return memo  # type: ignore[return-value]


def _line_of(masters: Masters, key: str, needle: str) -> int:
    path, start, end = masters.where[key]
    lines = masters.lines.get(path, [])
    for n in range(start, min(end, len(lines)) + 1):
        if needle in lines[n - 1]:
            return n
    return start


def _edges(source: Source, path: str) -> list[FileUse]:
    """Repository scripts that `path` sources or runs directly (computed once per file)."""
    memo = source.memo.get(("edges", path))
    if memo is not None:
        return memo  # type: ignore[return-value]
    here = posixpath.dirname(path)
    cwd: str | None = None  # after `cd <repository folder>`, `./x.sh` is relative to it
    edges: list[FileUse] = []
    for line in lines_of(source, path):
        if line.heredoc:
            continue
        cd = _CD.match(line.text)
        if cd:
            word = cd.group(1)
            for prefix in _DIR_PREFIXES:
                word = word.replace(prefix, "@DIR@/")
            cwd = _resolve_script(word, here, source.era)
        m = _SOURCED.search(line.text)
        if not m:
            continue
        arg = m.group(1)
        for prefix in _DIR_PREFIXES:
            arg = arg.replace(prefix, "@DIR@/")
        for word in _SH_WORD.findall(arg)[:1]:
            if cwd and word.startswith("./"):
                word = "@DIR@/" + posixpath.relpath(posixpath.join(cwd, word[2:]), here)
            target = _resolve_script(word, here, source.era)
            if target and target != path and source.exists(target):
                via = Evidence.at(path, line.number, line.text[:160])
                edges.append(FileUse(target, "helper", via))
    source.memo[("edges", path)] = edges
    return edges


def _follow(source: Source, path: str, found: dict[str, FileUse], hops: int) -> None:
    """Add the repository scripts that `path` sources or runs (bounded depth)."""
    if hops <= 0:
        return
    for use in _edges(source, path):
        if use.path not in found:
            found[use.path] = use
            _follow(source, use.path, found, hops - 1)


def followable(word: str) -> bool:
    """Whether a sourced script's path is one `_resolve_script` follows (relative to the script,
    to its folder by `dirname`, or to the repository root), not a variable's value or an absolute
    path nothing reads: those are "not read" (a WARN) in the launch-path checks (issue 34.9)."""
    for prefix in _DIR_PREFIXES:
        word = word.replace(prefix, "@DIR@/")
    if word.startswith("@DIR@/") or word.startswith(_ROOT_PREFIXES):
        return True
    return "$" not in word and not word.startswith("/")


def _resolve_script(word: str, here: str, era: Era) -> str | None:
    if word.startswith("@DIR@/"):
        return _inside(posixpath.join(here, word[len("@DIR@/") :]))
    for prefix in _ROOT_PREFIXES:
        if word.startswith(prefix):
            return _inside(word[len(prefix) :])
    if "$" in word or word.startswith("/"):
        return None
    named = keyfiles.project_script(era, word)
    if named is not None:
        return _inside(named)
    return _inside(posixpath.join(here, word))


def _inside(path: str) -> str | None:
    norm = posixpath.normpath(path)
    return None if norm.startswith(("../", "/")) or norm == ".." else norm


@dataclass(kw_only=True)
class _Scope:
    """A key's resolution in progress (the files found so far and what could not be)."""

    source: Source
    masters: Masters
    key: str
    files: dict[str, FileUse] = field(default_factory=dict)
    unresolved: list[Evidence] = field(default_factory=list)
    recipes: list[Recipe] = field(default_factory=list)

    @property
    def era(self) -> Era:
        return self.source.era

    def add(self, path: str, role: str, via: Evidence) -> None:
        if path not in self.files and self.source.exists(path):
            self.files[path] = FileUse(path, role, via)


def scope_key(source: Source, masters: Masters, key: str) -> KeyScope:
    """Resolve one key's files (see the module docstring)."""
    cfg = masters.configs[key]
    master, start, end = masters.where[key]
    work = _Scope(source=source, masters=masters, key=key)
    hws = _runners(work, cfg)
    rows = _srt_rows(work, cfg)
    _scripts(work, cfg, hws, srt=bool(rows))
    texts = list(_strings(scenarios_of(cfg) or {}))
    for path, selector, text in keyfiles.config_file_recipes(source.era, texts):
        _recipe(work, path, selector, Evidence.at(master, _line_of(masters, key, text), text))
    for path, selector, via in rows:
        _recipe(work, path, selector, via)
    hooks = keyfiles.cluster_hooks(source.era)
    for use in [f for f in work.files.values() if f.role == "script" or f.path.startswith(hooks)]:
        _follow(source, use.path, work.files, MAX_HOPS)
    return KeyScope(
        key=key,
        master=master,
        line=start,
        end=end,
        config=cfg,
        files=tuple(work.files.values()),
        recipes=tuple(work.recipes),
        unresolved=tuple(work.unresolved),
    )


def _runners(work: _Scope, cfg: Mapping[str, Any]) -> list[str]:
    """The runner's launchers (or a `cluster:` runner's srt-slurm hook); its hardware names."""
    master = work.masters.where[work.key][0]
    runner, era = str(cfg.get("runner", "")), work.era
    runner_line = _line_of(work.masters, work.key, "runner:")
    hws: list[str] = []
    nodes = _runner_labels(work.source).get(runner)
    if runner.startswith("cluster:") and nodes:
        hws.append(keyfiles.runner_hardware(runner))
        hook = keyfiles.cluster_hook(era, runner)
        if hook:
            work.add(hook, "runner", Evidence.at(era.runners, nodes[0][1], runner))
        return hws
    if nodes is None:
        # Not a label of runners.yaml: GitHub matches it against the runner names' own prefix
        # (`gb300-nv` runs on `gb300-nv_0`), so the launcher is the one named after it.
        label = runner.removeprefix("cluster:")
        prefix = keyfiles.runner_launchers(era, label)
        nodes = [
            (posixpath.basename(p).removeprefix("launch_").removesuffix(".sh"), 0)
            for p in work.source.files(era.runner_scripts, (".sh",))
            if p.startswith(prefix)
        ]
    for node, line in nodes:
        launcher = keyfiles.runner_launcher(era, node)
        hw = node.split("_")[0].split("-")[0]
        if hw not in hws:
            hws.append(hw)
        via = (
            Evidence.at(era.runners, line, node)
            if line
            else Evidence.at(master, runner_line, f"runner {runner} -> {launcher}")
        )
        work.add(launcher, "runner", via)
    if not hws and runner:
        hws.append(keyfiles.runner_hardware(runner))
        work.unresolved.append(
            Evidence.at(master, runner_line, f"runner {runner} is not in {era.runners}")
        )
    return hws


def _scripts(work: _Scope, cfg: Mapping[str, Any], hws: list[str], *, srt: bool) -> None:
    """Single-node launch scripts (keys without srt-slurm rows) and multinode wrappers."""
    master, start, _ = work.masters.where[work.key]
    scenarios = scenarios_of(cfg) or {}
    multinode = bool(cfg.get("multinode"))
    for scenario, arms in scenarios.items() if isinstance(scenarios, Mapping) else []:
        specs = {
            str(item.get("spec-decoding", "none")) if isinstance(item, Mapping) else "none"
            for item in _items(arms)
        } or {"none"}
        for spec in sorted(specs) if not (multinode or srt) else []:
            for hw in hws:
                candidates = keyfiles.script_candidates(work.era, cfg, scenario, spec, hw)
                chosen = next((c for c in candidates if work.source.exists(c)), None)
                what = f"{scenario} spec-decoding={spec} on {hw}: {' or '.join(candidates)}"
                if chosen is None:
                    work.unresolved.append(Evidence.at(master, start, f"no launch script: {what}"))
                else:
                    work.add(chosen, "script", Evidence.at(master, start, what))
    if multinode:
        # runners/launch_mi355x-amds.sh: `benchmarks/multi_node[/agentic]/<prefix>_<precision>_
        # <hw>_<framework>.sh` (the agentic recipe lives under multi_node/agentic/).
        for hw in hws:
            for scenario in scenarios:
                wrapper = keyfiles.multinode_wrapper(work.era, cfg, scenario, hw)
                work.add(wrapper, "script", Evidence.at(master, start, wrapper))
    if srt and "agentic-coding" in scenarios:
        client = keyfiles.agentic_client(work.era)
        work.add(client, "helper", Evidence.at(master, start, f"srt-slurm agentic client {client}"))


def _srt_rows(work: _Scope, cfg: Mapping[str, Any]) -> list[tuple[str, str | None, Evidence]]:
    """`srt-recipe` / `eval-srt-recipe` rows as (repository path, selector, evidence)."""
    master = work.masters.where[work.key][0]
    out = []
    scenarios = scenarios_of(cfg) or {}
    for arms in scenarios.values() if isinstance(scenarios, Mapping) else []:
        for item in _items(arms):
            for name in ("srt-recipe", "eval-srt-recipe"):
                ref = item.get(name) if isinstance(item, Mapping) else None
                if not isinstance(ref, str) or not ref:
                    continue
                path, selector = keyfiles.srt_recipe(work.era, cfg, ref)
                via = Evidence.at(master, _line_of(work.masters, work.key, ref), f"{name}: {ref}")
                out.append((path, selector, via))
    return list({(p, s): (p, s, v) for p, s, v in out}.values())


def _recipe(work: _Scope, path: str, selector: str | None, via: Evidence) -> None:
    """Read one recipe (its selected block, inherited settings included) and its setup script."""
    source = work.source
    body = None if keyfiles.outside(path) else source.text(path)
    if body is None:
        why = source.problems.get(path)
        reason = (
            "points outside the repository"
            if keyfiles.outside(path)
            else why.reason
            if why
            else "not found"
        )
        work.unresolved.append(Evidence(via.where, f"recipe {path}: {reason}"))
        return
    work.files.setdefault(path, FileUse(path, "recipe", via))
    try:
        tree = source.memo.get(("recipe", path))
        if tree is None:
            tree = located(body, path)
            source.memo[("recipe", path)] = tree
        recipe = effective(tree, path, selector)  # type: ignore[arg-type]
    except RecipeError as exc:
        work.unresolved.append(Evidence(via.where, str(exc)))
        return
    if recipe not in work.recipes:
        work.recipes.append(recipe)
    for leaf in recipe.leaves:
        if leaf.path.endswith("setup_script") and rx(r"[\w.-]+\.sh").fullmatch(leaf.value):
            setup = keyfiles.recipe_setup_script(work.era, leaf.value)
            work.add(setup, "helper", Evidence.at(path, leaf.line, leaf.value))


def _items(arms: Any) -> list[Any]:
    out = []
    for arm in arms if isinstance(arms, list) else []:
        if isinstance(arm, Mapping):
            out += list(arm.get("search-space") or [])
    return out


def scope_keys(source: Source, masters: Masters, keys: Sequence[str]) -> list[KeyScope]:
    return [scope_key(source, masters, key) for key in keys]
