"""Whether an edit is cosmetic (cannot change what the code computes), and which lines changed.

Python: the two versions' token streams (stdlib `tokenize`) are compared after dropping comments,
blank lines (NL), indentation width, statements that are only string literals (docstrings and
bare strings: they have no effect beyond `__doc__`) and statements that are only a logging call
on `logger`/`logging`/`log`/`LOGGER`/`_logger` (`logger.info(...)`). `print(...)` is NOT ignored:
it can consume iterators and call functions, so removing one is a behaviour change we cannot rule
out; failing closed means calling it a real change. Code that does not tokenize is never cosmetic.

Other files: line sequences compared after dropping blank lines, full-line comments (`#` for
scripts/YAML/TOML/CMake/Dockerfiles, `//` and `/* ... */` on their own lines for C-family code)
and trailing whitespace; leading whitespace is kept where indentation has meaning (YAML,
Makefiles), otherwise stripped. String literals are never reinterpreted, so `"a  b"` -> `"a b"` is
a real change. Binary content is never cosmetic.
"""

from __future__ import annotations

import bisect
import difflib
import io
import itertools
import re
import tokenize
from collections.abc import Iterator
from pathlib import PurePosixPath

_LOGGERS = frozenset({"logger", "logging", "log", "LOGGER", "_logger", "_LOGGER", "LOG"})
_SKIP = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.TYPE_COMMENT})
_HASH_COMMENTS = frozenset(
    {
        ".sh",
        ".bash",
        ".yaml",
        ".yml",
        ".toml",
        ".cfg",
        ".ini",
        ".cmake",
        ".txt",
        ".in",
        ".mk",
        ".pyx",
        ".pxd",
        ".conf",
        ".env",
        ".r",
    }
)
_HASH_NAMES = frozenset({"Dockerfile", "CMakeLists.txt", "Makefile", "makefile", ".gitignore"})
_SLASH_COMMENTS = frozenset(
    {
        ".c",
        ".cc",
        ".cpp",
        ".cxx",
        ".h",
        ".hh",
        ".hpp",
        ".cu",
        ".cuh",
        ".hip",
        ".rs",
        ".go",
        ".js",
        ".ts",
        ".java",
        ".proto",
        ".cl",
        ".td",
        ".mlir",
    }
)
_INDENT_SENSITIVE = frozenset({".yaml", ".yml", ".mk"})
BINARY_PROBE = 8000  # git's own heuristic: a NUL in the first 8000 bytes means binary


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def _statements(text: str) -> Iterator[list[tokenize.TokenInfo]]:
    """Significant tokens grouped into simple statements (split at NEWLINE, `;`, INDENT, DEDENT)."""
    current: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in _SKIP:
            continue
        if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            if current:
                yield current
                current = []
            yield [tok]
        elif tok.type == tokenize.NEWLINE or (tok.type == tokenize.OP and tok.string == ";"):
            yield current
            current = []
        else:
            current.append(tok)
    if current:
        yield current


def _is_ignorable(stmt: list[tokenize.TokenInfo]) -> bool:
    if not stmt:
        return True
    if all(t.type == tokenize.STRING for t in stmt):
        return True  # docstring or bare string: no effect besides __doc__
    if (
        len(stmt) >= 5
        and stmt[0].type == tokenize.NAME
        and stmt[0].string in _LOGGERS
        and stmt[1].string == "."
        and stmt[2].type == tokenize.NAME
        and stmt[3].string == "("
        and stmt[-1].string == ")"
    ):
        # Only if the parenthesis opened after the method name closes at the very end: then the
        # statement is exactly one call (not `logger.x(a).y = b`).
        depth = 0
        for index, tok in enumerate(stmt[3:], start=3):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
                if depth == 0:
                    return index == len(stmt) - 1
    return False


def _decode_python(data: bytes) -> str | None:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


_TOKENIZE_ERRORS = (tokenize.TokenError, SyntaxError, ValueError)


def _units(text: str) -> Iterator[tuple[tuple[int, str], ...]]:
    """The fingerprint one statement at a time (lazy, so a comparison can stop early)."""
    for stmt in _statements(text):
        if len(stmt) == 1 and stmt[0].type in (tokenize.INDENT, tokenize.DEDENT):
            yield ((stmt[0].type, ""),)  # indentation width is not meaning
        elif not _is_ignorable(stmt):
            yield (*((t.type, t.string) for t in stmt), (tokenize.NEWLINE, ""))


def _fingerprint(text: str) -> list[tuple[int, str]] | None:
    try:
        return [token for unit in _units(text) for token in unit]
    except _TOKENIZE_ERRORS:
        return None


def _same_tokens(a: str, b: str) -> bool:
    """`_fingerprint(a) == _fingerprint(b)` (both tokenizing), stopping at the first difference."""
    end = object()
    try:
        for x, y in itertools.zip_longest(_units(a), _units(b), fillvalue=end):
            if x != y:
                return False
    except _TOKENIZE_ERRORS:
        return False
    return True


def python_fingerprint(data: bytes) -> list[tuple[int, str]] | None:
    """The token stream that decides Python equivalence here; None if the code does not tokenize."""
    text = _decode_python(data)
    return None if text is None else _fingerprint(text)


# Where strings, comments, brackets and backslash continuations are, found with one C-speed regex
# scan (the same literal syntax as `tokenize`). It only serves to find "fresh" lines: a line at
# column 0 that starts a statement outside any string or bracket. The tokenizer's state there is
# the initial one, so tokenizing from such a line gives the same tokens as tokenizing the file.
_STRING = "|".join(
    [
        r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''",
        r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""',
        r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'",
        r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"',
    ]
)
_SCAN = re.compile(
    r"(?P<comment>#[^\r\n]*)"
    # No string prefix (r, b, f...): the quote starts the match, and tokenize itself scans the
    # body the same way whatever the prefix. Leaving letters out of the first-character set is
    # what lets the regex engine skip ordinary code at C speed.
    rf"|(?P<string>{_STRING})"
    r"|(?P<open>[(\[{])"
    r"|(?P<close>[)\]}])"
    r"|(?P<cont>\\\r?\n)",
    re.DOTALL,
)


# A line that can start a statement at column 0: not blank, not indented, not a comment or closer.
_COLUMN0 = re.compile(r"^[^\s#)\]}]", re.MULTILINE)


class _Lines:
    """A decoded Python file as lines, with line offsets and the lines that may start statements."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.offsets = [0, *itertools.accumulate(map(len, self.lines))]
        # splitlines also breaks at \f, \v, \x1c.. which `^` does not: keep exact line starts only.
        self.candidates = []
        for match in _COLUMN0.finditer(text):
            i = bisect.bisect_left(self.offsets, match.start())
            if self.offsets[i] == match.start():
                self.candidates.append(i)

    def fresh(self, begin: int) -> Iterator[int]:
        """Indices of fresh lines (a statement starting at column 0, outside any string, bracket
        or backslash continuation) from line `begin` on, which must itself be at a statement
        boundary. Lazy: callers stop as soon as they have the line they need."""
        offsets, candidates = self.offsets, self.candidates
        k = bisect.bisect_left(candidates, begin)
        depth, blocked_until = 0, -1
        for match in _SCAN.finditer(self.text, offsets[begin]):
            while k < len(candidates) and offsets[candidates[k]] <= match.start():
                if depth == 0 and offsets[candidates[k]] >= blocked_until:
                    yield candidates[k]
                k += 1
            kind = match.lastgroup
            if kind == "string":
                blocked_until = max(blocked_until, match.end())
            elif kind == "open":
                depth += 1
            elif kind == "close":
                depth = max(0, depth - 1)
            elif kind == "cont":
                blocked_until = match.end() + 1  # the continued line is not a new statement
        for line in candidates[k:]:
            if depth == 0 and offsets[line] >= blocked_until:
                yield line


def _python_cosmetic(old: bytes, new: bytes) -> bool:
    """Token-stream equivalence (see module docstring), tokenizing only the changed window.

    The window runs from the last fresh line at or before the first difference to the first line
    of the common tail that is fresh in both versions; outside it the texts and the tokenizer
    states are identical, so the tokens are too. Without such lines the window is the whole file.
    """
    a_text, b_text = _decode_python(old), _decode_python(new)
    if a_text is None or b_text is None:
        return False
    a, b = _Lines(a_text), _Lines(b_text)
    la, lb = a.lines, b.lines
    start = 0
    while start < len(la) and start < len(lb) and la[start] == lb[start]:
        start += 1
    tail = 0
    while tail < len(la) - start and tail < len(lb) - start and la[-1 - tail] == lb[-1 - tail]:
        tail += 1
    end_a, end_b = len(la) - tail, len(lb) - tail
    first = 0
    for line in a.fresh(0):  # the common head is identical in both versions
        if line > start:
            break
        first = line
    # The first common-tail line that is fresh in both: merge the two ascending streams.
    ks_a = (i - end_a for i in a.fresh(first) if i >= end_a)
    ks_b = (i - end_b for i in b.fresh(first) if i >= end_b)
    stop, ka, kb = tail, next(ks_a, None), next(ks_b, None)
    while ka is not None and kb is not None:
        if ka == kb:
            stop = ka
            break
        if ka < kb:
            ka = next(ks_a, None)
        else:
            kb = next(ks_b, None)
    window_a = a_text[a.offsets[first] : a.offsets[end_a + stop]]
    window_b = b_text[b.offsets[first] : b.offsets[end_b + stop]]
    return _same_tokens(window_a, window_b)


def _comment_style(path: str) -> str:
    name = PurePosixPath(path).name
    suffix = PurePosixPath(path).suffix.lower()
    if name in _HASH_NAMES or suffix in _HASH_COMMENTS:
        return "#"
    if suffix in _SLASH_COMMENTS:
        return "//"
    return ""


def text_fingerprint(path: str, data: bytes) -> list[str]:
    """Lines that carry meaning in a non-Python text file, by the simple rules above."""
    style = _comment_style(path)
    keep_indent = PurePosixPath(path).suffix.lower() in _INDENT_SENSITIVE or "Makefile" in path
    lines: list[str] = []
    in_block = False
    for raw in data.decode("utf-8", "replace").splitlines():
        stripped = raw.strip()
        if style == "//":
            if in_block:
                close = stripped.find("*/")
                in_block = close == -1
                if in_block or close == len(stripped) - 2:
                    continue
                # Code after the closing `*/` keeps the whole line (never hide code).
            elif stripped.startswith("/*"):
                close = stripped.find("*/", 2)
                if close == -1:
                    in_block = True
                    continue
                if close == len(stripped) - 2:
                    continue
            elif stripped.startswith("//"):
                continue
        elif style == "#" and stripped.startswith("#"):
            continue
        if stripped:
            lines.append(raw.rstrip() if keep_indent else stripped)
    return lines


def is_cosmetic(path: str, old: bytes, new: bytes) -> bool:
    """True when `old` -> `new` differs only in comments, docstrings, blank lines, whitespace
    or logging calls (see the module docstring for the exact rules)."""
    if is_binary(old) or is_binary(new):
        return False
    if is_python(path):
        return _python_cosmetic(old, new)
    return text_fingerprint(path, old) == text_fingerprint(path, new)


def _is_comment_line(path: str, line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return True
    style = "#" if is_python(path) else _comment_style(path)
    return bool(style) and stripped.startswith(style)


def changed_lines(path: str, old: bytes, new: bytes) -> list[str]:
    """Lines added, then lines removed, by old -> new, without blank and full-line comment lines.

    Content gates are evaluated on these. difflib's junk heuristic may report a few unchanged
    lines as changed in big files; that errs towards firing a gate (fail closed), never away.
    """
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    # Trim the common head and tail first: most edits are small and this makes them O(n).
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    mid_a, mid_b = a[start:end_a], b[start:end_b]
    added: list[str] = []
    removed: list[str] = []
    if mid_a and mid_b:
        matcher = difflib.SequenceMatcher(None, mid_a, mid_b)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                removed.extend(mid_a[i1:i2])
                added.extend(mid_b[j1:j2])
    else:
        removed, added = mid_a, mid_b
    # Added lines first: a reason quoting the first matching line then shows the new state.
    return [line for line in added + removed if not _is_comment_line(path, line)]
