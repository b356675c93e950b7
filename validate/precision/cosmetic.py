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

import difflib
import functools
import io
import re
import tokenize
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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


def python_fingerprint(data: bytes) -> list[tuple[int, str]] | None:
    """The token stream that decides Python equivalence here; None if the code does not tokenize."""
    text = _decode_python(data)
    return None if text is None else _fingerprint(text)


# Where strings and comments are, found with one C-speed regex split (the same literal syntax as
# `tokenize`). It only serves to find "fresh" lines: lines that start a statement outside any
# string, bracket or backslash continuation. The tokenizer's state at such a line is its
# indentation stack alone, so tokenizing from there gives the same tokens as tokenizing the file.
# No string prefix (r, b, f...): the quote starts the match, and tokenize itself scans the body the
# same way whatever the prefix. Leaving letters out of the first-character set is what lets the
# regex engine skip ordinary code at C speed.
_TRIPLE = (r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""')
_SINGLE = (r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'", r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
# A triple quote that does not close in the text read is matched alone (before `''` could match
# its first two quotes): from there on nothing is known to be outside a string.
_OPEN = ("'''", '"""')
_LITERAL = re.compile("(" + "|".join((r"#[^\r\n]*", *_TRIPLE, *_OPEN, *_SINGLE)) + ")", re.DOTALL)
_OPENERS, _CLOSERS = "([{", ")]}"
_FIRST_WINDOW = 4096  # characters of skeleton searched first for earlier lines; then doubled
_TABSIZE = 8  # tokenize's own


def _column(indent: str) -> int:
    """The indentation column of leading whitespace, counted as `tokenize` counts it."""
    column = 0
    for ch in indent:
        if ch == " ":
            column += 1
        elif ch == "\t":
            column = (column // _TABSIZE + 1) * _TABSIZE
        else:  # form feed
            column = 0
    return column


def _depth(code: str, start: int, end: int) -> int:
    """Brackets opened minus brackets closed in code[start:end] (C-speed counts)."""
    opened = sum(code.count(c, start, end) for c in _OPENERS)
    return opened - sum(code.count(c, start, end) for c in _CLOSERS)


def _last_fresh(
    text: str, limit: int, begin: int = 0, stack: tuple[int, ...] = (0,)
) -> tuple[int, tuple[int, ...]]:
    """The last fresh line starting at or before `limit` and the tokenizer's indentation stack
    once it has read that line's indentation; (`begin`, `stack`) if there is none after `begin`.

    A fresh line starts a statement outside any string, bracket or backslash continuation.
    `begin` must itself be such a line start, with `stack` the indentation stack there.

    Only text[begin:limit + 1] is read. One regex split finds its strings and comments; without
    them it is a skeleton (a string becomes one character, a comment nothing) whose line starts
    are exactly the line starts outside strings, and bracket depth is a count of brackets. Python
    then walks back over lines from `limit`, never over the whole prefix: the first fresh line
    met is the answer, and its stack is the chain of the nearest earlier fresh lines indented
    less (the blocks that enclose it), which is the stack `tokenize` keeps there.
    """
    parts = _LITERAL.split(text[begin : limit + 1])
    literals = parts[1::2]
    opened = min((i for q in _OPEN if (i := _index(literals, q)) is not None), default=None)
    if opened is not None:
        parts, literals = parts[: 2 * opened + 2], literals[: opened + 1]
    shown = parts[:]
    shown[1::2] = ["" if lit[0] == "#" else "S" for lit in literals]
    code = "".join(shown)
    # A string that does not close in the text read (an unmatched triple quote, or a quote left
    # in the code): a line may start with it, but nothing after it is known to be code.
    cuts = [i for i in (code.find("'"), code.find('"')) if i >= 0]
    if opened is not None:
        cuts.append(len(code) - 1)
    end = min(cuts) + 1 if cuts else len(code)
    walk = _LinesBack(code, end, first_is_line=begin == 0 or text[begin - 1] == "\n")
    found = walk.next()
    if found is None:
        return begin, stack
    line, column = found
    chain = [column]
    while chain[-1] > 0 and (enclosing_line := walk.next(below=chain[-1])) is not None:
        chain.append(enclosing_line[1])  # the nearest earlier line indented less: its block
    enclosing = [level for level in stack if level < chain[-1]]
    # The skeleton position of the line -> the text's offset (a line starts in code, or with a
    # string that the skeleton shows as one character at the same place): the last part that
    # starts at or before it, found walking back from the end (the line is near it).
    j, code_at, text_at = len(shown), len(code), sum(map(len, parts))
    while code_at > line:
        j -= 1
        code_at, text_at = code_at - len(shown[j]), text_at - len(parts[j])
    at = begin + text_at + (line - code_at if j % 2 == 0 else 0)
    return at, (*enclosing, *reversed(chain))


def _index(items: list[str], item: str) -> int | None:
    """The first index of `item` in `items` (a C-speed search), or None."""
    try:
        return items.index(item)
    except ValueError:
        return None


class _LinesBack:
    """The fresh lines of the skeleton `code` that start before `end`, nearest first.

    `next(below)` gives the next one indented less than `below` (any when None), as (start,
    indentation column), or None. Candidate lines come from a regex over windows of growing
    size going back, and with spaces-only indentation the regex itself asks for an indentation
    under `below`: walking to the enclosing class line of a 2,000-line class then touches only
    the few lines indented less. Bracket depth is tracked by counting brackets (C speed) between
    the lines that are looked at."""

    def __init__(self, code: str, end: int, *, first_is_line: bool) -> None:
        self.code, self.end, self.first_is_line = code, end, first_is_line
        self.spaces_only = "\t" not in code and "\f" not in code
        self.depth, self.at = _depth(code, 0, end), end  # the bracket depth at `at`
        self.searched = end  # lines starting at or after this were already listed
        self.window = _FIRST_WINDOW
        self.pending: list[tuple[int, int]] = []  # listed, not yet looked at: farthest first

    def next(self, below: int | None = None) -> tuple[int, int] | None:
        while True:
            if not self.pending:
                if self.searched <= 0:
                    return None
                low, self.window = max(0, self.searched - self.window), self.window * 2
                lines = _statements_under(below if self.spaces_only else None)
                # A match starting before `searched` ends on its own line.
                stop = self.code.find("\n", self.searched - 1) + 1 or self.end
                self.pending = [
                    (m.start(), m.end(1))
                    for m in lines.finditer(self.code, low, min(stop, self.end))
                    if m.start() < self.searched
                ]
                self.searched = low
                continue
            start, indent_end = self.pending.pop()
            if start == 0 and not self.first_is_line:
                return None
            column = _column(self.code[start:indent_end])
            if below is not None and column >= below:
                continue
            self.depth -= _depth(self.code, start, self.at)
            self.at = start
            code = self.code
            continued = code.endswith("\\\n", 0, start) or code.endswith("\\\r\n", 0, start)
            if self.depth == 0 and not continued:
                return start, column


@functools.lru_cache(maxsize=64)
def _statements_under(below: int | None) -> re.Pattern[str]:
    """Line starts that can start a statement (indentation, then not blank, not a closer), with
    an indentation of spaces under `below` columns when it is given."""
    indent = r"[ \t\f]*" if below is None else f" {{0,{below - 1}}}"
    return re.compile(rf"^({indent})[^\s)\]}}]", re.MULTILINE)


class _Stream:
    """The fingerprint tokens of a Python text from a fresh line `start`, lazily, read in the
    tokenizer state the file has there, with where the reader is and the indentation stack.

    The state is recreated by a synthetic prefix, one line per indentation level of `stack`
    (identical for two texts compared from identical states, so it never makes a difference);
    with it the tokens from `start` on are those of the whole file, DEDENTs included. With
    `opened` (brackets open at `start`, see `_inside_brackets`), one more line, a statement
    that opens them, puts the reader inside them, as in the file."""

    def __init__(self, text: str, start: int, stack: tuple[int, ...], opened: str = "") -> None:
        self.text = text
        self.pos = start  # where the next line starts: the tokenizer reads one line at a time
        self.prefix = [" " * column + "_\n" for column in stack[1:]]
        if opened:
            self.prefix.append(" " * stack[-1] + "_" + opened + "\n")
        self.indents = [0]
        self.boundary = False  # the last token ended a line, and nothing of the next was read
        self.tokens = self._generate()

    def _readline(self) -> str:
        if self.prefix:
            return self.prefix.pop(0)
        end = self.text.find("\n", self.pos)  # io.StringIO's readline splits at \n only
        end = len(self.text) if end < 0 else end + 1
        line, self.pos = self.text[self.pos : end], end
        return line

    def _generate(self) -> Iterator[tuple[int, str]]:
        """The fingerprint's tokens. A statement that may be ignorable (it starts with a string
        or a logger's name) is held until it ends; any other is passed on token by token, so
        that a comparison stops at the first differing token even inside a statement of
        hundreds of lines (a table of settings)."""
        held: list[tokenize.TokenInfo] | None = None  # the statement being held back
        started = False  # a statement is open (held or passed on)
        for tok in tokenize.generate_tokens(self._readline):
            kind = tok.type
            if kind in _SKIP:
                continue
            if kind in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                if kind == tokenize.INDENT:
                    self.indents.append(_column(tok.string))
                elif kind == tokenize.DEDENT and len(self.indents) > 1:
                    self.indents.pop()
                self.boundary = False
                yield from _ended(held, started)
                held, started = None, False
                yield (kind, "")  # indentation width is not meaning
            elif kind == tokenize.NEWLINE or (kind == tokenize.OP and tok.string == ";"):
                rest = _ended(held, started)
                held, started = None, False
                self.boundary = False
                yield from rest[:-1]
                # At a line boundary only once the statement's last token is out.
                self.boundary = kind == tokenize.NEWLINE and not self.prefix
                yield from rest[-1:]
            elif held is not None:
                held.append(tok)
            else:
                if not started and (
                    kind == tokenize.STRING or (kind == tokenize.NAME and tok.string in _LOGGERS)
                ):
                    held = [tok]
                else:
                    self.boundary = False
                    yield (kind, tok.string)
                started = True
        yield from _ended(held, started)


def _ended(held: list[tokenize.TokenInfo] | None, started: bool) -> list[tuple[int, str]]:
    """The rest of a statement's fingerprint once it ends: a held one unless it is ignorable,
    then the NEWLINE that closes every statement not dropped."""
    if held is not None and _is_ignorable(held):
        return []
    rest = [(t.type, t.string) for t in held or ()]
    return [*rest, (tokenize.NEWLINE, "")] if started else rest


# Identical text ahead of both readers worth skipping instead of tokenizing (characters).
_SKIP_AHEAD = 2048


def _same_from(
    a_text: str, b_text: str, start: int, stack: tuple[int, ...], opened: str = ""
) -> bool:
    """Whether `a_text` and `b_text`, identical before the fresh line at `start` (indentation
    stack `stack`), have the same fingerprint from there; False at the first differing token or
    a tokenize error.

    Where both readers stand at a line boundary with the same indentation stack and long
    identical text lies ahead, both restart at the last fresh line before the next difference:
    the skipped text is identical and read in the same state, so it gives the same tokens."""
    a, b = _Stream(a_text, start, stack, opened), _Stream(b_text, start, stack, opened)
    try:
        while True:
            x, y = next(a.tokens, None), next(b.tokens, None)
            if x != y:
                return False
            if x is None:
                return True
            if not (a.boundary and b.boundary and a.indents == b.indents):
                continue
            pa, pb = a.pos, b.pos
            if a_text[pa : pa + _SKIP_AHEAD] != b_text[pb : pb + _SKIP_AHEAD]:
                continue
            gap = _common_prefix(a_text[pa:], b_text[pb:])
            if gap == len(a_text) - pa == len(b_text) - pb:
                return True  # the rest is identical and read in the same state
            line = a_text.rfind("\n", pa, pa + gap) + 1
            if line - pa < _SKIP_AHEAD:
                continue
            restart, indents = _last_fresh(a_text, line - 1, pa, tuple(a.indents))
            if restart > pa:
                shift = pb - pa
                a = _Stream(a_text, restart, indents)
                b = _Stream(b_text, restart + shift, indents)
    except _TOKENIZE_ERRORS:
        return False


def _common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """Length of the common prefix (of texts, bytes or lists), by bisection over C-speed slice
    comparisons."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: Sequence[object], b: Sequence[object], limit: int) -> int:
    """Length of the common suffix (of bytes or lists), at most `limit`, by bisection like
    `_common_prefix`."""
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid : len(a) - low] == b[len(b) - mid : len(b) - low]:
            low = mid
        else:
            high = mid - 1
    return low


def _python_cosmetic(old: bytes, new: bytes) -> bool:
    """Token-stream equivalence (see module docstring), tokenizing from the last fresh line
    before the first difference, skipping long identical stretches, and stopping at the first
    unit that differs.

    Before that line the texts (and so the tokens) are identical, and the tokenizer's state there
    (an indentation stack) is recreated (`_Stream`). A real change is found near the first changed
    line, so its cost does not grow with the size of the file (ATOM's model_runner.py is one
    2,500-line class); identical text between two edits is skipped, not tokenized.
    """
    a_text, b_text = _decode_python(old), _decode_python(new)
    if a_text is None or b_text is None:
        return False
    # The first differing character, then the start of its line (identical in both texts).
    line_start = a_text.rfind("\n", 0, _common_prefix(a_text, b_text)) + 1
    # Strictly before the differing line: the stack must be the same in both texts.
    start, stack = _last_fresh(a_text, line_start - 1) if line_start else (0, (0,))
    start, opened = _inside_brackets(a_text, start, line_start)
    return _same_from(a_text, b_text, start, stack, opened)


# Characters of one statement before its changed line from which on the comparison starts at
# that line, inside the statement's brackets, instead of tokenizing both texts up to it (ATOM's
# utils/envs.py is one 1,500-line dict: each commit to it cost ~2.5 ms more, the release ~10 ms).
_BRACKET_RESTART = 256
_BRACKET_CHARS = re.compile(r"[][(){};]")
_CLOSING = {")": "(", "]": "[", "}": "{"}
_NAME = re.compile(r"[A-Za-z_]\w*")


def _inside_brackets(text: str, start: int, line: int) -> tuple[int, str]:
    """(`line`, the brackets open there, in order) when the line starting at `line` lies inside
    the brackets of the statement that starts at the fresh line `start`, far enough from it;
    else (`start`, "").

    Only where tokenize's state at `line` follows from the text alone: `line` is outside any
    string and no backslash continues the line before it, the brackets nest properly, no `;`
    ends a statement inside them, and the statement is not one that `_Stream` holds back to
    drop it whole (one that starts with a string or a logger's name): then its tokens from
    `line` on are the file's, after the tokens of a statement that opens the same brackets."""
    if line - start < _BRACKET_RESTART:
        return start, ""
    parts = _LITERAL.split(text[start:line])
    shown = [p if i % 2 == 0 else ("" if p[0] == "#" else "S") for i, p in enumerate(parts)]
    code = "".join(shown)
    unknown = any(p in _OPEN for p in parts[1::2]) or "'" in code or '"' in code
    if unknown or code.endswith(("\\\n", "\\\r\n")) or _may_be_held(parts):
        return start, ""
    brackets: list[str] = []
    for ch in _BRACKET_CHARS.findall(code):
        if ch in "([{":
            brackets.append(ch)
        elif ch == ";" or not brackets or brackets.pop() != _CLOSING[ch]:
            return start, ""
    return (line, "".join(brackets)) if brackets else (start, "")


def _may_be_held(parts: list[str]) -> bool:
    """Whether the first token of text split by `_LITERAL` (`parts`) may be a string or a
    logger's name (a string prefix such as `rb` counts as a string)."""
    for i, part in enumerate(parts):
        if i % 2:  # a literal: a comment is skipped, a string is the first token
            if part[0] != "#":
                return True
            continue
        code = part.lstrip()
        if code:
            name = _NAME.match(code)
            if name is None:
                return False
            prefix = name.end() == len(code) and i + 1 < len(parts) and parts[i + 1][0] != "#"
            return prefix or name.group() in _LOGGERS
    return True


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


def changed_lines(
    path: str, old: bytes, new: bytes, relevant: Callable[[list[str]], list[str]] | None = None
) -> list[str]:
    """Lines added, then lines removed, by old -> new, without blank and full-line comment lines.

    Content gates are evaluated on these. With `relevant` (a filter that keeps every line a
    gate could fire on) only the lines it keeps are returned.
    """
    a, b = _middle_lines(old, new)
    added, removed = _line_changes(a, b, relevant)
    style = "#" if is_python(path) else _comment_style(path)
    # Added lines first: a reason quoting the first matching line then shows the new state.
    lines = [
        line
        for line in added + removed
        if (stripped := line.strip()) and not (style and stripped.startswith(style))
    ]
    return lines if relevant is None else relevant(lines)


def _middle_lines(old: bytes, new: bytes) -> tuple[list[str], list[str]]:
    """The lines of `old` and `new` between their common head and tail (the lines equal at both
    ends, the head first, as two line-by-line walks would find them).

    Most edits are small, so only the bytes between the common head and tail are decoded: the
    lines before the last line break of the common leading bytes, and after the first one of
    the common trailing bytes, are the same on both sides (UTF-8 decoding and line splitting
    restart cleanly after a `\n`). Where the middle lines of one side are all equal to the
    other's first ones, the head may run on into the tail: then the whole rest is decoded."""
    head = old.rfind(b"\n", 0, _common_prefix(old, new)) + 1
    same = _common_suffix(old, new, min(len(old), len(new)) - head)
    tail = len(old) - (old.find(b"\n", len(old) - same) + 1) if same else 0
    tail = 0 if tail == len(old) else tail  # no line break in the common trailing bytes
    a, b = _lines(old, head, tail), _lines(new, head, tail)
    start = _common_prefix(a, b)
    if tail and start == min(len(a), len(b)):
        a, b = _lines(old, head, 0), _lines(new, head, 0)
        start = _common_prefix(a, b)
    stop = _common_suffix(a, b, min(len(a), len(b)) - start)
    return a[start : len(a) - stop], b[start : len(b) - stop]


def _lines(data: bytes, head: int, tail: int) -> list[str]:
    return data[head : len(data) - tail].decode("utf-8", "replace").splitlines()


def _line_changes(
    a: list[str], b: list[str], relevant: Callable[[list[str]], list[str]] | None = None
) -> tuple[list[str], list[str]]:
    """(added, removed) lines of a -> b; with `relevant`, those it keeps are all there are.

    A line that occurs more often on one side is changed whatever the alignment. When the
    other lines (as often on both sides) also come in the same order, nothing moved, and those
    are all the changes: found with two counts instead of a sequence diff, which for a file of
    thousands of lines costs more than everything else the precision diff does with it. So are
    they when none of the other lines that may have moved passes `relevant`. Only
    a move that matters takes difflib (its junk heuristic may report a few unchanged lines as
    changed in big files; that errs towards firing a gate, never away).
    """
    if not a or not b:
        return b, a
    count_a, count_b = Counter(a), Counter(b)
    kept_a = [line for line in a if count_a[line] == count_b[line]]
    kept_b = [line for line in b if count_a[line] == count_b[line]]
    if kept_a == kept_b or (relevant is not None and not relevant(_moved(kept_a, kept_b))):
        # Each changed text once, where it first occurs: which copy of a repeated line (`)`,
        # a blank) changed is not knowable without an alignment, and no gate depends on it.
        return (
            list(dict.fromkeys(line for line in b if count_b[line] > count_a[line])),
            list(dict.fromkeys(line for line in a if count_a[line] > count_b[line])),
        )
    added: list[str] = []
    removed: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            removed.extend(a[i1:i2])
            added.extend(b[j1:j2])
    return added, removed


def _moved(a: list[str], b: list[str]) -> list[str]:
    """The lines of `a` between its common head and tail with `b` (each once): whatever moved
    from `a` to `b` is among them."""
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return list(dict.fromkeys(a[head : len(a) - tail]))
