"""A fast necessary condition for a set of regular expressions: literals one of which every match
contains.

Content gates are user regexes such as `\\b(kv_cache_dtype|kv_dtype)\\b` or `(?i)(fp8|e4m3)`.
CPython's engine cannot skip ahead for a pattern that starts with `\\b` or a case-insensitive
group, so it tries every position: on a 5,000-line file that is tens of milliseconds per gate.
A plain alternation of literals starts with a known character set, which the engine scans at C
speed. `prefilter` builds one from the literals the patterns require; a line that it does not
match cannot match any of the patterns. It is exact (never drops a line a pattern matches) for
ASCII lines; other lines are always passed on to the patterns themselves.

The literals come from the pattern's parse tree (`re._parser`, the parser `re.compile` uses):
a run of literal characters in a sequence, a group's or a repeat's (at least once) own
requirement, or every branch's. Anything else (classes, `.`, anchors, lookarounds, optional
parts) requires nothing, and a pattern that requires nothing at all gives no prefilter.
"""

from __future__ import annotations

import bisect
import itertools
import re
import re._constants as sre  # the opcodes of the parse tree
import re._parser as sre_parse
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# A required literal: its text (lower-cased when matched without case) and whether it is.
Literal = tuple[str, bool]
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def _selectivity(need: frozenset[Literal]) -> tuple[int, int]:
    """Longer shortest literal first, then fewer alternatives."""
    return min(len(text) for text, _ in need), -len(need)


def _required(items: Sequence[tuple[Any, Any]], nocase: bool) -> frozenset[Literal] | None:
    """Literals one of which every match of the sequence `items` contains; None if unknown."""
    choices: list[frozenset[Literal]] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        run.clear()
        if text and not nocase:
            choices.append(frozenset({(text, False)}))
        elif text.isascii() and text:  # a non-ASCII letter may fold to ASCII: not usable
            choices.append(frozenset({(text.lower(), True)}))

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        flush()
        need: frozenset[Literal] | None = None
        if op is sre.SUBPATTERN:
            _, add, remove, sub = av
            inner = (nocase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
            need = _required(sub, inner)
        elif op is sre.ATOMIC_GROUP:
            need = _required(av, nocase)
        elif op in _REPEATS and av[0] >= 1:
            need = _required(av[2], nocase)
        elif op is sre.BRANCH:
            branches = [_required(branch, nocase) for branch in av[1]]
            if all(b is not None for b in branches):
                need = frozenset().union(*(b for b in branches if b is not None))
        if need:
            choices.append(need)
    flush()
    return max(choices, key=_selectivity) if choices else None


def required_literals(pattern: str, flags: int = 0) -> frozenset[Literal] | None:
    """Literals one of which every match of `pattern` contains; None when it requires none.
    A literal matched without case is ASCII (a non-ASCII one could fold to ASCII letters)."""
    parsed = sre_parse.parse(pattern, flags)
    return _required(parsed.data, bool(parsed.state.flags & re.IGNORECASE))


def prefilter(patterns: Iterable[re.Pattern[str]]) -> Callable[[Sequence[str]], list[str]] | None:
    """A filter of lines that drops only lines none of `patterns` can match (see the module
    docstring); None when some pattern requires no literal (then only it can tell)."""
    literals: set[Literal] = set()
    for pattern in patterns:
        need = required_literals(pattern.pattern, pattern.flags)
        if need is None:
            return None
        literals |= need
    if not literals:
        return None
    literals = _implied(literals)
    exact = sorted(text for text, nocase in literals if not nocase)
    folded = sorted(text for text, nocase in literals if nocase)

    def keep(lines: Sequence[str]) -> list[str]:
        # Non-ASCII lines are kept as they are; the others are searched as one text, each
        # literal with str.find (C speed), which is what makes this cheaper than the patterns.
        plain = [line if line.isascii() else "" for line in lines]
        hit = {i for i, line in enumerate(lines) if not line.isascii()}
        starts = list(itertools.accumulate((len(line) + 1 for line in plain), initial=0))
        text = "\n".join(plain)
        _mark(text, exact, starts, hit)
        _mark(text.lower() if folded else "", folded, starts, hit)
        return [line for i, line in enumerate(lines) if i in hit]

    return keep


def _implied(literals: set[Literal]) -> set[Literal]:
    """`literals` without those another one implies (a line containing `kv_cache_dtype` contains
    `dtype`; one containing `Eagle3` contains `eagle` without case): the same lines pass, with
    fewer searches (ATOM's gates: 104 literals, 87 searched)."""
    folded = [text for text, nocase in literals if nocase]
    exact = [text for text, nocase in literals if not nocase]

    def found(texts: list[str], text: str) -> int:  # how many of `texts` occur in `text`
        return sum(map(text.__contains__, texts))

    kept = {(text, True) for text in folded if found(folded, text) == 1}  # only itself
    return kept | {
        (text, False)
        for text in exact
        if not found(folded, text.lower()) and found(exact, text) == 1
    }


def _mark(text: str, literals: Sequence[str], starts: Sequence[int], hit: set[int]) -> None:
    """Add to `hit` the index of every line of `text` (lines start at `starts`) that contains
    one of `literals`."""
    for literal in literals:
        at = text.find(literal)
        while at >= 0:
            line = bisect.bisect_right(starts, at) - 1
            hit.add(line)
            at = text.find(literal, starts[line + 1])
