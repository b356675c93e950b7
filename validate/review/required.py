"""`changelog-required`: a change that can move a benchmark names the keys it moves.

InferenceX's AGENTS.md: a perf-changelog entry is "required - triggers benchmarks". A change
affects a key when it changes a line of the key's master-config block (image, search space,
settings) or a file of the key's launch path (launch script, helper, runner/launcher script,
recipe; scope.py resolves it). Without an appended entry the change FAILs with the keys and
where each is affected; an appended entry whose `config-keys` miss an affected key WARNs (a
person decides whether the change really moves it). The changelog gate (validate/gate/) judges
the entries themselves; this check only asks whether they exist and cover the keys.
"""

from __future__ import annotations

from collections.abc import Mapping

from relpipe.core.check import Evidence, Judgement, judged
from relpipe.core.status import FAIL, NA, PASS, WARN
from relpipe.validate.review.artifacts import appended
from relpipe.validate.review.context import Review, plural


def glob(pattern: str, key: str) -> bool:
    """`*`-glob full match in O(len(pattern) * len(key)) (no backtracking regex)."""
    p = k = 0
    star, mark = -1, 0
    while k < len(key):
        if p < len(pattern) and pattern[p] != "*" and pattern[p] == key[k]:
            p, k = p + 1, k + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, k, p + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            k = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _affected(review: Review) -> dict[str, list[Evidence]]:
    """Keys the change affects, each with where: its changed master line or changed file."""
    assert review.change is not None
    changed = set(review.change.paths)
    out: dict[str, list[Evidence]] = {}
    for scope in review.scopes:
        rows: list[Evidence] = []
        block = review.change.lines.get(scope.master, frozenset())
        lines = sorted(n for n in block if scope.line <= n <= scope.end)
        if lines:
            rows.append(Evidence.at(scope.master, lines[0], f"{scope.key}: its block changed"))
        for use in scope.files:
            if use.path in changed and use.path != scope.master:
                first = min(review.change.lines.get(use.path, frozenset()) or {0})
                rows.append(Evidence.at(use.path, first, f"{scope.key}: its {use.role} changed"))
        if rows:
            out[scope.key] = rows
    return out


def check_changelog_required(review: Review) -> Judgement:
    if review.change is None or review.base_source is None:
        return judged(NA, "no change given (--base-ref/--head-ref)")
    affected = _affected(review)
    if not affected:
        return judged(NA, "the change affects no config key's benchmark")
    entries, why = appended(review)
    if why:
        return judged(WARN, f"appended entries not read: {why}", [])
    patterns = [
        str(p)
        for e in entries
        if isinstance(e, Mapping)
        for p in (e.get("config-keys") or [])
        if isinstance(e.get("config-keys"), list)
    ]
    missing = {k: rows for k, rows in affected.items() if not any(glob(p, k) for p in patterns)}
    rows = [r for k in missing for r in missing[k]]
    keys = ", ".join(list(missing)[:5]) + (
        f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""
    )
    if not entries:
        return judged(
            FAIL,
            f"{plural(len(affected), 'config key')} affected and no "
            f"{review.source.era.changelog} entry appended: "
            f"{keys}",
            rows,
        )
    if missing:
        return judged(
            WARN,
            f"the appended entries do not name {plural(len(missing), 'affected key')}: {keys}",
            rows,
        )
    return judged(PASS, f"the appended entries name all {plural(len(affected), 'affected key')}")
