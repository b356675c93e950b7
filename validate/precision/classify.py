"""Classification: which changes between two engine commits can move numerical precision.

`classify` judges one changed file against the rules (relevant / cosmetic / not-relevant, with
category, commits and reason); `diff` runs the batched git reads (`gitio`: a fixed handful of
processes per pair), the cosmetic comparison (`cosmetic`) and commit attribution, and
returns a `PrecisionReport` with the watch evidence and the upstream watch list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ...core.commit import Commit
from ..errors import ValidateError
from . import cosmetic, gitio
from .report import (
    FileChange,
    PrecisionReport,
    UpstreamResult,
    WatchResult,
)
from .rules import Rule, Rules, UpstreamSpec, WatchSpec, load_rules

STATUS_NAMES = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type-changed",
}
_GITLINK = "160000"  # a submodule pointer: no blob to read


# --- classification (pure) ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
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
        return _Content(
            binary=False, identical=change.old_blob == change.new_blob, cosmetic=False, lines=None
        )
    old = blobs.get(change.old_blob or "", b"")
    new = blobs.get(change.new_blob or "", b"")
    binary = cosmetic.is_binary(old) or cosmetic.is_binary(new)
    identical = change.old_blob == change.new_blob and change.status not in "AD"
    is_cosmetic = check_cosmetic and _is_cosmetic(change, blobs, binary)
    if binary or not gated:
        return _Content(binary=binary, identical=identical, cosmetic=is_cosmetic, lines=None)
    return _Content(
        binary=binary,
        identical=identical,
        cosmetic=is_cosmetic,
        lines=tuple(cosmetic.changed_lines(change.path, old, new, relevant=gates)),
    )


def _is_cosmetic(change: gitio.RawChange, blobs: dict[str, bytes], binary: bool) -> bool:
    """Whether a change between two different text blobs is cosmetic (`cosmetic.is_cosmetic`)."""
    if binary or change.status not in "MRCT" or not change.old_blob or not change.new_blob:
        return False
    if change.old_blob == change.new_blob:
        return False  # identical, which `classify` says first
    old, new = blobs.get(change.old_blob, b""), blobs.get(change.new_blob, b"")
    return cosmetic.is_cosmetic(change.path, old, new)


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


def _attribute(log: gitio.Log) -> tuple[_Aliases, dict[str, list[str]]]:
    aliases = _Aliases()
    for touches in log.touches.values():
        for touch in touches:
            if touch.old_path:
                aliases.join(touch.old_path, touch.path)
    by_root: dict[str, list[str]] = {}
    for commit in log.commits:
        touches = log.touches[commit.sha]
        roots = {aliases.find(t.path) for t in touches}
        roots |= {aliases.find(t.old_path) for t in touches if t.old_path}
        for root in roots:
            by_root.setdefault(root, []).append(commit.sha)
    return aliases, by_root


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
        # Its changed lines are already known: only whether it is cosmetic is left to ask.
        content = replace(rough, cosmetic=_is_cosmetic(change, blobs, rough.binary))
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
    specs: Sequence[UpstreamSpec], history: Sequence[Commit]
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
            found = next((c.sha for c in history if c.pr == number), None)
        else:
            picked = f"cherry picked from commit {spec.ref}"
            found = next(
                (c.sha for c in history if c.sha.startswith(spec.ref) or picked in c.body),
                None,
            )
        ok = (found is not None) == (spec.kind == "must-contain")
        results.append(
            UpstreamResult(
                kind=spec.kind,
                ref=spec.ref,
                why=spec.why,
                found=found is not None,
                commit=found,
                ok=ok,
            )
        )
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


@dataclass(frozen=True, kw_only=True)
class _Judged:
    """One file of the pair, judged: its row in the report, and what its blobs said."""

    file: FileChange
    change: gitio.RawChange
    content: _Content | None
    watched: bool


@dataclass(frozen=True, kw_only=True)
class _History:
    """What the commits between the pair say about files (from `git log --raw`)."""

    log: gitio.Log
    aliases: _Aliases
    by_root: dict[str, list[str]]
    order: dict[str, int]

    @classmethod
    def of(cls, log: gitio.Log) -> _History:
        aliases, by_root = _attribute(log)
        return cls(
            log=log,
            aliases=aliases,
            by_root=by_root,
            order={c.sha: i for i, c in enumerate(log.commits)},
        )

    def commits_of(self, change: gitio.RawChange) -> tuple[str, ...]:
        names = [change.path, change.old_path or change.path]
        return _commits_of(names, self.aliases, self.by_root, self.order)


def _own_changes(
    history: _History, changes: Iterable[gitio.RawChange]
) -> dict[str, list[tuple[str, gitio.RawChange]]]:
    """For each of `changes` (a file, by its names in the pair), every commit's own change to
    it, newest first."""
    aliases = history.aliases
    names = {change.path: _paths(change) for change in changes}
    roots = {aliases.find(n): path for path, ns in names.items() for n in ns}
    own: dict[str, list[tuple[str, gitio.RawChange]]] = {path: [] for path in names}
    for commit in history.log.commits:
        for touch in history.log.touches[commit.sha]:
            root = aliases.find(touch.path)
            if root in roots:
                own[roots[root]].append((commit.sha, touch.change()))
    return own


@dataclass(frozen=True, kw_only=True)
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
        gated = _gated(change, rules)
        content = (
            _content(change, blobs, gated or (watch_gated and watched), gates=rules.gates)
            if watched or any(r.precision for r in matched)
            else None
        )
        assessed.append(
            _Assessed(change=change, matched=matched, watched=watched, gated=gated, content=content)
        )
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
    files (which commit fired the gate) not yet in `blobs` are read here, in one cat-file."""
    own = _own_changes(history, [a.change for a in assessed if a.gated])
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
            file=FileChange(
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
            change=change,
            content=a.content,
            watched=a.watched,
        )
    return judged


def _needs_blobs(change: gitio.RawChange, rules: Rules) -> bool:
    """Whether judging the change reads its blobs: a precision rule or a watch entry names it."""
    paths = _paths(change)
    return any(r.precision for r in _matched_rules(rules, paths)) or any(map(rules.watched, paths))


def _gated(change: gitio.RawChange, rules: Rules) -> bool:
    """Whether a rule that names the change has a content gate (which commit fired it is asked)."""
    return any(r.content_re is not None for r in _matched_rules(rules, _paths(change)))


def _later_blobs(plain: Sequence[gitio.RawChange], rules: Rules, history: _History) -> list[str]:
    """The blobs a diff reads after the modified files' own: those of the other files of the
    plain diff, and of the commits' own changes to its content-gated files (an added or
    deleted one's too: the rename pass may pair them, and a renamed file's commits are those
    of its two names), so that no read waits for the rename pass."""
    others = [c for c in plain if c.status not in "MT" and _needs_blobs(c, rules)]
    own = _own_changes(history, [c for c in plain if _gated(c, rules)])
    return _blobs_of([*others, *(t for ts in own.values() for _, t in ts)])


class _BlobRead:
    """Blobs not in `have`, read by one `cat-file` in the background (none when none)."""

    def __init__(
        self, jobs: list[gitio.Job], repo: Path, shas: Iterable[str], have: Collection[str]
    ) -> None:
        self.repo = repo
        script, self.wanted = gitio.objects_script([], [s for s in shas if s not in have])
        self.job = _job(jobs, repo, gitio.objects_args(), script) if self.wanted else None

    def into(self, blobs: dict[str, bytes]) -> None:
        """Wait for the blobs and add them to `blobs`."""
        if self.job is not None:
            out = self.job.result("cat-file")
            blobs.update(gitio.parse_objects(self.repo, out, [], self.wanted)[1])


_FIRST_SHARE = 4  # a quarter of the modified files is judged while git reads the others' blobs


@dataclass(frozen=True, kw_only=True)
class _Modified:
    """The modified files of the plain diff, read and assessed (`_read_modified`)."""

    infos: list[tuple[str, str] | None]  # of the `info_names`, in order
    blobs: dict[str, bytes]
    history: _History
    assessed: list[_Assessed]
    renames: gitio.Job  # the rename pass, started once the log was in


def _read_modified(
    jobs: list[gitio.Job],
    repo: Path,
    plain: Sequence[gitio.RawChange],
    rules: Rules,
    info_names: Sequence[str],
    log_job: gitio.Job,
    renames: Sequence[str],
) -> _Modified:
    """Read and assess the modified files of the plain diff; start the rename pass (`renames`,
    the diff's arguments) on the way.

    Git and Python work side by side: one `cat-file` reads the infos and the blobs of the first
    files, another those of the others, judged once the first ones are; a third the blobs of
    the rest (an added or deleted file may be half of a rename) and of the commits' own
    versions of content-gated files, asked for once the first files are judged and the log
    is parsed. The rename pass, needed last, starts then too: started with the others it took
    CPU from the reads judged first (the release span: ~14 ms later on a loaded machine)."""
    modified = [c for c in plain if c.status in "MT"]
    first = len(modified) // _FIRST_SHARE
    script, wanted = gitio.objects_script(
        info_names, _blobs_of(c for c in modified[:first] if _needs_blobs(c, rules))
    )
    objects_job = _job(jobs, repo, gitio.objects_args(), script)
    others = [c for c in modified[first:] if _needs_blobs(c, rules)]
    second = _BlobRead(jobs, repo, _blobs_of(others), set(wanted))
    infos, blobs = gitio.parse_objects(repo, objects_job.result("cat-file"), info_names, wanted)
    assessed = _assess(modified[:first], rules, blobs)
    history = _History.of(gitio.parse_log(log_job.result("log")))
    later = _later_blobs(plain, rules, history)
    rest = _BlobRead(jobs, repo, later, {*wanted, *second.wanted})
    renames_job = _job(jobs, repo, renames)
    second.into(blobs)
    assessed += _assess(modified[first:], rules, blobs)
    rest.into(blobs)
    return _Modified(
        infos=infos, blobs=blobs, history=history, assessed=assessed, renames=renames_job
    )


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
        log_job = _job(jobs, repo, gitio.log_args(old_rev, new_rev))
        tree_job = _job(jobs, repo, gitio.ls_tree_args(new_rev)) if listed else None
        hist_job = _job(jobs, repo, gitio.history_args(new_rev)) if checks else None
        try:
            plain = gitio.parse_diff_raw(plain_job.result("diff"))
        except ValidateError:
            gitio.resolve(repo, [old, new])  # names the ref that is missing, if that was it
            raise
        pair = _read_modified(
            jobs, repo, plain, rules, info_names, log_job, gitio.diff_args(old_rev, new_rev)
        )
        infos, blobs, history = pair.infos, pair.blobs, pair.history
        if infos[0] is None or infos[1] is None:
            gitio.resolve(repo, [old, new])
            raise ValidateError(f"cannot resolve {old!r} and {new!r} in {repo}")
        tree = gitio.parse_paths(tree_job.result("ls-tree")) if tree_job else []
        hist = gitio.parse_history(hist_job.result("log")) if hist_job else []
        judged = _judge(pair.assessed, rules, scope, history, blobs, repo)
        changes = gitio.parse_diff_raw(pair.renames.result("diff"))
    finally:
        for job in jobs:
            job.close()
    rows = _rows(changes, judged, rules, scope, history, blobs, repo)
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
        ancestor=not any(c.side == "old" for c in history.log.commits),
        shallow=gitio.is_shallow(repo),
        commits=history.log.commits,
        files=tuple(row.file for row in rows),
        watch=_watch_rows(rules, rows, present, tree),
        upstream=check_upstream(checks, hist),
    )


def _rows(
    changes: Sequence[gitio.RawChange],
    judged: dict[str, _Judged],
    rules: Rules,
    scope: str | None,
    history: _History,
    blobs: dict[str, bytes],
    repo: Path,
) -> list[_Judged]:
    """The judged rows of the diff with renames, in its order: those the plain diff judged, and
    the late ones (renames, added and deleted files) judged now."""
    late = [c for c in changes if c.path not in judged or judged[c.path].change != c]
    missing = [  # the half of a rename the plain diff did not ask for
        sha for sha in _blobs_of(c for c in late if _needs_blobs(c, rules)) if sha not in blobs
    ]
    if missing:
        blobs.update(gitio.read_blobs(repo, missing))
    judged.update(_judge(_assess(late, rules, blobs), rules, scope, history, blobs, repo))
    return [judged[c.path] for c in changes]


def _watch_rows(
    rules: Rules, rows: Sequence[_Judged], present: set[str], tree: Sequence[str]
) -> tuple[WatchResult, ...]:
    return _watch(
        rules.watch,
        [row.change for row in rows if row.watched],
        {row.change.path: row.content for row in rows if row.content is not None},
        present,
        tree,
        {row.change.path: row.file.touched_by for row in rows},
    )
