"""Code owners and the reviewer's sign-off (checklist items 0 and 5 of the review bot).

owners: `.github/CODEOWNERS` with GitHub's semantics — gitignore-style patterns, the LAST matching
line wins and owners do not accumulate. With a sign-off (`--signoff`), its `Signed:` user must own
every changed path whose winning line is specific; a path owned only by the catch-all `*` is
satisfied by any user listed in CODEOWNERS. Team membership needs GitHub's API: a signer who is
not listed by name but a team is, is a WARN, never a PASS.

checklist: the sign-off against the current `docs/PR_REVIEW_CHECKLIST.md` template: every item
present and ticked (`[x]`), matched by wording (minor drift allowed), and the signature filled.
An unticked item with text in the additional-detail section is a WARN (a person judges it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import re2

from ...core.check import Evidence, Judgement, judged
from ...core.status import FAIL, NA, PASS, WARN
from .context import Review, plural
from .rx import rx

MAX_ITEMS = 400  # the real template has 30 items
MAX_ITEM_CHARS = 2000
_ITEM = re2.compile(r"^(\s*)- \[([ xX])\]\s+(.*)$")
_SIGNED = re2.compile(r"(?m)^[ \t]*Signed:\s*`?@?([^`\s]+)`?")
_PLACEHOLDER = "FILL_IN_GITHUB_USERNAME"
MATCH_RATIO = 0.6


@dataclass(frozen=True, kw_only=True)
class Rule:
    line: int
    pattern: str
    owners: tuple[str, ...]
    regex: Any  # an re2 pattern: linear time over any path


def _compile(pattern: str) -> Any:
    """A CODEOWNERS (gitignore-style) pattern as a regex over repository-relative paths."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re2.escape(body[i])
            i += 1
    prefix = "^" if anchored else "^(?:.*/)?"
    # RE2 (linear time): `*a*a*a*a*a*a*a*a*a*a*a*a*b` backtracks exponentially in `re`. `(?s)`:
    # a path may hold a newline, and `.` must cross it (`configs/a<LF>b` is under `/configs/`).
    return re2.compile("(?s)" + prefix + out + "(?:/.*)?$")


def codeowners(review: Review) -> tuple[str, list[Rule]] | None:
    for path in review.source.era.codeowners:
        text = review.source.text(path)
        if text is None:
            continue
        rules = []
        for n, line in enumerate(text.splitlines(), start=1):
            parts = line.split("#", 1)[0].split()
            if parts:
                rules.append(
                    Rule(
                        line=n, pattern=parts[0], owners=tuple(parts[1:]), regex=_compile(parts[0])
                    )
                )
        return path, rules
    return None


def owner_of(rules: list[Rule], path: str) -> Rule | None:
    winner = None
    for rule in rules:
        if rule.regex.match(path):
            winner = rule
    return winner


def signer(text: str) -> str | None:
    m = _SIGNED.search(text)
    if not m or _PLACEHOLDER in m.group(1):
        return None
    return m.group(1).lstrip("@")


def check_owners(review: Review) -> Judgement:
    if review.change is None:
        return judged(NA, "no change given (--base-ref/--head-ref): no changed files")
    found = codeowners(review)
    if found is None:
        return judged(NA, "the repository has no CODEOWNERS file")
    where, rules = found
    rows: list[Evidence] = []
    specific: list[tuple[str, Rule]] = []
    for path in review.change.paths:
        rule = owner_of(rules, path)
        if rule is None:
            rows.append(Evidence(path, "no owner"))
            continue
        rows.append(Evidence(path, f"{' '.join(rule.owners) or '(none)'} ({where}:{rule.line})"))
        if rule.pattern != "*":
            specific.append((path, rule))
    if review.options.signoff is None:
        return judged(
            NA,
            f"owners of {plural(len(review.change.paths), 'changed file')} listed; no "
            "sign-off (--signoff) to compare them with",
            rows,
        )
    who = signer(review.options.signoff)
    if who is None:
        return judged(FAIL, "the sign-off has no filled-in `Signed:` user", rows)
    handle = f"@{who}".lower()
    everyone = {o.lower() for r in rules for o in r.owners}
    teams_only = []
    for path, rule in specific:
        owners = {o.lower() for o in rule.owners}
        if handle in owners:
            continue
        if any("/" in o for o in owners):
            teams_only.append(path)
            continue
        return judged(
            FAIL,
            f"@{who} does not own {path} (owners {' '.join(rule.owners)}, {where}:{rule.line})",
            rows,
        )
    if not specific and handle not in everyone and not any("/" in o for o in everyone):
        return judged(FAIL, f"@{who} is not listed in {where}", rows)
    if teams_only or (not specific and handle not in everyone):
        what = teams_only[0] if teams_only else "the catch-all"
        return judged(
            WARN,
            f"@{who} may own {what} only through a team; team membership needs GitHub's API",
            rows,
        )
    return judged(PASS, f"@{who} owns every changed path that has a specific owner", rows)


def _norm(text: str) -> str:
    text = rx(r"\[([^\]]*)\]\([^)]*\)").sub(r"\1", text)  # links: keep the words
    return " ".join(rx(r"[a-z0-9]+").findall(text.lower()))


def template_items(text: str) -> list[tuple[int, str]]:
    """Items of the template block (the fenced block after `## Template`)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().lower() == "## template")
    except StopIteration:
        return []
    items, fenced = [], False
    for i in range(start + 1, len(lines)):
        if lines[i].strip().startswith("```"):
            if fenced:
                break
            fenced = True
            continue
        m = _ITEM.match(lines[i])
        if fenced and m:
            items.append((i + 1, m.group(3)))
    return items


def check_checklist(review: Review) -> Judgement:
    checklist = review.source.era.checklist
    template = review.source.text(checklist)
    if template is None:
        return judged(NA, f"{checklist} is not in the repository")
    items = template_items(template)
    if review.options.signoff is None:
        # Without a sign-off there is nothing to hold against the template, whatever its shape.
        return judged(
            NA, f"no sign-off given (--signoff); the template has {plural(len(items), 'item')}"
        )
    if not items:
        return judged(WARN, f"{checklist} has no `## Template` block with items")
    body = review.options.signoff
    # Bounded: difflib is quadratic in the text it compares, so an item is read up to
    # MAX_ITEM_CHARS and at most MAX_ITEMS items (a 950 KB sign-off took 131 s unbounded).
    given = [
        (n, m.group(2).lower() == "x", _norm(m.group(3)[:MAX_ITEM_CHARS]))
        for n, line in enumerate(body.splitlines(), start=1)
        if (m := _ITEM.match(line[: MAX_ITEM_CHARS * 2]))
    ]
    unread = len(given) - MAX_ITEMS
    given = given[:MAX_ITEMS]
    detail = body.split("Additional detail section", 1)[-1] if "Additional detail" in body else ""
    explained = bool(rx(r"insert any additional info here|Signed:.*|[#:\-\s`]").sub("", detail))
    rows, missing, unticked = _match_items(review, items, given)
    who = signer(body)
    if who is None:
        rows.append(Evidence(review.options.signoff_path, "`Signed:` is missing or not filled in"))
    if missing:
        lacks = plural(len(missing), "current template item")
        return judged(FAIL, f"the sign-off lacks {lacks} (stale copy?): {missing[0]}", rows)
    if who is None:
        return judged(FAIL, "the signature is not filled in", rows)
    if unticked and not explained:
        return judged(
            FAIL,
            f"{plural(len(unticked), 'item')} not ticked and no "
            f"additional detail given: {unticked[0]}",
            rows,
        )
    if unticked:
        return judged(
            WARN,
            f"{plural(len(unticked), 'item')} not ticked; the additional "
            "detail section explains (a person judges it)",
            rows,
        )
    if unread > 0:
        rows.append(Evidence(review.options.signoff_path, f"not read: {unread} item(s) more"))
        return judged(WARN, f"the sign-off has over {MAX_ITEMS} items; the rest not read", rows)
    return judged(PASS, f"all {len(items)} template items ticked, signed by @{who}", rows)


def _match_items(
    review: Review, items: list[tuple[int, str]], given: list[tuple[int, bool, str]]
) -> tuple[list[Evidence], list[str], list[str]]:
    """Each template item against the sign-off's items (best fuzzy match, each used once):
    evidence rows, the items missing from the sign-off, and those present but not ticked."""
    rows: list[Evidence] = []
    missing: list[str] = []
    unticked: list[str] = []
    used: set[int] = set()
    for line, text in items:
        want = _norm(text)
        best, score = None, 0.0
        for idx, (_, _, have) in enumerate(given):
            if idx in used:
                continue
            ratio = difflib.SequenceMatcher(None, want, have, autojunk=False).ratio()
            if ratio > score:
                best, score = idx, ratio
        short = text[:90]
        if best is None or score < MATCH_RATIO:
            missing.append(short)
            checklist = review.source.era.checklist
            rows.append(Evidence.at(checklist, line, f"missing from the sign-off: {short}"))
            continue
        used.add(best)
        n, ticked, _ = given[best]
        if not ticked:
            unticked.append(short)
            rows.append(Evidence.at(review.options.signoff_path, n, f"not ticked: {short}"))
    return rows, missing, unticked
