"""`changelog-required`: a change that can move a benchmark names the keys it moves.

InferenceX's AGENTS.md: a perf-changelog entry is "required - triggers benchmarks". A change
affects a key when it changes what the key's master-config block says (image, search space,
settings) or what a file of the key's launch path runs (launch script, helper, runner/launcher
script, recipe; scope.py resolves it). Benchmark-affecting is semantic (`review.meaning`): an edit
of only comments or whitespace of a script, a recipe or a master block moves no benchmark and
needs no entry. Without an appended entry the change FAILs with the keys and
where each is affected; an appended entry whose `config-keys` miss an affected key WARNs (a
person decides whether the change really moves it). The changelog gate (validate/gate/) judges
the entries themselves; this check only asks whether they exist and cover the keys.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...core.check import Evidence, Judgement, judged
from ...core.status import FAIL, NA, PASS, WARN
from .artifacts import appended
from .context import Review, plural
from .meaning import same_meaning, same_yaml
from .scope import KeyScope, block_of


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
        if lines and not _block_unchanged(review, scope):
            rows.append(Evidence.at(scope.master, lines[0], f"{scope.key}: its block changed"))
        for use in scope.files:
            if (
                use.path in changed
                and use.path != scope.master
                and not _unchanged(review, use.path)
            ):
                first = min(review.change.lines.get(use.path, frozenset()) or {0})
                rows.append(Evidence.at(use.path, first, f"{scope.key}: its {use.role} changed"))
        if rows:
            out[scope.key] = rows
    return out


def _unchanged(review: Review, path: str) -> bool:
    """The file's edit is comments or whitespace only (its meaning is the base's)."""
    assert review.base_source is not None
    key = ("meaning", path)
    if key not in review.source.memo:
        before, after = review.base_source.text(path), review.source.text(path)
        review.source.memo[key] = same_meaning(path, before, after)
    return bool(review.source.memo[key])


def _block_unchanged(review: Review, scope: KeyScope) -> bool:
    """The key's master block says the same at the base (comments or whitespace edited)."""
    assert review.base_source is not None
    head = review.masters.lines.get(scope.master)
    base = review.base_source.lines(scope.master)
    found = block_of(base, scope.key) if base else None
    if not head or found is None:
        return False
    before = "\n".join(base[found[0] - 1 : found[1]])
    after = "\n".join(head[scope.line - 1 : scope.end])
    return same_yaml(before, after, scope.master)


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
