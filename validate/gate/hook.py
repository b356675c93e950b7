"""`validate_perf_changelog`: the perf-changelog gate, as a pre-commit hook and a CI command.

It compares the changelog at a base (a git ref) with the head (a ref, the index, or the working
tree) and gives InferenceX's own verdict (validate_perf_changelog.py's strict checks and
process_changelog.py's checks of the appended entries, with the PR's `--all-evals` /
`--evals-only` labels), with `file:line` messages that say what to do: history immutable byte for
byte (a canonical pr-link-only correction alone excepted), new entries only at the end, each
after exactly one empty line, schema-valid, with resolvable config keys and a canonical pr-link;
an append-only entry also within its scope and adding points to existing curves, judged on the
master configs at the base and the head (validate/gate/append_only.py). House style beyond
InferenceX's rules is a warning (an error under `--strict`); style already in the base never
fails; invisible or unassigned characters, anchors/aliases/tags and size caps are errors always
(docs/perf-changelog.md). With `--full` (or outside a git repository) it audits one
whole file: what InferenceX's parse rejects is an error, quirks of history are warnings.

Speed is the design point (it runs on every commit): when the base is a byte prefix of the head,
which is the normal case, only the appended suffix is parsed. This module and what it imports
use only the standard library and PyYAML; `json`, `difflib` and `glob` load only when needed.
Exit codes: 0 valid, 1 invalid, 2 usage or environment error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

from relpipe.changelog.configs.load import master_keys, resolve_key, resolve_keys
from relpipe.changelog.entry import (
    ENTRY_CODES,
    ERROR,
    WARNING,
    Block,
    Changelog,
    Finding,
    parse_appended,
    proven_valid,
    scan,
)
from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.layout import BenchmarkFiles, find_benchmark_files
from relpipe.validate.errors import ValidateError
from relpipe.validate.gate import git as githook
from relpipe.validate.gate.basecache import BaseCache

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from relpipe.validate.gate.append_only import Revision

DEFAULT_CHANGELOG = "perf-changelog.yaml"
# Every layout InferenceX has had (changelog/layout.py), for --help.
CHANGELOG_PATHS = ("perf-changelog.yaml", "inferencex-e2e/perf-changelog.yaml")
MASTER_GLOBS = (
    "configs/*-master.yaml",
    "inferencex-e2e/configs/*-master.yaml",
    ".github/configs/*-master.yaml",
)
PLACEHOLDERS = ("XXX",)


@dataclass(frozen=True)
class Report:
    """What one run found: mode, counts, and every finding in head-line order."""

    path: str
    mode: str  # "append" (base is a prefix), "diff" (it is not), "full" (no base)
    entries: int
    appended: int
    corrections: int
    findings: tuple[Finding, ...]
    configs_checked: bool

    @cached_property  # a history audit may hold hundreds of thousands of findings
    def ok(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)


@dataclass(frozen=True)
class Rules:
    """The checks that depend on where the changelog lives and how CI runs the sweep."""

    repo_url: str | None
    pr_number: int | None
    config_keys: Sequence[str] | None  # None: config keys are not checked
    strict: bool = False  # house-style findings are errors, not warnings
    all_evals: bool = False  # the PR's `all-evals` label, as InferenceX's CI passes it
    evals_only: bool = False  # the PR's `evals-only` label
    # The master configs (and runners.yaml) at the base and the head, read only when an
    # appended entry is append-only (validate.append_only); None: those checks are skipped.
    revisions: Callable[[], tuple[Revision, Revision]] | None = None


# Findings InferenceX's validator does not make (it accepts what they point at): house style,
# warnings unless --strict. Every other finding is an error: either InferenceX rejects the same
# change, or it is one of the documented security exceptions (docs/perf-changelog.md).
STYLE_CODES = frozenset(
    {
        "trailing-whitespace",
        "indent",
        "continuation",
        "blank-in-entry",
        "yaml-ambiguous",
        "style-value",
        "duplicate-entry",
        "comment",
    }
)
# What may sit in history (the base, or a --full audit) without InferenceX rejecting the file.
HISTORY_CODES = STYLE_CODES | {"whitespace-line", "separator", "trailing-blank-lines", "pr-link"}


def _graded(findings: Sequence[Finding], rules: Rules, history: bool = False) -> list[Finding]:
    """Each finding with its severity: style is a warning unless --strict."""
    severity = dict.fromkeys(HISTORY_CODES if history else STYLE_CODES, _style_severity(rules))
    # A finding made with its severity already (scan's `style`) is kept, not copied.
    return [
        f
        if f.severity == severity.get(f.code, ERROR)
        else Finding(f.line, f.code, f.message, f.hint, severity.get(f.code, ERROR))
        for f in findings
    ]


def _style_severity(rules: Rules) -> str:
    return ERROR if rules.strict else WARNING


# ---------------------------------------------------------------------------------------------
# pr-link and config-key rules for new entries


@cache
def _canonical_link(repo_url: str) -> re.Pattern[str]:
    # `\d+` as InferenceX's CANONICAL_PR_LINK has it (a str pattern: any Unicode digit).
    return re.compile(re.escape(repo_url) + r"/pull/\d+")


def _has_canonical_link(block: Block, prefix: str) -> bool:
    """Cheap test of the common case `  pr-link: <repo>/pull/<N>` (no regex, no parse)."""
    text = block.text
    start = text.find(prefix)
    if start < 0 or text.count("\n  pr-link:") != 1:
        return False
    number = text[start + len(prefix) : text.find("\n", start + len(prefix))]
    return number.isdigit() and number.isascii()


def _pr_link_finding(block: Block, rules: Rules, path: str) -> Finding | None:
    link = block.scalar("pr-link")
    if not isinstance(link, str) or not (block.proven or block.entry is not None):
        return None  # the schema finding already covers it
    line = block.line + block.text[: block.text.find("\n  pr-link:") + 1].count("\n")
    if rules.repo_url is None:
        raise ValidateError(
            f"{path}:{line}: cannot check pr-link without the repository URL; pass --repo-url "
            "or add an `origin` remote"
        )
    canonical = _canonical_link(rules.repo_url)
    if rules.pr_number is not None:
        expected = f"{rules.repo_url}/pull/{rules.pr_number}"
        if link in (expected, *PLACEHOLDERS, f"{rules.repo_url}/pull/XXX"):
            return None
        return Finding(
            line,
            "pr-link",
            f"pr-link `{link}` is not this PR's link",
            f"write `pr-link: {expected}` (or the XXX placeholder until the PR exists)",
        )
    if canonical.fullmatch(link):
        return None
    return Finding(
        line,
        "pr-link",
        f"pr-link `{link}` is not a canonical PR link",
        f"write `pr-link: {rules.repo_url}/pull/<number>`; placeholders such as XXX are "
        "accepted only in PR mode (--pr-number N)",
    )


def _config_findings(block: Block, keys: Sequence[str]) -> list[Finding]:
    entry = block.entry
    if entry is None:
        return []
    found = []
    for index, pattern in enumerate(entry.config_keys):
        try:
            resolve_key(pattern, keys)
        except ChangelogError as exc:
            found.append(
                Finding(
                    _item_line(block, "config-keys", index),
                    "config-key",
                    str(exc).split(";")[0],
                    "use a key defined in the master configs (or a `*` glob that matches one)",
                )
            )
    return found


def _new_entry_findings(blocks: Sequence[Block], rules: Rules, path: str) -> list[Finding]:
    found: list[Finding] = []
    for block in blocks:
        link = _pr_link_finding(block, rules, path)
        if link is not None:
            found.append(link)
        if rules.config_keys is not None:
            found.extend(_config_findings(block, rules.config_keys))
    return found


# ---------------------------------------------------------------------------------------------
# base -> head when the base is not a prefix: explain what happened to history


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix (binary search over C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _without_pr_link(block: Block) -> list[str]:
    """The entry's lines minus the pr-link field (its key line and any continuation lines)."""
    lines = block.text.split("\n")[:-1]
    start = block.key_lines.get("pr-link")
    if start is None:
        return lines
    first = start - block.line
    stop = first + 1
    while stop < len(lines) and lines[stop].startswith("   "):
        stop += 1
    return lines[:first] + lines[stop:]


def _pr_link_only(old: Block, new: Block) -> bool:
    return _without_pr_link(old) == _without_pr_link(new) and old.fields.get(
        "pr-link"
    ) != new.fields.get("pr-link")


def _same_subject(old: Block, new: Block) -> bool:
    """An edit keeps the config keys or the description; a different entry changes both."""
    return any(old.fields.get(key) == new.fields.get(key) for key in ("config-keys", "description"))


def _item_line(block: Block, key: str, index: int) -> int:
    """Line of the index-th list item under `key` (the key's line if it cannot be told)."""
    first = block.key_lines.get(key, block.line)
    seen = -1
    for offset, line in enumerate(block.text.split("\n")[first - block.line + 1 :], start=1):
        body = line.lstrip(" ")
        if body.startswith("- "):
            seen += 1
            if seen == index:
                return first + offset
        elif body and not body.startswith("#"):
            break
    return first


def _first_diff_line(old: Block, new: Block) -> int:
    a, b = old.text.split("\n"), new.text.split("\n")
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return new.line + k
    return new.line + min(len(a), len(b)) - 1


def _summary(block: Block) -> str:
    keys = block.fields.get("config-keys")
    shown = ", ".join(str(k) for k in keys[:2]) if isinstance(keys, list) else "?"
    return f"base line {block.line} (config-keys: {shown})"


def _compare(
    base: Changelog,
    head: Changelog,
    base_bytes: bytes,
    head_bytes: bytes,
) -> tuple[list[Block], int, list[Finding], list[Block]]:
    """Align base and head entries; return appended blocks, pr-link corrections, findings and
    the entries inserted before history (judged as new entries too: every finding at once)."""
    from difflib import SequenceMatcher

    old, new = base.blocks, head.blocks
    matcher = SequenceMatcher(None, [b.text for b in old], [b.text for b in new], autojunk=False)
    found: list[Finding] = []
    appended: list[Block] = []
    inserted: list[Block] = []
    corrected: list[tuple[Block, Block]] = []
    end_line = new[-1].end_line if new else 1
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        at_end = i2 == len(old) and j2 == len(new)
        pairs = list(zip(old[i1:i2], new[j1:j2], strict=False))
        # Same-length replacements are edits of those entries, unless at the very end an entry
        # of the head has little in common with the base's: that is a branch behind the base.
        edits = (
            tag == "replace"
            and i2 - i1 == j2 - j1
            and not (
                at_end
                and any(not _pr_link_only(o, n) and not _same_subject(o, n) for o, n in pairs)
            )
        )
        if edits:
            for o, n in pairs:
                if _pr_link_only(o, n):
                    corrected.append((o, n))
                else:
                    behind = (
                        " (if your branch is behind the base, rebase onto it)" if at_end else ""
                    )
                    found.append(
                        Finding(
                            _first_diff_line(o, n),
                            "changed",
                            f"existing entry changed ({_summary(o)})",
                            "history is immutable: restore the entry and append a new one "
                            f"instead{behind}",
                        )
                    )
            continue
        if i2 == len(old) and i1 < i2:
            # The base has entries at its end that the head lacks.
            at = new[j1].line if j1 < len(new) else end_line
            if j1 < j2:
                found.append(
                    Finding(
                        at,
                        "stale",
                        f"the head lacks the last {i2 - i1} entries of the base "
                        f"(from {_summary(old[i1])}): the branch is behind the base",
                        "rebase onto the base (e.g. `git pull --rebase` / "
                        "`git rebase origin/main`) "
                        "and keep your new entries at the end",
                    )
                )
                appended.extend(new[j1:j2])
            else:
                found.append(
                    Finding(
                        at,
                        "deleted",
                        f"the last {i2 - i1} entries of the base are missing "
                        f"(from {_summary(old[i1])})",
                        "history is append-only: restore them (to undo a change, append an entry "
                        "that reverts it); if the branch is behind the base, rebase onto it",
                    )
                )
            continue
        for o in old[i1:i2]:
            at = new[j1].line if j1 < len(new) else end_line
            found.append(
                Finding(
                    at,
                    "deleted",
                    f"existing entry deleted ({_summary(o)})",
                    "history is append-only: restore it; to undo a change, append a new entry "
                    "that reverts it",
                )
            )
        if j1 < j2 and i1 == len(old):
            appended.extend(new[j1:j2])
        elif j1 < j2:
            inserted.extend(new[j1:j2])
            for n in new[j1:j2]:
                found.append(
                    Finding(
                        n.line,
                        "inserted",
                        "entry inserted before existing entries",
                        f"move it to the end of the file (after line {end_line}); history "
                        "above stays as it is",
                    )
                )
    if corrected and appended:
        found.append(_mixed(appended[0].line))
    if not found:
        # Entries line up; the bytes between them (separators) must still be the base's.
        rebuilt = bytearray(head_bytes)
        for o, n in reversed(corrected):
            rebuilt[n.start : n.end] = base_bytes[o.start : o.end]
        cut = appended[0].start - 1 if appended else len(rebuilt)
        if bytes(rebuilt[:cut]) != base_bytes:
            index = _common_prefix(bytes(rebuilt[:cut]), base_bytes)
            found.append(
                Finding(
                    head_bytes.count(b"\n", 0, min(index, len(head_bytes))) + 1,
                    "history-bytes",
                    "history changed between entries (blank or whitespace lines)",
                    "restore the lines exactly as they are in the base",
                )
            )
    return appended, len(corrected), found, inserted


# ---------------------------------------------------------------------------------------------
# The check (pure: bytes in, report out)


def _entry_count(data: bytes) -> int:
    return data.count(b"\n- config-keys:") + data.startswith(b"- config-keys:")


def _base_rejected(base: Changelog, path: str) -> list[Finding]:
    """What makes InferenceX's own parse of the base fail: then it rejects every change.

    Style in the base (blank or whitespace lines, 2-space items, trailing spaces) is history and
    never counts. The finding names the base's line and says it is the base."""
    return [
        Finding(
            f.line,
            "base",
            f"the base version is rejected by InferenceX's validator (base line {f.line}: "
            f"{f.message})",
            "fix the base branch first (InferenceX rejects every change while its base has "
            "this); check --base-ref",
        )
        for f in base.findings
        if f.code not in HISTORY_CODES and f.code not in _HISTORY_TOLERATED
    ][:1]


# Base findings relpipe makes for new text only (security, caps): not InferenceX's rejections.
_HISTORY_TOLERATED = frozenset({"unsafe-char", "alias", "anchor", "tag", "merge-key"})


def _without_link(fields: Mapping[str, object]) -> dict[str, object]:
    return {key: value for key, value in fields.items() if key != "pr-link"}


def _mixed(line: int) -> Finding:
    return Finding(
        line,
        "mixed",
        "pr-link corrections mixed with new entries",
        "commit the pr-link correction and the new entries separately",
    )


def _first_diff_byte_line(base: bytes, head: bytes) -> int:
    return head.count(b"\n", 0, _common_prefix(base, head)) + 1


def _positional(
    old: Sequence[Block], new: Sequence[Block], base: bytes, head: bytes, rules: Rules, path: str
) -> tuple[list[Block], int, list[Finding]] | None:
    """InferenceX's compare_entries + validate_raw_change on entries aligned by position.

    None when an existing entry's content changed or entries were deleted: `_compare` then
    explains what happened (deleted, inserted, branch behind the base)."""
    if len(new) < len(old):
        return None
    found: list[Finding] = []
    corrected = 0
    for o, n in zip(old, new, strict=False):
        if o.text == n.text or o.fields == n.fields:
            continue  # a reformat with the same values: the byte check below locates it
        if _without_link(o.fields) != _without_link(n.fields):
            return None
        link = n.fields.get("pr-link")
        line = n.key_lines.get("pr-link", n.line)
        if rules.repo_url is None:
            raise ValidateError(
                f"{path}:{line}: cannot check a pr-link correction without the repository URL; "
                "pass --repo-url or add an `origin` remote"
            )
        if not isinstance(link, str) or not _canonical_link(rules.repo_url).fullmatch(link):
            found.append(
                Finding(
                    line,
                    "pr-link",
                    f"pr-link correction is not canonical: `{link}` (entry {old.index(o) + 1})",
                    f"a correction of an existing entry must be `{rules.repo_url}/pull/<number>`",
                )
            )
        else:
            corrected += 1
    appended = list(new[len(old) :])
    if corrected and appended:
        found.append(_mixed(appended[0].line))
    at = _first_diff_byte_line(base, head)
    if appended:
        found.append(
            Finding(
                at,
                "history-bytes",
                "history changed above the appended entries (whitespace or formatting at this "
                "line differs from the base)",
                "restore the base's lines byte for byte and only append at the end",
            )
        )
    elif corrected:
        base_lines, head_lines = base.splitlines(keepends=True), head.splitlines(keepends=True)
        if len(base_lines) != len(head_lines):
            found.append(
                Finding(
                    at,
                    "history-bytes",
                    "a pr-link correction adds or deletes lines",
                    "change only the `  pr-link:` line of the entry, in place",
                )
            )
        else:
            for number, (a, b) in enumerate(zip(base_lines, head_lines, strict=True), start=1):
                if a != b and not (
                    a.startswith(b"  pr-link:")
                    and b.startswith(b"  pr-link:")
                    and a.endswith(b"\n")
                    and b.endswith(b"\n")
                ):
                    found.append(
                        Finding(
                            number,
                            "history-bytes",
                            "history changed outside a pr-link line",
                            "restore the line as it is in the base; a correction changes only "
                            "the `  pr-link:` line",
                        )
                    )
    elif not found:
        found.append(
            Finding(
                at,
                "history-bytes",
                "history changed without a new entry or pr-link correction (whitespace or "
                "formatting)",
                "restore the line as it is in the base: historical bytes are immutable",
            )
        )
    return appended, corrected, found


def _sweep_findings(blocks: Sequence[Block], rules: Rules) -> list[Finding]:
    """process_changelog.py's checks of the appended entries with the PR's eval labels."""
    entries = [(b, b.entry) for b in blocks if b.entry is not None]
    append_only = [b for b, e in entries if e.append_only]
    found: list[Finding] = []
    if append_only and len(append_only) != len(entries):
        found.append(
            Finding(
                append_only[0].key_lines.get("append-only", append_only[0].line),
                "append-only",
                "append-only entries cannot share a sweep with regular changelog entries",
                "commit the append-only entry in a PR of its own",
            )
        )
    if append_only and (rules.all_evals or rules.evals_only):
        label = "all-evals" if rules.all_evals else "evals-only"
        found.append(
            Finding(
                append_only[0].key_lines.get("append-only", append_only[0].line),
                "append-only",
                f"append-only sweeps cannot use the {label} modifier",
                f"remove the `{label}` label from the PR, or drop `append-only: true`",
            )
        )
    if append_only and not found and rules.revisions is not None:
        found.extend(_append_only_findings(append_only, rules.revisions))
    return found


def _append_only_findings(
    blocks: Sequence[Block], revisions: Callable[[], tuple[Revision, Revision]]
) -> list[Finding]:
    """process_changelog.py's scope and generated-matrix checks of append-only entries."""
    from relpipe.validate.gate import append_only

    try:
        base, head = revisions()
        selections = []
        for index, block in enumerate(blocks):
            entry = block.entry
            if entry is None:  # never: only parsed entries are append-only
                continue
            try:
                keys = resolve_keys(entry.config_keys, list(head.configs))
            except ChangelogError:
                return []  # an unresolvable key is already a config-key finding
            scenarios = tuple(entry.scenario_type or append_only.SCENARIOS)
            selections.append(
                append_only.Selection(entry=index, keys=tuple(keys), scenarios=scenarios)
            )
        bad = append_only.violation(selections, base, head)
    except (ChangelogError, ValidateError) as exc:
        # process_changelog.py cannot load the masters either: the sweep fails in CI.
        line = blocks[0].key_lines.get("append-only", blocks[0].line)
        message = f"append-only needs the master configs: {exc}"
        return [Finding(line, "append-only", message, "fix the master configs")]
    if bad is None:
        return []
    block = blocks[bad.entry]
    return [
        Finding(
            block.key_lines.get("append-only", block.line), "append-only", bad.message, bad.hint
        )
    ]


def check(
    base: bytes | None,
    head: bytes,
    rules: Rules,
    path: str = DEFAULT_CHANGELOG,
    bases: BaseCache | None = None,
) -> Report:
    """Validate `head` against `base` (None: audit `head` alone as history).

    `bases` remembers bases already found valid (`validate.basecache`): an append on top of one
    skips the base's scan. It never changes a verdict, only how long an append takes."""
    if base is None:
        return _audit(head, rules, path)
    corrections = 0
    inserted: list[Block] = []  # entries inserted before history (diff mode)
    appending = head.startswith(base)
    if appending and (not base or proven_valid(base) or (bases is not None and bases.known(base))):
        # The usual commit: a base proven (or already found) valid, and an append.
        old = None
    else:
        old = scan(base, path)
        rejected = _base_rejected(old, path)
        if rejected:
            return Report(path, "base", len(old.blocks), 0, 0, tuple(rejected), False)
        if appending and bases is not None:
            bases.remember(base)
    if head.startswith(base):
        mode = "append"
        changelog = parse_appended(base, head, path)
        appended: list[Block] = list(changelog.blocks)
        first = base.count(b"\n") + 1
        # The separator before the first new entry is judged as InferenceX does: after a base
        # that ends in a blank line the entry follows at once.
        first_entry = appended[0].line if appended else first
        found = list(changelog.findings)
        if base.endswith(b"\n\n"):
            # After a base that ends in a blank line, InferenceX wants the entry at once.
            found = [
                f
                for f in found
                if not (f.code in ("separator", "whitespace-line") and f.line <= first_entry)
            ]
            if appended and not head[len(base) :].startswith(b"- config-keys:"):
                found.append(
                    Finding(
                        first_entry,
                        "separator",
                        "the base already ends in a blank line: the new entry must follow it "
                        "directly",
                        "remove the blank lines before the new entry",
                    )
                )
        found = _graded(found, rules)
    else:
        mode = "diff"
        new = scan(head, path)
        old = old or scan(base, path)
        fatal = [f for f in new.findings if f.code not in HISTORY_CODES | ENTRY_CODES]
        fatal = [f for f in fatal if f.code not in ("duplicate-key", "unsafe-char")]
        if fatal:
            return Report(path, mode, len(new.blocks), 0, 0, tuple(_graded(fatal, rules)), False)
        positional = _positional(old.blocks, new.blocks, base, head, rules, path)
        if positional is None:
            appended, corrections, found, inserted = _compare(old, new, base, head)
            if not any(f.severity == ERROR for f in found):
                found.append(
                    Finding(
                        new.blocks[0].line if new.blocks else 1,
                        "changed",
                        "existing entries changed",
                        "history is immutable: restore the base's entries, append new ones",
                    )
                )
        else:
            appended, corrections, found = positional
        new_lines = {n for b in (*appended, *inserted) for n in range(b.line, b.end_line + 2)}
        found.extend(f for f in new.findings if f.line in new_lines)
        found = _graded(found, rules)
    if appended or inserted:
        found.extend(_new_entry_findings([*appended, *inserted], rules, path))
    if appended:
        found.extend(_sweep_findings(appended, rules))
    found.sort(key=lambda f: f.line)
    unique = list({(f.line, f.code, f.message): f for f in found}.values())
    return Report(
        path,
        mode,
        _entry_count(head),
        len(appended),
        corrections,
        tuple(unique),
        rules.config_keys is not None,
    )


def _audit(head: bytes, rules: Rules, path: str) -> Report:
    """--full: one file as history. Errors are what InferenceX's parse rejects (and security)."""
    changelog = scan(head, path, style=_style_severity(rules))
    found = _graded(changelog.findings, rules, history=True)
    text = head.decode("utf-8", "replace")
    guessed = _GITHUB_REPO.search(text)
    repo = rules.repo_url or (guessed.group(0) if guessed else "https://github.com/OWNER/REPO")
    prefix, audit = f"\n  pr-link: {repo}/pull/", Rules(repo, None, None)
    blocks = changelog.blocks
    # An entry a grammar proved has one pr-link line, and so has any other that passes
    # _has_canonical_link: when the canonical link lines, counted in C, are as many as the
    # entries, every entry has one and none needs a look of its own.
    others = [block for block in blocks if not block.proven]
    if blocks and all(_has_canonical_link(block, prefix) for block in others):
        good = re.findall(re.escape(prefix) + r"[0-9]+\n", "\n" + text)
        if len(good) == len(blocks):
            blocks = ()
    links = []
    for block in blocks:
        # The link first: asking for `entry` parses an entry the grammar did not need to.
        if not _has_canonical_link(block, prefix) and (block.proven or block.entry is not None):
            link = _pr_link_finding(block, audit, path)
            if link is not None:
                links.append(link)
    if links:  # scan's findings are in line order already
        found.extend(_graded(links, rules, history=True))
        found.sort(key=lambda f: f.line)
    return Report(path, "full", len(changelog.blocks), 0, 0, tuple(found), False)


# For a history audit without --repo-url or origin: the repository the first link names.
_GITHUB_REPO = re.compile(r"(?<=\n  pr-link: )https://github\.com/[^/\s]+/[^/\s]+(?=/pull/)")


# ---------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="validate_perf_changelog",
        # A fixed width: the default formatter imports shutil for the terminal size on every
        # add_argument, a measurable share of a commit hook's start-up.
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100),
        description="Check perf-changelog.yaml: immutable history, appended entries valid.",
    )
    parser.add_argument(
        "--base-ref",
        help="git ref of the base (default: PRE_COMMIT_FROM_REF, "
        "else merge-base with the upstream branch, else HEAD)",
    )
    head = parser.add_mutually_exclusive_group()
    head.add_argument("--head-ref", help="git ref of the head (default: the index)")
    head.add_argument(
        "--worktree", action="store_true", help="use the file in the working tree as the head"
    )
    parser.add_argument(
        "--full", action="store_true", help="audit the whole head file as history (no base)"
    )
    parser.add_argument(
        "--changelog-file",
        metavar="F",
        help="the changelog (default: the file pre-commit passes, else the one the layout has: "
        f"{', '.join(CHANGELOG_PATHS)})",
    )
    parser.add_argument(
        "--pr-number", type=int, metavar="N", help="PR mode: accept this PR's link or XXX"
    )
    parser.add_argument(
        "--repo-url", metavar="URL", help="repository URL for pr-links (default: origin)"
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        metavar="GLOB",
        help=f"master configs (default: the layout's, {', '.join(MASTER_GLOBS)}); for an "
        "append-only entry they and the runners.yaml beside them are read at the base and the head",
    )
    parser.add_argument(
        "--skip-config-keys",
        action="store_true",
        help="do not resolve config keys (nor check append-only entries against the configs)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="house-style findings beyond InferenceX's rules are errors (default: warnings)",
    )
    parser.add_argument(
        "--all-evals",
        action="store_true",
        help="the PR carries the all-evals label (as InferenceX's CI passes it)",
    )
    parser.add_argument(
        "--evals-only",
        action="store_true",
        help="the PR carries the evals-only label (as InferenceX's CI passes it)",
    )
    parser.add_argument("--json", action="store_true", help="print every finding as JSON")
    parser.add_argument(
        "filenames",
        nargs="*",
        metavar="FILE",
        help="the changelog as pre-commit passes it (other files are ignored)",
    )
    return parser


def _read_worktree(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ValidateError(f"cannot read {path}: {exc.strerror}; check --changelog-file") from exc


def _read_refs(refs: Sequence[str], path: str, explicit: bool) -> list[bytes | None]:
    """Blobs of `path` at `refs` (INDEX for the staged file); None where the file is absent.

    A missing blob at a named ref is only "file absent" if the ref itself exists: a mistyped
    ref, or one a shallow clone lacks, is a usage error rather than an empty base.
    """
    blobs = githook.read_blobs([githook.spec(ref, path) for ref in refs])
    for ref, blob in zip(refs, blobs, strict=False):
        if (
            blob is None
            and ref != githook.INDEX
            and (explicit or ref != "HEAD")
            and not githook.ref_exists(ref)
        ):
            raise ValidateError(
                f"git ref `{ref}` not found; check the name (in a shallow clone, "
                f"`git fetch --depth=1 origin {ref}` first)"
            )
    return blobs


def _inputs(
    args: argparse.Namespace,
) -> tuple[bytes | None, bytes, str, tuple[str, str | None] | None]:
    """(base, head, description of where they came from, (base ref, head ref: a ref, INDEX, or
    None for the working tree) or None without a base) as the options and environment say."""
    path = args.changelog_path
    base_ref, head_ref = args.base_ref, args.head_ref
    if base_ref is None and head_ref is None and not args.worktree:
        from_ref, to_ref = (
            os.environ.get("PRE_COMMIT_FROM_REF"),
            os.environ.get("PRE_COMMIT_TO_REF"),
        )
        if from_ref and to_ref:
            base_ref, head_ref = from_ref, to_ref
    explicit = bool(base_ref or head_ref)
    if args.full:
        if not head_ref:
            return None, _read_worktree(path), "working tree", None
        (head,) = _read_refs([head_ref], path, True)
        if head is None:
            raise ValidateError(f"{path} does not exist at {head_ref}; check --head-ref")
        return None, head, head_ref, None
    if base_ref is None:
        base_ref = githook.default_base()
    refs = [base_ref] if args.worktree else [base_ref, head_ref or githook.INDEX]
    try:
        blobs = _read_refs(refs, path, explicit)
    except ValidateError:
        if explicit or githook.in_repository():
            raise
        return (
            None,
            _read_worktree(path),
            "working tree (no git repository: full-file audit)",
            None,
        )
    if args.worktree:
        head = _read_worktree(path)
    elif blobs[1] is None:
        looked = ""
        if args.changelog_file is None and _layout(args).layout is None:
            looked = f" (no layout found: looked for {', '.join(_layout(args).looked_for)})"
        raise ValidateError(
            f"{path} does not exist in {head_ref or 'the index'}{looked}; "
            "stage it, or check --head-ref/--changelog-file"
        )
    else:
        head = blobs[1]
    base = blobs[0] or b""  # absent at the base (new file, or no commit yet): all of it is new
    source = f"{base_ref} -> {head_ref or ('working tree' if args.worktree else 'index')}"
    return base, head, source, (base_ref, None if args.worktree else head_ref or githook.INDEX)


def _config_paths(args: argparse.Namespace) -> list[str] | None:
    """The master config files in the working tree (None: config keys are not checked)."""
    if args.skip_config_keys:
        return None
    import glob

    patterns = args.configs or list(_layout(args).masters)
    paths = sorted({p for pattern in patterns for p in glob.glob(pattern)})
    if not paths:
        if args.configs:
            raise ValidateError(
                f"--configs {' '.join(args.configs)} matches no file; check the glob"
            )
        return None
    return paths


def _layout(args: argparse.Namespace) -> BenchmarkFiles:
    """The checkout's changelog and masters (changelog/layout.py), found once per run."""
    if getattr(args, "layout", None) is None:
        args.layout = find_benchmark_files(".")
    return args.layout  # type: ignore[no-any-return]


def _changelog_path(args: argparse.Namespace) -> str:
    """--changelog-file, else the changelog pre-commit passed, else the layout's."""
    if args.changelog_file:
        return args.changelog_file  # type: ignore[no-any-return]
    passed = [f for f in args.filenames if os.path.basename(f) == DEFAULT_CHANGELOG]
    if len(set(passed)) > 1:
        raise ValidateError(
            f"two changelogs in one change ({', '.join(sorted(set(passed)))}): the checkout mixes "
            "layouts; keep one, or pass --changelog-file"
        )
    return passed[0] if passed else _layout(args).changelog


def _config_keys(paths: Sequence[str]) -> Sequence[str]:
    keys: list[str] = []
    for path in paths:
        keys.extend(master_keys(path))  # type: ignore[arg-type]
    return keys


def _revisions(
    paths: Sequence[str], base_ref: str, head_ref: str | None
) -> Callable[[], tuple[Revision, Revision]]:
    """A loader of the masters (the files `paths` names) and the runners.yaml beside them at
    the base and the head (a ref, the index, or None: the working tree), in one git process."""

    def load() -> tuple[Revision, Revision]:
        from relpipe.validate.gate.append_only import revision

        files = [*paths, os.path.join(os.path.dirname(paths[0]), "runners.yaml")]
        refs = [base_ref] if head_ref is None else [base_ref, head_ref]
        blobs = githook.read_blobs([githook.spec(ref, f) for ref in refs for f in files])
        sides = [blobs[: len(files)]]
        if head_ref is None:
            sides.append([_read_optional(f) for f in files])
        else:
            sides.append(blobs[len(files) :])
        out = []
        head = "index" if head_ref == githook.INDEX else head_ref or "working tree"
        for side, ref in zip(sides, (base_ref, head), strict=True):
            named = [(f"{ref}:{f}", blob) for f, blob in zip(files, side, strict=True)]
            masters = [(where, blob) for where, blob in named[:-1] if blob is not None]
            where, blob = named[-1]
            runners = None if blob is None else (where, blob)
            out.append(revision(masters, runners))
        return out[0], out[1]

    return load


def _read_optional(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _render_json(report: Report, source: str) -> str:
    from relpipe.core.sanitize import json_text

    return json_text(
        {
            "ok": report.ok,
            "file": report.path,
            "source": source,
            "mode": report.mode,
            "entries": report.entries,
            "appended": report.appended,
            "corrections": report.corrections,
            "config_keys_checked": report.configs_checked,
            "findings": [
                {
                    "severity": f.severity,
                    "line": f.line,
                    "code": f.code,
                    "message": f.message,
                    "hint": f.hint,
                }
                for f in report.findings
            ],
        },
        indent=2,
    )


def _without_collector(run: Callable[..., Report], *args: object) -> Report:
    """`run(*args)` with Python's cyclic garbage collector paused.

    A check builds no reference cycles (tests/changelog/test_entries.py holds it to that), so
    the collector would free nothing; but its passes over a heap growing by hundreds of thousands
    of findings cost as much as the parse of a large file (4 of 9 s on a 9 MB one)."""
    import gc

    if not gc.isenabled():
        return run(*args)
    gc.disable()
    try:
        return run(*args)
    finally:
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gate; exit 0 valid, 1 invalid, 2 usage or environment error, 3 unexpected (one
    line and the path of a log with the traceback, as the `relpipe` command line does)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("validate_perf_changelog: interrupted", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - the one handler of unexpected errors (exit 3 + log)
        from relpipe.core.errors import report_unexpected

        return report_unexpected("validate_perf_changelog", sys.argv[1:] if argv is None else argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.pr_number is not None and args.pr_number < 1:
        print("validate_perf_changelog: --pr-number must be a positive integer", file=sys.stderr)
        return 2
    try:
        args.changelog_path = _changelog_path(args)
        base, head, source, refs = _inputs(args)
        changed = base is None or head != base
        repo_url = githook.canonical_repo_url(args.repo_url) if args.repo_url else None
        if repo_url is None and changed:
            repo_url = githook.origin_url()
        paths = _config_paths(args) if changed and base is not None else None
        rules = Rules(
            repo_url,
            args.pr_number,
            None if paths is None else _config_keys(paths),
            strict=args.strict,
            all_evals=args.all_evals,
            evals_only=args.evals_only,
            revisions=None if paths is None or refs is None else _revisions(paths, *refs),
        )
        report = _without_collector(check, base, head, rules, args.changelog_path, BaseCache())
    except (ValidateError, ChangelogError) as exc:
        print(f"validate_perf_changelog: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(_render_json(report, source))
    else:
        errors = 0 if report.ok else sum(f.severity == ERROR for f in report.findings)
        verdict = "ok" if report.ok else f"{errors} error(s)"
        lines = [finding.format(report.path) for finding in report.findings]
        lines.append(
            f"{report.path}: {verdict} ({report.mode}: {report.appended} appended, "
            f"{report.corrections} pr-link correction(s), {report.entries} entries; {source})"
        )
        lines.append("")  # the final newline, without copying the text to add it
        # One write: a history audit may print hundreds of thousands of warnings.
        sys.stdout.write("\n".join(lines))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
