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

import re
from collections.abc import Callable, Sequence
from functools import cached_property

from ...changelog.configs.load import resolve_key, resolve_keys
from ...changelog.entry import (
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
from ...changelog.errors import ChangelogError
from ...changelog.repository.era import CHANGELOG_NAME
from ...core.record import Record
from ..errors import ValidateError
from . import alignment
from .basecache import BaseCache

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from .append_only import Revision

DEFAULT_CHANGELOG = CHANGELOG_NAME
PLACEHOLDER = "XXX"  # InferenceX's PR_LINK_PLACEHOLDERS (both validators): XXX, <repo>/pull/XXX


def placeholders(repo_url: str) -> tuple[str, str]:
    """The pr-links a PR's entry may carry before the PR exists, for the repository `repo_url`."""
    return PLACEHOLDER, f"{repo_url}/pull/{PLACEHOLDER}"


NO_EVALS = "no-evals"  # a 2026-10 field (changelog/entry/model.py)


class Report(Record):
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


class Policy(Record):
    """The checks that depend on where the changelog lives and how CI runs the sweep."""

    repo_url: str | None
    pr_number: int | None
    # A PR whose number is not known yet (a commit on a feature branch): placeholders and any
    # canonical PR link pass, as InferenceX's validator passes them on that PR's run. A callable
    # is asked only when a link is not canonical (the usual commit pays no git call for it).
    pull_request: bool | Callable[[], bool] = False
    config_keys: Sequence[str] | None  # None: config keys are not checked
    strict: bool = False  # house-style findings are errors, not warnings
    all_evals: bool = False  # the PR's `all-evals` label, as InferenceX's CI passes it
    evals_only: bool = False  # the PR's `evals-only` label
    # The master configs (and runners.yaml) at the base and the head, read only when an
    # appended entry is append-only (validate.append_only); None: those checks are skipped.
    revisions: Callable[[], tuple[Revision, Revision]] | None = None
    # Whose ChangelogEntry judges new entries: "2026-10" (infx/, knows `no-evals`) or "2026-08"
    # (utils/, rejects it). The command line takes it from the layout (SCHEMA_2026_08 below).
    schema: str = "2026-10"


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


def _graded(findings: Sequence[Finding], policy: Policy, history: bool = False) -> list[Finding]:
    """Each finding with its severity: style is a warning unless --strict."""
    severity = dict.fromkeys(HISTORY_CODES if history else STYLE_CODES, _style_severity(policy))
    # A finding made with its severity already (scan's `style`) is kept, not copied.
    return [
        f
        if f.severity == severity.get(f.code, ERROR)
        else Finding(
            line=f.line,
            code=f.code,
            message=f.message,
            hint=f.hint,
            severity=severity.get(f.code, ERROR),
        )
        for f in findings
    ]


def _style_severity(policy: Policy) -> str:
    return ERROR if policy.strict else WARNING


# ---------------------------------------------------------------------------------------------
# pr-link and config-key rules for new entries


def _has_canonical_link(block: Block, prefix: str) -> bool:
    """Cheap test of the common case `  pr-link: <repo>/pull/<N>` (no regex, no parse)."""
    text = block.text
    start = text.find(prefix)
    if start < 0 or text.count("\n  pr-link:") != 1:
        return False
    number = text[start + len(prefix) : text.find("\n", start + len(prefix))]
    return number.isdigit() and number.isascii()


def _pr_link_finding(block: Block, policy: Policy, path: str) -> Finding | None:
    link = block.scalar("pr-link")
    if not isinstance(link, str) or not (block.proven or block.entry is not None):
        return None  # the schema finding already covers it
    line = block.line + block.text[: block.text.find("\n  pr-link:") + 1].count("\n")
    if policy.repo_url is None:
        raise ValidateError(
            f"{path}:{line}: cannot check pr-link without the repository URL; pass --repo-url "
            "or add an `origin` remote"
        )
    canonical = alignment.canonical_link(policy.repo_url)
    if policy.pr_number is not None:
        expected = f"{policy.repo_url}/pull/{policy.pr_number}"
        if link in (expected, *placeholders(policy.repo_url)):
            return None
        return Finding(
            line=line,
            code="pr-link",
            message=f"pr-link `{link}` is not this PR's link",
            hint=f"write `pr-link: {expected}` (or the XXX placeholder until the PR exists)",
        )
    if canonical.fullmatch(link):
        return None
    pull_request = policy.pull_request() if callable(policy.pull_request) else policy.pull_request
    if pull_request and link in placeholders(policy.repo_url):
        return None
    if pull_request:
        return Finding(
            line=line,
            code="pr-link",
            message=f"pr-link `{link}` is neither a PR link of {policy.repo_url} nor a placeholder",
            hint=f"write `pr-link: {policy.repo_url}/pull/XXX` until the PR exists, then its "
            "number",
        )
    return Finding(
        line=line,
        code="pr-link",
        message=f"pr-link `{link}` is not a canonical PR link",
        hint=f"write `pr-link: {policy.repo_url}/pull/<number>`; placeholders such as XXX are "
        "accepted on a feature branch and in PR mode (--pr-number N), never on the base branch",
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
                    line=_item_line(block, "config-keys", index),
                    code="config-key",
                    message=str(exc).split(";")[0],
                    hint="use a key defined in the master configs (or a `*` glob that matches one)",
                )
            )
    return found


def _schema_2026_08(block: Block) -> Finding | None:
    """The 2026-08 ChangelogEntry has no `no-evals` (extra fields are forbidden)."""
    if f"\n  {NO_EVALS}" not in block.text or NO_EVALS not in block.fields:
        return None
    return Finding(
        line=block.key_lines.get(NO_EVALS, block.line),
        code="schema",
        message=f"unknown key `{NO_EVALS}` (InferenceX added it in 2026-10; "
        "this repository's layout "
        "validates entries with the 2026-08 ChangelogEntry)",
        hint=f"remove `{NO_EVALS}`, or move the repository to the 2026-10 layout first",
    )


def _new_entry_findings(blocks: Sequence[Block], policy: Policy, path: str) -> list[Finding]:
    found: list[Finding] = []
    for block in blocks:
        if policy.schema == "2026-08":
            older = _schema_2026_08(block)
            if older is not None:
                found.append(older)
        link = _pr_link_finding(block, policy, path)
        if link is not None:
            found.append(link)
        if policy.config_keys is not None:
            found.extend(_config_findings(block, policy.config_keys))
    return found


# ---------------------------------------------------------------------------------------------
# The check (pure: bytes in, report out)


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


def _entry_count(data: bytes) -> int:
    return data.count(b"\n- config-keys:") + data.startswith(b"- config-keys:")


def _base_rejected(base: Changelog, path: str) -> list[Finding]:
    """What makes InferenceX's own parse of the base fail: then it rejects every change.

    Style in the base (blank or whitespace lines, 2-space items, trailing spaces) is history and
    never counts. The finding names the base's line and says it is the base."""
    return [
        Finding(
            line=f.line,
            code="base",
            message=f"the base version is rejected by InferenceX's validator (base line {f.line}: "
            f"{f.message})",
            hint="fix the base branch first (InferenceX rejects every change while its base has "
            "this); check --base-ref",
        )
        for f in base.findings
        if f.code not in HISTORY_CODES and f.code not in _HISTORY_TOLERATED
    ][:1]


# Base findings relpipe makes for new text only (security, caps): not InferenceX's rejections.
_HISTORY_TOLERATED = frozenset({"unsafe-char", "alias", "anchor", "tag", "merge-key"})


def _sweep_findings(blocks: Sequence[Block], policy: Policy) -> list[Finding]:
    """process_changelog.py's checks of the appended entries with the PR's eval labels."""
    entries = [(b, b.entry) for b in blocks if b.entry is not None]
    append_only = [b for b, e in entries if e.append_only]
    found: list[Finding] = []
    if append_only and len(append_only) != len(entries):
        found.append(
            Finding(
                line=append_only[0].key_lines.get("append-only", append_only[0].line),
                code="append-only",
                message="append-only entries cannot share a sweep with regular changelog entries",
                hint="commit the append-only entry in a PR of its own",
            )
        )
    if append_only and (policy.all_evals or policy.evals_only):
        label = "all-evals" if policy.all_evals else "evals-only"
        found.append(
            Finding(
                line=append_only[0].key_lines.get("append-only", append_only[0].line),
                code="append-only",
                message=f"append-only sweeps cannot use the {label} modifier",
                hint=f"remove the `{label}` label from the PR, or drop `append-only: true`",
            )
        )
    if append_only and not found and policy.revisions is not None:
        found.extend(_append_only_findings(append_only, policy.revisions))
    return found


def _append_only_findings(
    blocks: Sequence[Block], revisions: Callable[[], tuple[Revision, Revision]]
) -> list[Finding]:
    """process_changelog.py's scope and generated-matrix checks of append-only entries."""
    from . import (
        append_only,  # deferred: not on the commit hook's usual path (start-up)
    )

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
        return [
            Finding(line=line, code="append-only", message=message, hint="fix the master configs")
        ]
    if bad is None:
        return []
    block = blocks[bad.entry]
    return [
        Finding(
            line=block.key_lines.get("append-only", block.line),
            code="append-only",
            message=bad.message,
            hint=bad.hint,
        )
    ]


def _appended(
    base: bytes, head: bytes, policy: Policy, path: str
) -> tuple[list[Block], list[Finding]]:
    """The usual commit (the base is a byte prefix of the head): the appended entries and their
    findings, the separator before the first judged as InferenceX does."""
    changelog = parse_appended(base, head, path)
    appended: list[Block] = list(changelog.blocks)
    first_entry = appended[0].line if appended else base.count(b"\n") + 1
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
                    line=first_entry,
                    code="separator",
                    message="the base already ends in a blank line: "
                    "the new entry must follow it directly",
                    hint="remove the blank lines before the new entry",
                )
            )
    return appended, _lenient_gaps(_graded(found, policy), head, appended, policy)


def _lenient_gaps(
    found: list[Finding], head: bytes, appended: Sequence[Block], policy: Policy
) -> list[Finding]:
    """validate_raw_change wants only the line before each later appended entry empty and the one
    before that not (whitespace-only lines above it pass): such a gap is house style there."""
    lines: set[int] = set()
    for previous, block in zip(appended, appended[1:], strict=False):
        prefix = head[: block.start]
        if prefix.endswith(b"\n\n") and not prefix.endswith(b"\n\n\n"):
            lines.update(range(previous.end_line + 1, block.line + 1))
    if not lines:
        return found
    style = _style_severity(policy)
    return [
        Finding(line=f.line, code=f.code, message=f.message, hint=f.hint, severity=style)
        if f.code in ("whitespace-line", "separator") and f.line in lines
        else f
        for f in found
    ]


def _diff(
    base: bytes, head: bytes, old: Changelog | None, policy: Policy, path: str
) -> Report | tuple[list[Block], list[Block], int, list[Finding]]:
    """History changed (the base is not a prefix): appended and inserted entries, pr-link
    corrections and every finding; a Report at once when the head cannot be read as entries."""
    new = scan(head, path)
    old = old or scan(base, path)
    fatal = [f for f in new.findings if f.code not in HISTORY_CODES | ENTRY_CODES]
    fatal = [f for f in fatal if f.code not in ("duplicate-key", "unsafe-char")]
    if fatal:
        return _unappended(path, "diff", len(new.blocks), tuple(_graded(fatal, policy)))
    inserted: list[Block] = []
    aligned = alignment.positional(old.blocks, new.blocks, base, head, policy, path)
    if aligned is None:
        appended, corrections, found, inserted = alignment.compare(old, new, base, head)
        if not any(f.severity == ERROR for f in found):
            found.append(
                Finding(
                    line=new.blocks[0].line if new.blocks else 1,
                    code="changed",
                    message="existing entries changed",
                    hint="history is immutable: restore the base's entries, append new ones",
                )
            )
    else:
        appended, corrections, found = aligned
    new_lines = {n for b in (*appended, *inserted) for n in range(b.line, b.end_line + 2)}
    found.extend(f for f in new.findings if f.line in new_lines)
    graded = _lenient_gaps(_graded(found, policy), head, appended, policy)
    return appended, inserted, corrections, graded


def check(
    base: bytes | None,
    head: bytes,
    policy: Policy,
    path: str = DEFAULT_CHANGELOG,
    bases: BaseCache | None = None,
) -> Report:
    """Validate `head` against `base` (None: audit `head` alone as history).

    `bases` remembers bases already found valid (`validate.basecache`): an append on top of one
    skips the base's scan. It never changes a verdict, only how long an append takes."""
    if base is None:
        return _audit(head, policy, path)
    corrections = 0
    inserted: list[Block] = []  # entries inserted before history (diff mode)
    appending = head.startswith(base)
    old: Changelog | None
    # The usual commit: a base already found valid (the real file, with its whitespace lines,
    # is never proven by the grammar: the cache is asked first) or proven valid, and an append.
    if appending and (not base or (bases is not None and bases.known(base)) or proven_valid(base)):
        old = None
    else:
        old = scan(base, path)
        rejected = _base_rejected(old, path)
        if rejected:
            return _unappended(path, "base", len(old.blocks), tuple(rejected))
        if appending and bases is not None:
            bases.remember(base)
    if head.startswith(base):
        mode = "append"
        appended, found = _appended(base, head, policy, path)
    else:
        mode = "diff"
        diff = _diff(base, head, old, policy, path)
        if isinstance(diff, Report):
            return diff
        appended, inserted, corrections, found = diff
    if appended or inserted:
        found.extend(_new_entry_findings([*appended, *inserted], policy, path))
    if appended:
        found.extend(_sweep_findings(appended, policy))
    found.sort(key=lambda f: f.line)
    unique = list({(f.line, f.code, f.message): f for f in found}.values())
    return Report(
        path=path,
        mode=mode,
        entries=_entry_count(head),
        appended=len(appended),
        corrections=corrections,
        findings=tuple(unique),
        configs_checked=policy.config_keys is not None,
    )


def _unappended(path: str, mode: str, entries: int, findings: tuple[Finding, ...]) -> Report:
    """A report with no entry appended or corrected: a head or base InferenceX cannot read, or a
    `--full` audit of one file."""
    return Report(
        path=path,
        mode=mode,
        entries=entries,
        appended=0,
        corrections=0,
        findings=findings,
        configs_checked=False,
    )


def _audit(head: bytes, policy: Policy, path: str) -> Report:
    """--full: one file as history. Errors are what InferenceX's parse rejects (and security)."""
    changelog = scan(head, path, style=_style_severity(policy))
    found = _graded(changelog.findings, policy, history=True)
    text = head.decode("utf-8", "replace")
    guessed = _GITHUB_REPO.search(text)
    repo = policy.repo_url or (guessed.group(0) if guessed else "https://github.com/OWNER/REPO")
    prefix, audit = (
        f"\n  pr-link: {repo}/pull/",
        Policy(repo_url=repo, pr_number=None, config_keys=None),
    )
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
        found.extend(_graded(links, policy, history=True))
        found.sort(key=lambda f: f.line)
    return _unappended(path, "full", len(changelog.blocks), tuple(found))


# For a history audit without --repo-url or origin: the repository the first link names.
_GITHUB_REPO = re.compile(r"(?<=\n  pr-link: )https://github\.com/[^/\s]+/[^/\s]+(?=/pull/)")
