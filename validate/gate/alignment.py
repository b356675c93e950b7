"""The changelog aligned base -> head: which entries were appended, corrected, changed,
deleted or inserted, and whether the bytes between them are still the base's.

`positional` is InferenceX's `compare_entries` + `validate_raw_change` on entries aligned by
position (its verdict); `compare` explains a change it rejects (an entry deleted or inserted, a
branch behind its base) by aligning the entries as sequences. Part of the hook: standard library
and PyYAML only (`difflib` loads only when history changed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache

from ...changelog.entry import Block, Changelog, Finding
from ..errors import ValidateError

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from .hook import Policy


@cache
def canonical_link(repo_url: str) -> re.Pattern[str]:
    # `\d+` as InferenceX's CANONICAL_PR_LINK has it (a str pattern: any Unicode digit).
    return re.compile(re.escape(repo_url) + r"/pull/\d+")


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


def compare(
    base: Changelog,
    head: Changelog,
    base_bytes: bytes,
    head_bytes: bytes,
) -> tuple[list[Block], int, list[Finding], list[Block]]:
    """Align base and head entries; return appended blocks, pr-link corrections, findings and
    the entries inserted before history (judged as new entries too: every finding at once)."""
    from difflib import SequenceMatcher  # deferred: not on the commit hook's usual path (start-up)

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
                    found.append(_changed(o, n, at_end))
            continue
        if i2 == len(old) and i1 < i2:
            # The base has entries at its end that the head lacks.
            at = new[j1].line if j1 < len(new) else end_line
            found.append(_missing_tail(old[i1], i2 - i1, at, behind=j1 < j2))
            appended.extend(new[j1:j2])
            continue
        for o in old[i1:i2]:
            at = new[j1].line if j1 < len(new) else end_line
            found.append(
                Finding(
                    line=at,
                    code="deleted",
                    message=f"existing entry deleted ({_summary(o)})",
                    hint="history is append-only: restore it; to undo a change, append a new entry "
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
                        line=n.line,
                        code="inserted",
                        message="entry inserted before existing entries",
                        hint=f"move it to the end of the file (after line {end_line}); history "
                        "above stays as it is",
                    )
                )
    if corrected and appended:
        found.append(_mixed(appended[0].line))
    if not found:
        found.extend(_separators(base_bytes, head_bytes, corrected, appended))
    return appended, len(corrected), found, inserted


def _changed(old: Block, new: Block, at_end: bool) -> Finding:
    behind = " (if your branch is behind the base, rebase onto it)" if at_end else ""
    return Finding(
        line=_first_diff_line(old, new),
        code="changed",
        message=f"existing entry changed ({_summary(old)})",
        hint=f"history is immutable: restore the entry and append a new one instead{behind}",
    )


def _missing_tail(first: Block, count: int, at: int, behind: bool) -> Finding:
    """The base's last `count` entries (from `first`) are not in the head: a branch behind the
    base when the head has other entries in their place, else deleted."""
    if behind:
        return Finding(
            line=at,
            code="stale",
            message=f"the head lacks the last {count} entries of the base "
            f"(from {_summary(first)}): the branch is behind the base",
            hint="rebase onto the base (e.g. `git pull --rebase` / `git rebase origin/main`) "
            "and keep your new entries at the end",
        )
    return Finding(
        line=at,
        code="deleted",
        message=f"the last {count} entries of the base are missing (from {_summary(first)})",
        hint="history is append-only: restore them (to undo a change, append an entry "
        "that reverts it); if the branch is behind the base, rebase onto it",
    )


def _separators(
    base: bytes, head: bytes, corrected: Sequence[tuple[Block, Block]], appended: Sequence[Block]
) -> list[Finding]:
    """Entries line up; the bytes between them (separators) must still be the base's."""
    rebuilt = bytearray(head)
    for o, n in reversed(corrected):
        rebuilt[n.start : n.end] = base[o.start : o.end]
    cut = appended[0].start - 1 if appended else len(rebuilt)
    if bytes(rebuilt[:cut]) == base:
        return []
    index = _common_prefix(bytes(rebuilt[:cut]), base)
    return [
        Finding(
            line=head.count(b"\n", 0, min(index, len(head))) + 1,
            code="history-bytes",
            message="history changed between entries (blank or whitespace lines)",
            hint="restore the lines exactly as they are in the base",
        )
    ]


def _without_link(fields: Mapping[str, object]) -> dict[str, object]:
    return {key: value for key, value in fields.items() if key != "pr-link"}


def _mixed(line: int) -> Finding:
    return Finding(
        line=line,
        code="mixed",
        message="pr-link corrections mixed with new entries",
        hint="commit the pr-link correction and the new entries separately",
    )


def _first_diff_byte_line(base: bytes, head: bytes) -> int:
    return head.count(b"\n", 0, _common_prefix(base, head)) + 1


def _correction_lines(base: bytes, head: bytes, at: int) -> list[Finding]:
    """validate_raw_change for pr-link corrections: the same lines, and every changed one a
    `  pr-link:` line (each other changed line is a finding)."""
    base_lines, head_lines = base.splitlines(keepends=True), head.splitlines(keepends=True)
    if len(base_lines) != len(head_lines):
        return [
            Finding(
                line=at,
                code="history-bytes",
                message="a pr-link correction adds or deletes lines",
                hint="change only the `  pr-link:` line of the entry, in place",
            )
        ]
    return [
        Finding(
            line=number,
            code="history-bytes",
            message="history changed outside a pr-link line",
            hint="restore the line as it is in the base; a correction changes only the "
            "`  pr-link:` line",
        )
        for number, (a, b) in enumerate(zip(base_lines, head_lines, strict=True), start=1)
        if a != b
        and not (
            a.startswith(b"  pr-link:")
            and b.startswith(b"  pr-link:")
            and a.endswith(b"\n")
            and b.endswith(b"\n")
        )
    ]


def positional(
    old: Sequence[Block], new: Sequence[Block], base: bytes, head: bytes, policy: Policy, path: str
) -> tuple[list[Block], int, list[Finding]] | None:
    """InferenceX's compare_entries + validate_raw_change on entries aligned by position.

    None when an existing entry's content changed or entries were deleted: `compare` then
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
        if policy.repo_url is None:
            raise ValidateError(
                f"{path}:{line}: cannot check a pr-link correction without the repository URL; "
                "pass --repo-url or add an `origin` remote"
            )
        if not isinstance(link, str) or not canonical_link(policy.repo_url).fullmatch(link):
            found.append(
                Finding(
                    line=line,
                    code="pr-link",
                    message=f"pr-link correction is not canonical: `{link}` "
                    f"(entry {old.index(o) + 1})",
                    hint="a correction of an existing entry must be "
                    f"`{policy.repo_url}/pull/<number>`",
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
                line=at,
                code="history-bytes",
                message="history changed above the appended entries "
                "(whitespace or formatting at this line differs from the base)",
                hint="restore the base's lines byte for byte and only append at the end",
            )
        )
    elif corrected:
        found.extend(_correction_lines(base, head, at))
    elif not found:
        found.append(
            Finding(
                line=at,
                code="history-bytes",
                message="history changed without a new entry or pr-link correction (whitespace or "
                "formatting)",
                hint="restore the line as it is in the base: historical bytes are immutable",
            )
        )
    return appended, corrected, found
