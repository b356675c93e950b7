"""The engine precision diff: which changes between two engine commits can move numerical precision.

Owns the rules format (`atom_rules.yaml`, `aiter_rules.yaml`, user files), the classification
of each changed file (relevant / cosmetic / not-relevant, with category, commits and reason), the
watch evidence (which precision files did NOT change), the upstream watch list (commits or PRs
that must or must not be in NEW), and the report (`PrecisionReport`: JSON and Markdown).
Git access is `validate.gitio` (a fixed handful of processes per pair); the cosmetic rules are
`validate.cosmetic`; commit subjects are `validate.commits`.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relpipe.core import jsonload
from relpipe.core.files import write_atomic
from relpipe.core.yamlload import load_yaml
from relpipe.validate.errors import ValidateError
from relpipe.validate.precision import cosmetic, gitio, globs, regexlit
from relpipe.validate.precision.commits import Commit, from_log, parse_subject

HERE = Path(__file__).parent
BUILTIN_RULES = {"atom": HERE / "atom_rules.yaml", "aiter": HERE / "aiter_rules.yaml"}
VERDICTS = ("relevant", "cosmetic", "not-relevant")
STATUS_NAMES = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type-changed",
}
_GITLINK = "160000"
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


@dataclass(frozen=True)
class Rule:
    """One ordered rule: a category for paths, optionally gated on changed-line content."""

    category: str
    paths: tuple[str, ...]
    content: tuple[str, ...]
    why: str
    scope: tuple[str, ...]
    path_re: re.Pattern[str] = field(compare=False, repr=False)
    content_re: re.Pattern[str] | None = field(compare=False, repr=False)
    # False for a not-precision category (docs, tests, CI ...): it names the file, never fires.
    precision: bool = True
    over: tuple[str, ...] = ()  # categories this rule wins over where both match ("*": all)
    index: int = 0  # position in the file, for messages

    @property
    def label(self) -> str:
        return f"rules[{self.index}] ({self.category})"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
        """The category the rules give `path` by its path alone (the first path rule that
        matches; None when a `never` glob or no rule matches). Content gates are not read."""
        if self.never_re.match(path):
            return None
        plain = (r for r in self.rules if r.content_re is None and r.path_re.match(path))
        return next((r.category for r in plain), None)

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
    """A built-in rules file's document, cached as JSON under its content hash: importing and
    running PyYAML costs a `relpipe diff` process more than a nightly's whole diff. The cache
    holds what the strict loader returned, and the document is validated as usual."""
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    cached = gitio.cache_root().parent / "rules" / f"{file.stem}-{key}.json"
    try:
        return jsonload.loads(cached.read_bytes())
    except (OSError, ValueError):
        pass
    data = _document(text, str(file))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, json.dumps(data))
    except OSError:
        pass  # a read-only home: parse again next time
    return data


def _rules_from(data: Any, source: str, *, check_overlap: bool) -> Rules:
    top = _mapping(source, "the document", data, _TOP_KEYS)
    if top.get("schema", 1) != 1:
        raise _fail(source, f"unsupported schema {top.get('schema')!r} (this relpipe reads 1)")
    categories = _categories(source, top.get("categories"))
    known = {c.name: c for c in categories}
    rules = []
    for index, raw in enumerate(top.get("rules") or []):
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
        rules.append(
            Rule(
                category=category,
                paths=paths,
                content=content,
                why=str(item.get("why") or (known[category].why if known else "")),
                scope=_strings(source, f"{where}.scope", item.get("scope")),
                path_re=glob_regex(paths),
                content_re=_regex(source, f"{where}.content", content),
                precision=known[category].precision if known else True,
                over=over,
                index=index,
            )
        )
    if not rules:
        raise _fail(source, "no rules: a rules file must classify something")
    if check_overlap:
        _check_overlaps(source, rules)
    gates = {r.category: r.content for r in rules if r.content}
    watch = []
    for index, raw in enumerate(top.get("watch") or []):
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
        watch.append(
            WatchSpec(
                label=str(item.get("label") or path),
                path=path,
                content=content,
                path_re=glob_regex([path]),
                content_re=_regex(source, f"{where}.content", content),
            )
        )
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


def load_rules(path: str | Path | None = None) -> Rules:
    """Rules from a file, or a built-in set by name ('atom' is the default, 'aiter')."""
    if path is None or str(path) in BUILTIN_RULES:
        file = BUILTIN_RULES[str(path or "atom")]
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
    if file in BUILTIN_RULES.values():
        return _rules_from(_builtin_document(file, text), str(file), check_overlap=False)
    return parse_rules(text, str(file))


# --- the report ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    """One changed file and what it means for precision."""

    path: str
    old_path: str | None
    status: str  # added modified deleted renamed copied type-changed
    category: str | None  # the rule that fired (or, when none fired, the first that matched)
    categories: tuple[str, ...]  # every rule that fired
    verdict: str  # relevant | cosmetic | not-relevant
    # The commits responsible for the verdict, newest first: for a relevant content-gated file,
    # those whose own change to it fires a rule; otherwise every commit in `touched_by`.
    commits: tuple[str, ...]
    reason: str
    binary: bool
    touched_by: tuple[str, ...] = ()  # every commit that touched the file (under either name)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "old_path": self.old_path,
            "status": self.status,
            "category": self.category,
            "categories": list(self.categories),
            "verdict": self.verdict,
            "commits": list(self.commits),
            "touched_by": list(self.touched_by),
            "reason": self.reason,
            "binary": self.binary,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FileChange:
        # Reports written before `touched_by` existed named every touching commit in `commits`.
        return cls(
            d["path"],
            d["old_path"],
            d["status"],
            d["category"],
            tuple(d["categories"]),
            d["verdict"],
            tuple(d["commits"]),
            d["reason"],
            d["binary"],
            tuple(d.get("touched_by", d["commits"])),
        )


@dataclass(frozen=True)
class WatchResult:
    """Evidence for one watched file: unchanged | cosmetic | changed | missing."""

    label: str
    path: str
    state: str
    files: tuple[str, ...]  # changed files it matched (empty when unchanged)
    commits: tuple[str, ...]
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "path": self.path,
            "state": self.state,
            "files": list(self.files),
            "commits": list(self.commits),
            "note": self.note,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> WatchResult:
        return cls(
            d["label"], d["path"], d["state"], tuple(d["files"]), tuple(d["commits"]), d["note"]
        )


@dataclass(frozen=True)
class UpstreamResult:
    """One upstream check: is the commit/PR in NEW, and is that what was asked."""

    kind: str
    ref: str
    why: str
    found: bool
    commit: str | None
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "ref": self.ref,
            "why": self.why,
            "found": self.found,
            "commit": self.commit,
            "ok": self.ok,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> UpstreamResult:
        return cls(d["kind"], d["ref"], d["why"], d["found"], d["commit"], d["ok"])


@dataclass(frozen=True)
class PrecisionReport:
    """Everything `relpipe diff` knows about one pair; `to_json()` is the machine contract."""

    repo: str
    rules: str
    project: str | None
    scope: str | None
    old_ref: str
    new_ref: str
    old: str
    new: str
    ancestor: bool
    shallow: bool
    commits: tuple[Commit, ...]
    files: tuple[FileChange, ...]
    watch: tuple[WatchResult, ...]
    upstream: tuple[UpstreamResult, ...]

    def summary(self) -> dict[str, Any]:
        by_category: dict[str, dict[str, int]] = {}
        counts = dict.fromkeys(VERDICTS, 0)
        for f in self.files:
            counts[f.verdict] += 1
            if f.category:
                row = by_category.setdefault(f.category, dict.fromkeys(VERDICTS, 0))
                row[f.verdict] += 1
        return {
            "relevant": counts["relevant"],
            "cosmetic": counts["cosmetic"],
            "not-relevant": counts["not-relevant"],
            "files": len(self.files),
            "commits": len(self.commits),
            "by_category": dict(sorted(by_category.items())),
            "relevant_commits": list(self.relevant_commits()),
            "upstream_ok": all(u.ok for u in self.upstream),
        }

    def relevant_commits(self) -> tuple[str, ...]:
        """Commits responsible for a precision-relevant file (see `FileChange.commits`), in
        report order: a commit that only touched other lines of a content-gated file is not."""
        hit = {sha for f in self.files if f.verdict == "relevant" for sha in f.commits}
        return tuple(c.sha for c in self.commits if c.sha in hit)

    def commit_categories(self, sha: str) -> tuple[str, ...]:
        return self._categories_by_commit.get(sha, ())

    @functools.cached_property
    def _categories_by_commit(self) -> dict[str, tuple[str, ...]]:
        """The categories of the relevant files each commit is responsible for (one pass)."""
        found: dict[str, set[str]] = {}
        for f in self.files:
            if f.verdict == "relevant" and f.category:
                for sha in f.commits:
                    found.setdefault(sha, set()).add(f.category)
        return {sha: tuple(sorted(cats)) for sha, cats in found.items()}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the `relpipe diff --json` document); `from_json` inverts it."""
        return {
            "schema": 1,
            "repo": self.repo,
            "rules": self.rules,
            "project": self.project,
            "scope": self.scope,
            "old_ref": self.old_ref,
            "new_ref": self.new_ref,
            "old": self.old,
            "new": self.new,
            "ancestor": self.ancestor,
            "shallow": self.shallow,
            "commits": [
                {**c.to_json(), "precision": list(self.commit_categories(c.sha))}
                for c in self.commits
            ],
            "files": [f.to_json() for f in self.files],
            "summary": self.summary(),
            "watch": [w.to_json() for w in self.watch],
            "upstream": [u.to_json() for u in self.upstream],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PrecisionReport:
        """Rebuild a report from `to_json()` output (run records re-render byte-identically)."""
        try:
            return cls(
                repo=d["repo"],
                rules=d["rules"],
                project=d["project"],
                scope=d["scope"],
                old_ref=d["old_ref"],
                new_ref=d["new_ref"],
                old=d["old"],
                new=d["new"],
                ancestor=d["ancestor"],
                shallow=d["shallow"],
                commits=tuple(Commit.from_json(c) for c in d["commits"]),
                files=tuple(FileChange.from_json(f) for f in d["files"]),
                watch=tuple(WatchResult.from_json(w) for w in d["watch"]),
                upstream=tuple(UpstreamResult.from_json(u) for u in d["upstream"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValidateError(
                f"not a precision report (missing {exc}); re-run relpipe diff"
            ) from None


# --- classification (pure) ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Content:
    """What the blobs say about one change: None lines means not inspectable (binary/gitlink)."""

    binary: bool
    identical: bool
    cosmetic: bool
    lines: tuple[str, ...] | None


def _content(
    change: gitio.RawChange,
    blobs: dict[str, bytes],
    gated: bool,
    check_cosmetic: bool = True,
    gates: Callable[[Sequence[str]], list[str]] | None = None,
) -> _Content:
    """What the blobs say; changed lines are computed only when a content gate will read them
    (`gated`), since no other decision uses them. Without `check_cosmetic` the change is taken
    as not cosmetic (a cheaper first pass: being cosmetic only ever makes a change irrelevant)."""
    if _GITLINK in (change.old_mode, change.new_mode):
        return _Content(False, change.old_blob == change.new_blob, False, None)
    old = blobs.get(change.old_blob or "", b"")
    new = blobs.get(change.new_blob or "", b"")
    binary = cosmetic.is_binary(old) or cosmetic.is_binary(new)
    identical = change.old_blob == change.new_blob and change.status not in "AD"
    both = change.status in "MRCT" and change.old_blob and change.new_blob and not identical
    is_cosmetic = (
        check_cosmetic and bool(both) and not binary and cosmetic.is_cosmetic(change.path, old, new)
    )
    if binary or not gated:
        return _Content(binary, identical, is_cosmetic, None)
    return _Content(
        binary,
        identical,
        is_cosmetic,
        tuple(cosmetic.changed_lines(change.path, old, new, relevant=gates)),
    )


def _matched_rules(rules: Rules, paths: Sequence[str]) -> list[Rule]:
    if len(paths) == 1:
        return list(rules.matching(paths[0]))
    hit = {id(rule) for path in paths for rule in rules.matching(path)}  # a rename: both names
    return [rule for rule in rules.rules if id(rule) in hit]


def _gate_hit(pattern: re.Pattern[str], lines: Sequence[str]) -> str | None:
    return next((line.strip() for line in lines if pattern.search(line)), None)


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _paths(change: gitio.RawChange) -> list[str]:
    return [change.path] + ([change.old_path] if change.old_path else [])


def classify(
    change: gitio.RawChange,
    content: _Content | None,
    rules: Rules,
    scope: str | None,
    matched: list[Rule] | None = None,
) -> tuple[str | None, tuple[str, ...], str, str]:
    """(category, categories, verdict, reason) of one change. Pure: blobs are in `content`;
    `matched` (the rules whose paths match, in order) may be passed when already computed."""
    paths = _paths(change)
    matched = _matched_rules(rules, paths) if matched is None else matched
    if not matched:
        if all(rules.never_re.match(p) for p in paths):
            return None, (), "not-relevant", "excluded by a `never` rule"
        return None, (), "not-relevant", "no precision rule matches this path"
    precise = [r for r in matched if r.precision]
    if not precise:  # a not-precision category (docs, tests, CI ...): named, never counted
        return matched[0].category, (), "not-relevant", matched[0].why
    assert content is not None  # blobs are read for every change a precision rule matches
    moved = f"renamed from {change.old_path}; " if change.old_path else ""
    if change.status not in "AD" and content.identical and change.status != "T":
        return precise[0].category, (), "cosmetic", f"{moved}content identical".strip("; ")
    if content.cosmetic:
        return (
            precise[0].category,
            (),
            "cosmetic",
            (f"{moved}only comments, docstrings, blank lines, whitespace or logging calls changed"),
        )
    fired: list[tuple[Rule, str]] = []
    for rule in precise:
        if rule.content_re is None:
            fired.append((rule, rule.why))
        elif content.lines is None:
            fired.append((rule, "content cannot be inspected (binary or submodule), so it counts"))
        else:
            hit = _gate_hit(rule.content_re, content.lines)
            if hit is not None:
                fired.append((rule, f"{rule.why}; changed line: {_clip(hit)}"))
    if not fired:
        gated = ", ".join(dict.fromkeys(r.category for r in precise))
        return (
            precise[0].category,
            (),
            "not-relevant",
            (f"{moved}no changed line matches the content gates of {gated}"),
        )
    categories = tuple(dict.fromkeys(r.category for r, _ in fired))
    in_scope = [(r, w) for r, w in fired if not r.scope or scope is None or scope in r.scope]
    if not in_scope:
        families = ", ".join(sorted({s for r, _ in fired for s in r.scope}))
        return (
            fired[0][0].category,
            categories,
            "not-relevant",
            (f"only relevant to {families} images; this diff is for {scope}"),
        )
    status = STATUS_NAMES.get(change.status, change.status)
    prefix = f"{moved}" if change.old_path else ("" if change.status == "M" else f"{status}; ")
    if content.binary:
        prefix += "binary; "
    return in_scope[0][0].category, categories, "relevant", prefix + in_scope[0][1]


class _Aliases:
    """Union-find over paths joined by renames, so a file's commits follow it across names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, path: str) -> str:
        root = path
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        self.parent[path] = root
        return root

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def _attribute(entries: Sequence[gitio.LogEntry]) -> tuple[_Aliases, dict[str, list[str]]]:
    aliases = _Aliases()
    for entry in entries:
        for touch in entry.touches:
            if touch.old_path:
                aliases.join(touch.old_path, touch.path)
    by_root: dict[str, list[str]] = {}
    for entry in entries:
        roots = {aliases.find(t.path) for t in entry.touches}
        roots |= {aliases.find(t.old_path) for t in entry.touches if t.old_path}
        for root in roots:
            by_root.setdefault(root, []).append(entry.sha)
    return aliases, by_root


def _own_changes(
    entries: Sequence[gitio.LogEntry], aliases: _Aliases, names: dict[str, list[str]]
) -> dict[str, list[tuple[str, gitio.RawChange]]]:
    """For each file (by its names in the pair), every commit's own change to it, newest first."""
    roots = {aliases.find(n): path for path, ns in names.items() for n in ns}
    own: dict[str, list[tuple[str, gitio.RawChange]]] = {path: [] for path in names}
    for entry in entries:
        for touch in entry.touches:
            root = aliases.find(touch.path)
            if root in roots:
                own[roots[root]].append((entry.sha, touch.change()))
    return own


def _responsible(
    changes: Sequence[tuple[str, gitio.RawChange]],
    blobs: dict[str, bytes],
    rules: Rules,
    scope: str | None,
    matched: list[Rule],
) -> tuple[str, ...]:
    """The commits whose own change to a file is relevant by itself (same rules as the pair's
    diff: content gates, cosmetic edits, scope). Empty when none is, e.g. when only the commits
    together fire a gate; the caller then names every commit (fail closed)."""
    shas = []
    for sha, change in changes:
        if sha in shas:
            continue
        # The content gates first: most commits touch other lines of a gated file, and then the
        # (costlier) cosmetic comparison cannot change the answer.
        rough = _content(change, blobs, gated=True, check_cosmetic=False, gates=rules.gates)
        if classify(change, rough, rules, scope, matched)[2] != "relevant":
            continue
        content = _content(change, blobs, gated=True, gates=rules.gates)
        if classify(change, content, rules, scope, matched)[2] == "relevant":
            shas.append(sha)
    return tuple(shas)


def _commits_of(
    path_list: Sequence[str],
    aliases: _Aliases,
    by_root: dict[str, list[str]],
    order: dict[str, int],
) -> tuple[str, ...]:
    shas = {sha for p in path_list for sha in by_root.get(aliases.find(p), ())}
    return tuple(sorted(shas, key=order.__getitem__))


def _watch(
    specs: Sequence[WatchSpec],
    changes: Sequence[gitio.RawChange],
    contents: dict[str, _Content],
    present: set[str],
    tree: Sequence[str],
    commits_of: dict[str, tuple[str, ...]],
) -> tuple[WatchResult, ...]:
    results = []
    for spec in specs:
        exists = (
            spec.lookup in present
            if spec.lookup is not None
            else any(spec.path_re.match(p) for p in tree)
        )
        touched = [
            c
            for c in changes
            if spec.path_re.match(c.path) or (c.old_path and spec.path_re.match(c.old_path))
        ]
        changed, cosmetic_only, outside = [], [], []
        for change in touched:
            content = contents[change.path]
            if change.status == "D" or (
                change.status == "R" and not spec.path_re.match(change.path)
            ):
                changed.append(change)
            elif content.identical or content.cosmetic:
                cosmetic_only.append(change)
            elif (
                spec.content_re is not None
                and content.lines is not None
                and _gate_hit(spec.content_re, content.lines) is None
            ):
                outside.append(change)
            else:
                changed.append(change)
        if changed:
            state, hits, note = "changed", changed, ""
        elif cosmetic_only:
            state, hits, note = "cosmetic", cosmetic_only, "only cosmetic edits"
        elif not exists:
            state, hits, note = "missing", [], "no such file in NEW: the watch list may be stale"
        else:
            state, hits = "unchanged", []
            note = "file changed outside the watched lines" if outside else ""
        results.append(
            WatchResult(
                label=spec.label,
                path=spec.path,
                state=state,
                files=tuple(c.path for c in hits),
                commits=tuple(dict.fromkeys(s for c in hits for s in commits_of[c.path])),
                note=note,
            )
        )
    return tuple(results)


def check_upstream(
    specs: Sequence[UpstreamSpec], history: Sequence[tuple[str, str, str]]
) -> tuple[UpstreamResult, ...]:
    """Evaluate must-contain / must-not-contain against every commit reachable from NEW.

    A sha matches its commit or a cherry-pick of it (`cherry picked from commit <sha>`); a PR
    matches a squash subject `(#N)` or a `Merge pull request #N` subject.
    """
    results = []
    for spec in specs:
        found: str | None = None
        if spec.ref.startswith("#"):
            number = int(spec.ref[1:])
            found = next(
                (sha for sha, subject, _ in history if parse_subject(subject).pr == number), None
            )
        else:
            picked = f"cherry picked from commit {spec.ref}"
            found = next(
                (sha for sha, _, body in history if sha.startswith(spec.ref) or picked in body),
                None,
            )
        ok = (found is not None) == (spec.kind == "must-contain")
        results.append(UpstreamResult(spec.kind, spec.ref, spec.why, found is not None, found, ok))
    return tuple(results)


def _job(
    jobs: list[gitio.Job], repo: Path, args: Sequence[str], stdin: bytes | None = None
) -> gitio.Job:
    job = gitio.Job(repo, args, stdin)
    jobs.append(job)
    return job


def _blobs_of(changes: Iterable[gitio.RawChange]) -> list[str]:
    """The blobs to read for `changes` (both sides; none for a submodule pointer)."""
    return [
        sha
        for c in changes
        if _GITLINK not in (c.old_mode, c.new_mode)
        for sha in (c.old_blob, c.new_blob)
        if sha
    ]


@dataclass(frozen=True)
class _Judged:
    """One file of the pair, judged: its row in the report, and what its blobs said."""

    file: FileChange
    change: gitio.RawChange
    content: _Content | None
    watched: bool


@dataclass(frozen=True)
class _History:
    """What the commits between the pair say about files (from `git log --raw`)."""

    entries: list[gitio.LogEntry]
    aliases: _Aliases
    by_root: dict[str, list[str]]
    order: dict[str, int]

    @classmethod
    def of(cls, entries: list[gitio.LogEntry]) -> _History:
        aliases, by_root = _attribute(entries)
        return cls(entries, aliases, by_root, {e.sha: i for i, e in enumerate(entries)})

    def commits_of(self, change: gitio.RawChange) -> tuple[str, ...]:
        names = [change.path, change.old_path or change.path]
        return _commits_of(names, self.aliases, self.by_root, self.order)


@dataclass(frozen=True)
class _Assessed:
    """One file of the pair and what its paths and blobs say (no history needed)."""

    change: gitio.RawChange
    matched: list[Rule]
    watched: bool
    gated: bool  # a matched rule has a content gate: which commit fired it is asked
    content: _Content | None


def _assess(
    changes: Sequence[gitio.RawChange], rules: Rules, blobs: dict[str, bytes]
) -> list[_Assessed]:
    """What the rules and the blobs (in `blobs`) say of each change: the costly part of a
    diff (cosmetic comparison, changed lines), which needs no history."""
    watch_gated = any(w.content_re is not None for w in rules.watch)
    assessed = []
    for change in changes:
        matched = _matched_rules(rules, _paths(change))
        watched = any(map(rules.watched, _paths(change)))
        gated = any(r.content_re is not None for r in matched)
        content = (
            _content(change, blobs, gated or (watch_gated and watched), gates=rules.gates)
            if watched or any(r.precision for r in matched)
            else None
        )
        assessed.append(_Assessed(change, matched, watched, gated, content))
    return assessed


def _judge(
    assessed: Sequence[_Assessed],
    rules: Rules,
    scope: str | None,
    history: _History,
    blobs: dict[str, bytes],
    repo: Path,
) -> dict[str, _Judged]:
    """Judge assessed files, by path. The blobs of the commits' own changes to content-gated
    files (which commit fired the gate) are read here, in one cat-file, into `blobs`."""
    # `git log --raw` named the per-commit blobs; one more cat-file reads those the pair did not.
    names = {a.change.path: _paths(a.change) for a in assessed if a.gated}
    own = _own_changes(history.entries, history.aliases, names)
    missing = [
        sha for sha in _blobs_of(t for ts in own.values() for _, t in ts) if sha not in blobs
    ]
    if missing:
        blobs.update(gitio.read_blobs(repo, missing))
    judged = {}
    for a in assessed:
        change, path = a.change, a.change.path
        category, categories, verdict, reason = classify(change, a.content, rules, scope, a.matched)
        touched_by = history.commits_of(change)
        judged[path] = _Judged(
            FileChange(
                path=path,
                old_path=change.old_path,
                status=STATUS_NAMES.get(change.status, change.status),
                category=category,
                categories=categories,
                verdict=verdict,
                commits=(
                    _responsible(own[path], blobs, rules, scope, a.matched) or touched_by
                    if verdict == "relevant" and path in own
                    else touched_by
                ),
                reason=reason,
                binary=bool(a.content and a.content.binary),
                touched_by=touched_by,
            ),
            change,
            a.content,
            a.watched,
        )
    return judged


def _needs_blobs(change: gitio.RawChange, rules: Rules) -> bool:
    """Whether judging the change reads its blobs: a precision rule or a watch entry names it."""
    paths = _paths(change)
    return any(r.precision for r in _matched_rules(rules, paths)) or any(map(rules.watched, paths))


def diff(
    repo: Path,
    old: str,
    new: str,
    rules: Rules | None = None,
    *,
    scope: str | None = None,
    upstream: Sequence[UpstreamSpec] = (),
    display: str | None = None,
) -> PrecisionReport:
    """The precision report for OLD -> NEW in `repo` (a worktree, bare repo or `.git` folder).

    `scope` is the image family (atom, vllm, sglang) for scoped rules; None counts them all.
    `upstream` adds checks to the rules' own list. `display` names the repo in the report.

    Rename detection is the slowest git step on a real span (`git diff -M` of a release: ten
    times the plain diff). So a plain diff (no renames) comes first: every file it lists as
    modified is the same in the diff with renames, and is read and judged while git still pairs
    added and deleted files. Only the pairs' own entries (A, D, R) wait for that diff.
    """
    rules = rules or load_rules()
    old_rev, new_rev = (f"{gitio.commit_of(ref)}^{{commit}}" for ref in (old, new))
    gitio.check_repository(repo)
    checks = (*rules.upstream, *upstream)
    listed = any(w.lookup is None for w in rules.watch)
    lookups = [w.lookup for w in rules.watch if w.lookup is not None]
    info_names = [old_rev, new_rev, *(f"{new_rev}:{path}" for path in lookups)]
    # The git processes overlap (gitio.Job): the log and the rename pass run while the blobs
    # are read and judged.
    jobs: list[gitio.Job] = []
    try:
        plain_job = _job(jobs, repo, gitio.diff_args(old_rev, new_rev, renames=False))
        diff_job = _job(jobs, repo, gitio.diff_args(old_rev, new_rev))
        log_job = _job(jobs, repo, gitio.log_args(old_rev, new_rev))
        tree_job = _job(jobs, repo, gitio.ls_tree_args(new_rev)) if listed else None
        hist_job = _job(jobs, repo, gitio.history_args(new_rev)) if checks else None
        try:
            plain = gitio.parse_diff_raw(plain_job.result("diff"))
        except ValidateError:
            gitio.resolve(repo, [old, new])  # names the ref that is missing, if that was it
            raise
        # The two commits, the watched entries, and every blob the classification reads (an
        # added or deleted file's too: it may be half of a rename).
        script, wanted = gitio.objects_script(
            info_names, _blobs_of(c for c in plain if _needs_blobs(c, rules))
        )
        objects_job = _job(jobs, repo, gitio.objects_args(), script)
        infos, blobs = gitio.parse_objects(repo, objects_job.result("cat-file"), info_names, wanted)
        if infos[0] is None or infos[1] is None:
            gitio.resolve(repo, [old, new])
            raise ValidateError(f"cannot resolve {old!r} and {new!r} in {repo}")
        modified = _assess([c for c in plain if c.status in "MT"], rules, blobs)  # log runs
        history = _History.of(gitio.parse_log(log_job.result("log")))
        tree = gitio.parse_paths(tree_job.result("ls-tree")) if tree_job else []
        hist = gitio.parse_history(hist_job.result("log")) if hist_job else []
        judged = _judge(modified, rules, scope, history, blobs, repo)
        changes = gitio.parse_diff_raw(diff_job.result("diff"))
    finally:
        for job in jobs:
            job.close()
    late = [c for c in changes if c.path not in judged or judged[c.path].change != c]
    missing = [  # the half of a rename the plain diff did not ask for
        sha for sha in _blobs_of(c for c in late if _needs_blobs(c, rules)) if sha not in blobs
    ]
    if missing:
        blobs.update(gitio.read_blobs(repo, missing))
    judged.update(_judge(_assess(late, rules, blobs), rules, scope, history, blobs, repo))
    rows = [judged[c.path] for c in changes]
    present = {path for path, info in zip(lookups, infos[2:], strict=True) if info is not None}
    return PrecisionReport(
        repo=display or str(repo),
        rules=rules.name,
        project=rules.project,
        scope=scope,
        old_ref=old,
        new_ref=new,
        old=infos[0][0],
        new=infos[1][0],
        ancestor=not any(e.side == "old" for e in history.entries),
        shallow=gitio.is_shallow(repo),
        commits=tuple(from_log(e) for e in history.entries),
        files=tuple(row.file for row in rows),
        watch=_watch(
            rules.watch,
            [row.change for row in rows if row.watched],
            {row.change.path: row.content for row in rows if row.content is not None},
            present,
            tree,
            {row.change.path: row.file.touched_by for row in rows},
        ),
        upstream=check_upstream(checks, hist),
    )


# --- rules lint --------------------------------------------------------------------------------


@dataclass(frozen=True)
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
            f"rules {rules.name} ({rules.source}) at {self.commit[:9]}: {self.files} files, "
            f"{len(self.stale)} globs matching nothing, {len(self.uncovered)} files no rule "
            "matches"
        ]
        lines += [f"stale glob: {where}: {glob}" for where, glob in self.stale]
        lines += [f"uncovered: {path}" for path in self.uncovered]
        return "\n".join(lines)


def lint(repo: Path, rules: Rules, rev: str = "HEAD") -> LintReport:
    """Check `rules` against the tree of `rev` in `repo`: every glob should match a file there
    and every file should be matched by a rule (a precision category or a not-precision one).
    The static checks (categories, globs, overlaps) run too, whatever the rules' source."""
    _check_overlaps(rules.source, rules.rules)
    gitio.check_repository(repo)
    commit = gitio.resolve(repo, [rev])[0]
    tree = gitio.parse_paths(gitio.run(repo, *gitio.ls_tree_args(commit), what="ls-tree"))
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
    return LintReport(commit, len(tree), tuple(stale), tuple(uncovered))


# --- Markdown -----------------------------------------------------------------------------------

# Like the release notes' `markdown.escape`, `@` is backslash-escaped (a subject's `@alice` pasted
# into a PR must not ping anyone). Unlike it, `#` stays as written (PR labels such as
# `ROCm/ATOM#12` are link texts here) and HTML becomes entities rather than backslash escapes.
_MD_ESCAPE = re.compile(r"([\\`*_\[\]|~$@])")


def _plain(text: str) -> str:
    # Imported here: the notes package is large, and `relpipe diff --json` never renders Markdown.
    from relpipe.changelog.notes import markdown

    return markdown.plain(text, limit=None)


def md_text(text: str) -> str:
    """Untrusted text as one Markdown table cell: one clean line, HTML inert, Markdown escaped."""
    line = _plain(text)
    return _MD_ESCAPE.sub(r"\\\1", html.escape(line, quote=False))


def md_code(text: str) -> str:
    """A path or sha as inline code in a table cell; falls back to escaped text if it can't be."""
    if "`" in text or not text.strip() or _plain(text) != text:
        return md_text(text)
    # Inside a code span only `|` still needs escaping: GFM splits table cells on it first.
    return "`" + text.replace("|", "\\|") + "`"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(sha: str) -> str:
    return sha[:9]


def _pr_cell(report: PrecisionReport, pr: int | None) -> str:
    if pr is None:
        return ""
    label = md_text(f"{report.project}#{pr}" if report.project else f"#{pr}")
    return f"[{label}](https://github.com/{report.project}/pull/{pr})" if report.project else label


def _commit_cells(report: PrecisionReport, shas: Sequence[str]) -> str:
    by_sha = {c.sha: c for c in report.commits}
    cells = []
    for sha in shas:
        commit = by_sha.get(sha)
        pr = _pr_cell(report, commit.pr if commit else None)
        cells.append(f"{md_code(_short(sha))}" + (f" ({pr})" if pr else ""))
    return ", ".join(cells)


def _file_commit_cells(report: PrecisionReport, f: FileChange) -> str:
    """A file's responsible commits, then (for a content-gated file) the ones that only touched
    other lines of it, so that nothing the log says is hidden."""
    others = [sha for sha in f.touched_by if sha not in f.commits]
    cells = _commit_cells(report, f.commits)
    return cells + (f"; also touched by {_commit_cells(report, others)}" if others else "")


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table (under `title` unless it is empty) and a blank line; nothing without rows.
    A column name ending in `:` is right-aligned (counts)."""
    if not rows:
        return []

    def row(cells: Iterable[object]) -> str:
        return "| " + " | ".join(str(cell) for cell in cells) + " |"

    align = "|" + "|".join("---:" if c.endswith(":") else "---" for c in columns) + "|"
    return [
        *([title, ""] if title else []),
        row(c.rstrip(":") for c in columns),
        align,
        *(row(r) for r in rows),
        "",
    ]


def render_markdown(report: PrecisionReport) -> str:
    """Tables a reviewer pastes into a PR: summary by category, relevant files, commits, watch."""
    s = report.summary()
    where = md_text(report.project or report.repo)
    lines = [
        f"### Engine diff {md_code(_short(report.old))} → {md_code(_short(report.new))} ({where})",
        "",
        f"{_count(s['commits'], 'commit')}, {_count(s['files'], 'file')} changed"
        + (
            ""
            if report.ancestor
            else "; OLD is not an ancestor of NEW (commits only in OLD are marked *old*)"
        )
        + (
            "; the repository is a shallow clone, history may be incomplete"
            if report.shallow
            else ""
        )
        + f". Precision: **{s['relevant']} relevant**, {s['cosmetic']} cosmetic, "
        f"{s['not-relevant']} not relevant (rules: {md_text(report.rules)}).",
        "",
    ]
    lines += _table(
        "",
        ["category", "relevant:", "cosmetic:", "not relevant:"],
        [
            [md_text(category), row["relevant"], row["cosmetic"], row["not-relevant"]]
            for category, row in s["by_category"].items()
        ],
    )
    # Not-relevant files are listed too when a rule matched their path (a content gate or scope
    # cleared them): that is the evidence a reviewer would otherwise argue by hand.
    lines += _table(
        "#### Precision files",
        ["file", "change", "category", "verdict", "commits", "why"],
        [
            [
                md_code(f.path) + (f" (from {md_code(f.old_path)})" if f.old_path else ""),
                f.status,
                md_text(f.category or ""),
                f.verdict,
                _file_commit_cells(report, f),
                md_text(f.reason),
            ]
            for f in report.files
            if f.verdict != "not-relevant" or f.category
        ],
    )
    lines += _table(
        "#### Commits",
        ["commit", "PR", "type", "subject", "precision"],
        [
            [
                md_code(_short(c.sha)) + (" *old*" if c.side == "old" else ""),
                _pr_cell(report, c.pr),
                md_text(c.type) + (" (merge)" if c.merge else ""),
                md_text(c.subject),
                md_text(", ".join(report.commit_categories(c.sha))),
            ]
            for c in report.commits
        ],
    )
    lines += _table(
        "#### Watch list (evidence of what did not change)",
        ["watched", "state", "changed in", "note"],
        [
            [
                md_code(w.label) if w.label == w.path else md_text(w.label),
                f"**{w.state}**",
                _commit_cells(report, w.commits),
                md_text(w.note),
            ]
            for w in report.watch
        ],
    )
    lines += _table(
        "#### Upstream watch",
        ["check", "ref", "found", "result", "why"],
        [
            [
                u.kind,
                md_text(u.ref),
                md_code(_short(u.commit)) if u.commit else "no",
                "ok" if u.ok else "**FAIL**",
                md_text(u.why),
            ]
            for u in report.upstream
        ],
    )
    return "\n".join(lines)
