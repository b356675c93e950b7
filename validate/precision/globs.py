"""Path globs of the precision rules: syntax check, matching regex, and exact overlap test.

The syntax is deliberately small: `*` within a path segment, `**` as a whole segment across
segments, `?` one character; a pattern without `/` matches the file name at any depth, unless it
starts with `/` (then it names a file at the repository root, as in .gitignore). Anything
else that usually means something in a glob (`[...]`, `{a,b}`, `!`, `\\`) is refused rather than
taken literally, so a rules file never silently matches less than its author meant.

`overlap(a, b)` decides exactly whether some path matches both globs (the intersection of two
small automata is searched breadth-first); the rules loader uses it to refuse rules of different
categories that could claim the same file without saying which one wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

_FORBIDDEN = re.compile(r"[\[\]{}\\!\s]")


def problem(pattern: str) -> str | None:
    """Why `pattern` is not a valid glob, or None."""
    if not pattern or pattern != pattern.strip():
        return "empty or surrounded by spaces"
    bad = _FORBIDDEN.search(pattern)
    if bad:
        return f"unsupported character {bad.group()!r} (only *, ** and ? are wildcards)"
    segments = pattern.strip("/").split("/")
    if "" in segments:
        return "empty path segment (//)"
    if any(s in (".", "..") for s in segments):
        return "'.' and '..' segments never match a repository path"
    if any("**" in s and s != "**" for s in segments):
        return "** must be a whole path segment (a/**/b, a/**), not part of one"
    return None


def _anchored(pattern: str) -> bool:
    """A pattern with a `/` (other than a trailing one) names a path from the root."""
    return "/" in pattern.rstrip("/")


def regex_source(pattern: str) -> str:
    """The regex (without anchors) that matches the paths `pattern` matches."""
    anchored = _anchored(pattern)
    body, i = [], 0
    text = pattern.strip("/")
    while i < len(text):
        if text.startswith("**/", i):
            body.append("(?:.*/)?")
            i += 3
        elif text.startswith("**", i):
            body.append(".*")
            i += 2
        elif text[i] == "*":
            body.append("[^/]*")
            i += 1
        elif text[i] == "?":
            body.append("[^/]")
            i += 1
        else:
            body.append(re.escape(text[i]))
            i += 1
    return ("" if anchored else "(?:.*/)?") + "".join(body)


def literal_prefix(pattern: str) -> str:
    """A prefix of every path `pattern` matches ("" when it may match at any depth)."""
    if not _anchored(pattern):
        return ""
    text = pattern.strip("/")
    return text[: min((i for i in (text.find("*"), text.find("?")) if i >= 0), default=len(text))]


def compile_globs(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex for all `patterns` (matches nothing when there are none)."""
    parts = [regex_source(p) for p in patterns]
    return re.compile("(?:" + "|".join(parts) + ")\\Z" if parts else "(?!)")


# --- exact overlap --------------------------------------------------------------------------------

# Tokens of a glob automaton: a literal character, `?`, `*`, `**` (any text), `**/` (empty or any
# text ending in `/`).
_LIT, _ONE, _STAR, _ALL, _DIRS = range(5)
_OTHER = "\0"  # stands for every character that appears in neither glob


@cache
def _tokens(pattern: str) -> tuple[tuple[int, str], ...]:
    text = pattern.strip("/")
    tokens: list[tuple[int, str]] = [] if _anchored(pattern) else [(_DIRS, "")]
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            tokens.append((_DIRS, ""))
            i += 3
        elif text.startswith("**", i):
            tokens.append((_ALL, ""))
            i += 2
        elif text[i] == "*":
            tokens.append((_STAR, ""))
            i += 1
        elif text[i] == "?":
            tokens.append((_ONE, ""))
            i += 1
        else:
            tokens.append((_LIT, text[i]))
            i += 1
    return tuple(tokens)


def _closure(tokens: tuple[tuple[int, str], ...], states: Iterable[tuple[int, bool]]) -> frozenset:
    """States reachable without reading: a `*`, `**` or `**/` may match nothing."""
    seen = set(states)
    todo = list(seen)
    while todo:
        k, inside = todo.pop()
        if not inside and k < len(tokens) and tokens[k][0] in (_STAR, _ALL, _DIRS):
            nxt = (k + 1, False)
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


@cache
def _step(tokens: tuple[tuple[int, str], ...], states: frozenset, ch: str) -> frozenset:
    out = []
    for k, inside in states:
        if inside:  # within the text of a `**/`: any character, a `/` may also end it
            out.append((k, True))
            if ch == "/":
                out.append((k + 1, False))
            continue
        if k >= len(tokens):
            continue
        kind, lit = tokens[k]
        if kind == _LIT and ch == lit:
            out.append((k + 1, False))
        elif kind == _ONE and ch != "/":
            out.append((k + 1, False))
        elif kind == _STAR and ch != "/":
            out.append((k, False))
        elif kind == _ALL:
            out.append((k, False))
        elif kind == _DIRS:
            out.append((k, True))
            if ch == "/":
                out.append((k + 1, False))
    return _closure(tokens, out)


@cache
def _prefix(pattern: str) -> str | None:
    """The literal text every match starts with (None for a name pattern, which floats)."""
    if not _anchored(pattern):
        return None
    return re.split(r"[*?]", pattern.strip("/"), maxsplit=1)[0]


@cache
def overlap(a: str, b: str) -> bool:
    """Whether some path matches both globs (exact)."""
    pa, pb = _prefix(a), _prefix(b)
    if pa is not None and pb is not None and not (pa.startswith(pb) or pb.startswith(pa)):
        return False  # different fixed folders: the common case, decided without a search
    for glob, other in ((a, b), (b, a)):
        if _anchored(other) and not any(ch in other for ch in "*?"):
            return compile_globs([glob]).match(other.strip("/")) is not None  # one path
    ta, tb = _tokens(a), _tokens(b)
    alphabet = {"/", _OTHER} | {lit for kind, lit in (*ta, *tb) if kind == _LIT}
    start = (_closure(ta, [(0, False)]), _closure(tb, [(0, False)]))
    seen, todo = {start}, [start]
    while todo:
        sa, sb = todo.pop()
        if (len(ta), False) in sa and (len(tb), False) in sb:
            return True
        for ch in alphabet:
            nxt = (_step(ta, sa, ch), _step(tb, sb, ch))
            if nxt[0] and nxt[1] and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False
