"""Precision rules: the format (`atom_rules.yaml`, `aiter_rules.yaml`, a user's `--rules` file),
its strict parser, and the lint that checks a rule set against an engine tree (stale globs,
uncovered files). docs/precision.md describes the format.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import engines, jsonload
from ...core.files import write_atomic
from ...core.yamlload import load_yaml
from ..errors import ValidateError
from . import gitio, globs, regexlit

HERE = Path(__file__).parent
DEFAULT_RULES = "atom"
_MAX_RULES_BYTES = 1 << 20
_RULE_KEYS = {"category", "paths", "content", "why", "scope", "over"}
_CATEGORY_KEYS = {"precision", "why"}
_WATCH_KEYS = {"path", "label", "content", "gate"}
_TOP_KEYS = {"schema", "name", "project", "categories", "never", "rules", "watch", "upstream"}
_UPSTREAM_KINDS = ("must-contain", "must-not-contain")
_PR_REF = re.compile(r"(?:[\w.-]+/[\w.-]+)?#?(\d{1,7})")
_SHA_REF = re.compile(r"[0-9a-f]{7,64}")


# --- rules ------------------------------------------------------------------------------------


def glob_regex(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex for path globs (`validate.globs`): `*` within a segment, `**` across segments,
    `?` one character; a pattern without `/` matches the file name at any depth."""
    return globs.compile_globs(patterns)


@dataclass(frozen=True)
class Category:
    """What a category means: whether its files can move numerics, and in one line why (not)."""

    name: str
    precision: bool
    why: str


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One ordered rule: a category for paths, optionally gated on changed-line content."""

    category: str
    paths: tuple[str, ...]
    content: tuple[str, ...]
    why: str
    scope: tuple[str, ...]
    content_re: re.Pattern[str] | None = field(compare=False, repr=False)
    # False for a not-precision category (docs, tests, CI ...): it names the file, never fires.
    precision: bool = True
    over: tuple[str, ...] = ()  # categories this rule wins over where both match ("*": all)
    index: int = 0  # position in the file, for messages

    @functools.cached_property
    def path_re(self) -> re.Pattern[str]:
        """Compiled when first needed: `Rules.matching` tries a rule only on paths that start
        with a literal prefix of its globs, so a diff compiles only the rules of files it
        touched (compiling all of ATOM's took ~10 ms of every `relpipe diff`). The globs were
        checked when the rules were read (`globs.problem`)."""
        return glob_regex(self.paths)

    @property
    def label(self) -> str:
        return f"rules[{self.index}] ({self.category})"


@dataclass(frozen=True, kw_only=True)
class WatchSpec:
    """A file (glob) whose unchanged state is evidence; `content` limits it to some lines."""

    label: str
    path: str
    content: tuple[str, ...]
    path_re: re.Pattern[str] = field(compare=False, repr=False)
    content_re: re.Pattern[str] | None = field(compare=False, repr=False)

    @property
    def lookup(self) -> str | None:
        """The one tree entry whose existence proves the watch is not stale (`dir` for `dir/**`,
        the path itself), or None when only a listing of the tree can tell (real globs)."""
        path = self.path.strip("/").removesuffix("/**")
        if "/" not in self.path.strip("/") or any(ch in path for ch in "*?["):
            return None
        return path


@dataclass(frozen=True)
class UpstreamSpec:
    """A commit (sha prefix) or PR (`#N`) that NEW must contain, or must not contain."""

    kind: str
    ref: str
    why: str


@dataclass(frozen=True, kw_only=True)
class Rules:
    name: str
    project: str | None  # "owner/repo" on GitHub, for PR links
    never: tuple[str, ...]
    rules: tuple[Rule, ...]
    watch: tuple[WatchSpec, ...]
    upstream: tuple[UpstreamSpec, ...]
    source: str
    never_re: re.Pattern[str] = field(compare=False, repr=False)
    categories: tuple[Category, ...] = ()  # declared categories (empty: every rule's is precision)

    @functools.cached_property
    def gates(self) -> Callable[[Sequence[str]], list[str]] | None:
        """A filter of changed lines that drops only lines no content regex of the rules or the
        watch list can match (None when there are none): a change none of whose lines passes
        cannot fire a gate. It looks for the regexes' required literals (`regexlit`) when every
        regex has some, else runs the regexes themselves."""
        patterns = {
            p.pattern: p
            for p in (*(r.content_re for r in self.rules), *(w.content_re for w in self.watch))
            if p is not None
        }
        if not patterns:
            return None
        fast = regexlit.prefilter(patterns.values())
        if fast is not None:
            return fast
        search = re.compile("|".join(f"(?:{p})" for p in patterns)).search
        return lambda lines: [line for line in lines if search(line)]

    def matching(self, path: str) -> tuple[Rule, ...]:
        """The rules whose paths match `path`, in order (none for a `never` path). Remembered
        per path: a release span asks about hundreds of paths, several times each, and a rule
        is tried only when a literal prefix of one of its globs starts the path."""
        found = self._matching.get(path)
        if found is None:
            found = ()
            if not self.never_re.match(path):
                found = tuple(
                    rule
                    for rule, prefixes in zip(self.rules, self._prefixes, strict=True)
                    if path.startswith(prefixes) and rule.path_re.match(path)
                )
            self._matching[path] = found
        return found

    def watched(self, path: str) -> bool:
        """Whether a watch entry names `path` (remembered per path)."""
        found = self._watched.get(path)
        if found is None:
            found = self._watched[path] = any(w.path_re.match(path) for w in self.watch)
        return found

    @functools.cached_property
    def _prefixes(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(globs.literal_prefix(p) for p in rule.paths) for rule in self.rules)

    @functools.cached_property
    def _matching(self) -> dict[str, tuple[Rule, ...]]:
        return {}

    @functools.cached_property
    def _watched(self) -> dict[str, bool]:
        return {}

    def category_of(self, path: str) -> str | None:
        """The category the rules give `path` by its path alone: the first path rule that
        matches, else (a mixed file only content gates name, such as a model runner) the first
        content-gated one; None when a `never` glob or no rule matches. Gates are not read."""
        if self.never_re.match(path):
            return None
        matched = [r for r in self.rules if r.path_re.match(path)]
        plain = (r for r in matched if r.content_re is None)
        return next((r.category for r in plain), matched[0].category if matched else None)

    def category(self, name: str) -> Category | None:
        return next((c for c in self.categories if c.name == name), None)

    def pr_label(self, number: int) -> str:
        return f"{self.project}#{number}" if self.project else f"#{number}"

    def pr_url(self, number: int) -> str | None:
        return f"https://github.com/{self.project}/pull/{number}" if self.project else None


def _fail(source: str, what: str) -> ValidateError:
    return ValidateError(f"{source}: {what}; see docs/precision.md for the rules format")


def _strings(source: str, where: str, value: Any, *, required: bool = False) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or (required and not value)
        or not all(isinstance(v, str) and v and "\n" not in v for v in value)
    ):
        raise _fail(source, f"{where} must be a non-empty string or list of one-line strings")
    return tuple(value)


def _regex(source: str, where: str, patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    # Leading global flags like `(?i)` become scoped groups so that the patterns can be joined.
    scoped = [re.sub(r"^\(\?([aiLmsux]+)\)(.*)\Z", r"(?\1:\2)", p, flags=re.S) for p in patterns]
    try:
        return re.compile("|".join(f"(?:{p})" for p in scoped))
    except re.error as exc:
        raise _fail(source, f"{where}: bad regular expression ({exc})") from None


def _mapping(source: str, where: str, value: Any, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(source, f"{where} must be a mapping")
    unknown = set(map(str, value)) - keys
    if unknown:
        raise _fail(source, f"{where}: unknown key {sorted(unknown)[0]!r}")
    return value


def _categories(source: str, value: Any) -> tuple[Category, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise _fail(source, "categories must be a non-empty mapping of name -> {precision, why}")
    out = []
    for name, raw in value.items():
        where = f"categories.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]{0,40}", name):
            raise _fail(source, f"{where}: a category is a lowercase-dashed name")
        item = _mapping(source, where, raw, _CATEGORY_KEYS)
        if not isinstance(item.get("precision"), bool):
            raise _fail(source, f"{where}.precision must be true or false")
        why = _strings(source, f"{where}.why", item.get("why"), required=True)[0]
        out.append(Category(name, item["precision"], why))
    return tuple(out)


def _check_globs(source: str, where: str, patterns: Sequence[str]) -> None:
    for pattern in patterns:
        issue = globs.problem(pattern)
        if issue:
            raise _fail(source, f"{where}: invalid glob {pattern!r}: {issue}")


def _check_overlaps(source: str, rules: Sequence[Rule]) -> None:
    """Path rules (no content gate) of different categories must not claim the same file unless
    the earlier one says it wins (`over`). Content-gated rules refine a file's category, so they
    may overlap anything (first one that fires wins)."""
    plain = [r for r in rules if r.content_re is None]
    for i, first in enumerate(plain):
        for second in plain[i + 1 :]:
            if first.category == second.category or (
                "*" in first.over or second.category in first.over
            ):
                continue
            hit = next(
                ((a, b) for a in first.paths for b in second.paths if globs.overlap(a, b)),
                None,
            )
            if hit is None:
                continue
            if "*" in second.over or first.category in second.over:
                raise _fail(
                    source,
                    f"{second.label} says it wins over {first.category} but is listed after "
                    f"{first.label}; move it up",
                )
            raise _fail(
                source,
                f"{first.label} and {second.label} overlap ({hit[0]!r} and {hit[1]!r} can match "
                f"the same file); narrow one, or add `over: [{second.category}]` to the first",
            )


def parse_rules(text: str, source: str, *, check_overlap: bool = True) -> Rules:
    """Validate a rules document (YAML text) into `Rules`; one-line errors name the source.

    `check_overlap` can be turned off for the built-in sets, which a test checks once (the
    exact overlap search is the one part of loading whose cost grows with the square of the
    number of globs)."""
    return _rules_from(_document(text, source), source, check_overlap=check_overlap)


def _document(text: str, source: str) -> Any:
    if len(text) > _MAX_RULES_BYTES or "\0" in text:
        raise _fail(source, "file too large or contains NUL bytes")
    try:
        return load_yaml(text, source, error=ValidateError)
    except ValidateError as exc:  # its message starts with `source`
        raise ValidateError(f"{exc}; see docs/precision.md for the rules format") from None


def _builtin_document(file: Path, text: str) -> Any:
    """A built-in rules file's document, cached as JSON beside the text it was read from:
    importing and running PyYAML costs a `relpipe diff` process more than a nightly's whole
    diff. The cache is used only when its text is this file's (compared whole: no hash to
    compute, no hashlib to import), and the document is validated as usual."""
    cached = gitio.cache_root().parent / "rules" / f"{file.stem}.json"
    try:
        entry = jsonload.loads(cached.read_bytes())
        if isinstance(entry, dict) and entry.get("text") == text:
            return entry.get("document")
    except (OSError, ValueError):
        pass
    data = _document(text, str(file))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, json.dumps({"text": text, "document": data}))
    except OSError:
        pass  # a read-only home: parse again next time
    return data


def _rules_from(data: Any, source: str, *, check_overlap: bool) -> Rules:
    top = _mapping(source, "the document", data, _TOP_KEYS)
    if top.get("schema", 1) != 1:
        raise _fail(source, f"unsupported schema {top.get('schema')!r} (this relpipe reads 1)")
    categories = _categories(source, top.get("categories"))
    known = {c.name: c for c in categories}
    rules = [_rule(source, index, raw, known) for index, raw in enumerate(top.get("rules") or [])]
    if not rules:
        raise _fail(source, "no rules: a rules file must classify something")
    if check_overlap:
        _check_overlaps(source, rules)
    gates = {r.category: r.content for r in rules if r.content}
    watch = [
        _watch_spec(source, index, raw, gates) for index, raw in enumerate(top.get("watch") or [])
    ]
    upstream = [
        parse_upstream(kind, ref, why, source) for kind, ref, why in _upstream_items(source, top)
    ]
    never = _strings(source, "never", top.get("never"))
    _check_globs(source, "never", never)
    project = top.get("project")
    if project is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", str(project)):
        raise _fail(source, f"project must be OWNER/REPO, not {project!r}")
    return Rules(
        name=str(top.get("name") or Path(source).stem),
        project=project,
        never=never,
        rules=tuple(rules),
        watch=tuple(watch),
        upstream=tuple(upstream),
        source=source,
        never_re=glob_regex(never),
        categories=categories,
    )


def _rule(source: str, index: int, raw: Any, known: dict[str, Category]) -> Rule:
    """rules[index] of the file."""
    where = f"rules[{index}]"
    item = _mapping(source, where, raw, _RULE_KEYS)
    category = _strings(source, f"{where}.category", item.get("category"), required=True)[0]
    where = f"rules[{index}] ({category})"
    if known and category not in known:
        raise _fail(source, f"{where}: unknown category {category!r}; declare it in categories")
    paths = _strings(source, f"{where}.paths", item.get("paths"), required=True)
    _check_globs(source, f"{where}.paths", paths)
    content = _strings(source, f"{where}.content", item.get("content"))
    over = _strings(source, f"{where}.over", item.get("over"))
    unknown = [c for c in over if c != "*" and known and c not in known]
    if unknown:
        raise _fail(source, f"{where}.over: unknown category {unknown[0]!r}")
    return Rule(
        category=category,
        paths=paths,
        content=content,
        why=str(item.get("why") or (known[category].why if known else "")),
        scope=_strings(source, f"{where}.scope", item.get("scope")),
        content_re=_regex(source, f"{where}.content", content),
        precision=known[category].precision if known else True,
        over=over,
        index=index,
    )


def _watch_spec(source: str, index: int, raw: Any, gates: dict[str, tuple[str, ...]]) -> WatchSpec:
    """watch[index] of the file; `gates`: the content regexes of each rule's category."""
    where = f"watch[{index}]"
    item = _mapping(source, where, raw, _WATCH_KEYS)
    path = _strings(source, f"{where}.path", item.get("path"), required=True)[0]
    _check_globs(source, f"{where}.path", [path])
    content = _strings(source, f"{where}.content", item.get("content"))
    gate = item.get("gate")
    if gate is not None:
        if gate not in gates:
            raise _fail(source, f"{where}.gate: no rule {gate!r} with content regexes")
        content = content + gates[gate]
    return WatchSpec(
        label=str(item.get("label") or path),
        path=path,
        content=content,
        path_re=glob_regex([path]),
        content_re=_regex(source, f"{where}.content", content),
    )


def _upstream_items(source: str, top: dict[str, Any]) -> list[tuple[str, str, str]]:
    items = []
    for index, raw in enumerate(top.get("upstream") or []):
        item = _mapping(source, f"upstream[{index}]", raw, {*_UPSTREAM_KINDS, "why"})
        kinds = [k for k in _UPSTREAM_KINDS if k in item]
        if len(kinds) != 1:
            raise _fail(
                source, f"upstream[{index}] needs exactly one of must-contain/must-not-contain"
            )
        items.append((kinds[0], str(item[kinds[0]]), str(item.get("why") or "")))
    return items


def parse_upstream(
    kind: str, ref: str, why: str = "", source: str = "command line"
) -> UpstreamSpec:
    """A validated upstream watch item: `ref` is a sha prefix (7+ hex) or a PR (`#N`, `O/R#N`)."""
    ref = ref.strip()
    if kind not in _UPSTREAM_KINDS:
        raise _fail(source, f"unknown upstream check {kind!r}")
    if _SHA_REF.fullmatch(ref) and not ref.isdigit():
        return UpstreamSpec(kind, ref, why)
    match = _PR_REF.fullmatch(ref)
    if match and (ref.startswith("#") or "#" in ref or ref.isdigit()):
        return UpstreamSpec(kind, f"#{int(match.group(1))}", why)
    raise _fail(source, f"{kind} {ref[:80]!r} is neither a commit sha (7+ hex) nor a PR (#N)")


def builtin_rules() -> dict[str, Path]:
    """Every rule set an engine declaration selects, by name: an engine's `source.rules` (a set
    shipped here, `<name>_rules.yaml`, or a file next to its declaration, named by the engine)
    and its components' (ATOM's `aiter`)."""
    found: dict[str, Path] = {}
    for engine in engines.declarations():
        if engine.rules_file is not None:
            found[engine.name] = engine.rules_file
        else:
            found[engine.rules] = HERE / f"{engine.rules}_rules.yaml"
        for part in engine.components:
            found[part.rules] = HERE / f"{part.rules}_rules.yaml"
    return found


def rules_of(engine: str) -> str:
    """The rule set `engine`'s declaration selects for its source (a `load_rules` name)."""
    declared = engines.engine(engine)
    return declared.name if declared.rules_file is not None else declared.rules


def load_rules(path: str | Path | None = None) -> Rules:
    """Rules from a file, or a rule set an engine declares by name ('atom' is the default,
    'aiter', 'vllm', 'sglang')."""
    builtin = builtin_rules()
    if path is None or str(path) in builtin:
        file = builtin[str(path or DEFAULT_RULES)]
    else:
        file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ValidateError(f"cannot read rules file {file}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(str(file), "not UTF-8") from None
    if file.parent == HERE and file in builtin.values():
        return _rules_from(_builtin_document(file, text), str(file), check_overlap=False)
    return parse_rules(text, str(file))


# --- rules lint --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LintReport:
    """How a rules set fits one tree: globs that match nothing there, files no rule names."""

    commit: str
    files: int
    stale: tuple[tuple[str, str], ...]  # (where in the rules file, glob) matching no file
    uncovered: tuple[str, ...]  # files that no rule (and no `never` glob) matches

    @property
    def ok(self) -> bool:
        return not self.stale and not self.uncovered

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "files": self.files,
            "stale_globs": [{"where": w, "glob": g} for w, g in self.stale],
            "uncovered": list(self.uncovered),
            "ok": self.ok,
        }

    def render(self, rules: Rules) -> str:
        lines = [
            f"rules {rules.name} ({rules.source}) at {_where(self.commit)}: {self.files} files, "
            f"{len(self.stale)} globs matching nothing, {len(self.uncovered)} files no rule "
            "matches"
        ]
        lines += [f"stale glob: {where}: {glob}" for where, glob in self.stale]
        lines += [f"uncovered: {path}" for path in self.uncovered]
        return "\n".join(lines)


def _where(commit: str) -> str:
    return commit[:9] if re.fullmatch(r"[0-9a-f]{40}", commit) else commit


def lint(repo: Path, rules: Rules, rev: str = "HEAD") -> LintReport:
    """Check `rules` against the tree of `rev` in `repo`: every glob should match a file there
    and every file should be matched by a rule (a precision category or a not-precision one).
    The static checks (categories, globs, overlaps) run too, whatever the rules' source."""
    gitio.check_repository(repo)
    commit = gitio.resolve(repo, [rev])[0]
    tree = gitio.parse_paths(gitio.run(repo, *gitio.ls_tree_args(commit), what="ls-tree"))
    return lint_paths(tree, rules, commit)


def lint_paths(tree: Sequence[str], rules: Rules, where: str) -> LintReport:
    """`lint` over a list of paths (a tree, or a listing of an engine too large to clone, such
    as `../shared/data/engines/vllm-paths.txt`); `where` names it in the report."""
    _check_overlaps(rules.source, rules.rules)
    places = [(rule.label, pattern) for rule in rules.rules for pattern in rule.paths]
    places += [("never", pattern) for pattern in rules.never]
    places += [(f"watch[{i}]", w.path) for i, w in enumerate(rules.watch)]
    stale = [
        (where, pattern)
        for where, pattern in places
        if not any(map(glob_regex([pattern]).match, tree))
    ]
    every = glob_regex([*(p for r in rules.rules for p in r.paths), *rules.never])
    uncovered = [path for path in tree if not every.match(path)]
    return LintReport(commit=where, files=len(tree), stale=tuple(stale), uncovered=tuple(uncovered))
