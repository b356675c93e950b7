"""Cosmetic-change detection (validate.cosmetic): what may and may not be called cosmetic."""

from __future__ import annotations

import io
import tokenize

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from relpipe.validate.precision import cosmetic

BASE = '''"""Module doc."""
import logging

logger = logging.getLogger(__name__)


def scale(x, s):
    """Scale x."""
    y = x * s
    return y
'''


@pytest.mark.parametrize(
    "new",
    [
        BASE.replace("    y = x * s\n", "    # multiply\n    y = x * s  # by s\n"),
        BASE.replace('"""Scale x."""', '"""Scale x by s.\n\n    Longer text.\n    """'),
        BASE.replace('    """Scale x."""\n', ""),
        BASE.replace("    return y\n", '    logger.info("y=%s", y.sum())\n    return y\n'),
        BASE.replace(
            "    return y\n",
            "    logging.debug(\n        'multi %s',\n        y,\n    )\n    return y\n",
        ),
        BASE.replace("    y = x * s\n    return y\n", "    y = x * s\n\n\n    return y\n"),
        BASE.replace("    ", "        "),  # indentation width only
        BASE.replace("    return y\n", "    'a bare string statement'\n    return y\n"),
        BASE.replace("    return y\n", "    return y;  logger.warning('x')\n"),
    ],
    ids=[
        "comments",
        "docstring-edit",
        "docstring-removed",
        "logging-call",
        "multiline-logging",
        "blank-lines",
        "indent-width",
        "bare-string",
        "logging-after-semicolon",
    ],
)
def test_python_cosmetic_edits(new: str) -> None:
    assert cosmetic.is_cosmetic("atom/x.py", BASE.encode(), new.encode())


@pytest.mark.parametrize(
    "new",
    [
        BASE.replace("x * s", "x * s * 2"),
        BASE.replace("    return y\n", "    print(y)\n    return y\n"),  # print is behaviour
        BASE.replace("    return y\n", "    logger.info('x').propagate = False\n    return y\n"),
        BASE.replace("    return y\n", "    logger.info(x.pop())\n    y = 1\n    return y\n"),
        BASE.replace("logging.getLogger(__name__)", "logging.getLogger('atom')"),
        BASE.replace("def scale(x, s):", "def scale(x, s):\n    pass"),
        BASE + "def broken(:\n",  # does not tokenize the same way: never cosmetic
        BASE.replace('"""Module doc."""', 'X = """Module doc."""'),
    ],
    ids=[
        "arith",
        "print",
        "logging-chain",
        "extra-code",
        "logger-name",
        "pass",
        "syntax",
        "string-assigned",
    ],
)
def test_python_real_edits(new: str) -> None:
    assert not cosmetic.is_cosmetic("atom/x.py", BASE.encode(), new.encode())


def test_untokenizable_python_is_never_cosmetic() -> None:
    bad = b"def f(:\n    '''unterminated\n"
    assert cosmetic.python_fingerprint(bad) is None
    assert not cosmetic.is_cosmetic("a.py", bad, bad + b"\n")


CPP = b"""/* fused rmsnorm */
#include <hip.h>
// accumulate in fp32
float f(float x) { return x * 2.0f; }
"""


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        (
            "k.cu",
            CPP,
            CPP.replace(b"// accumulate in fp32", b"// accumulate in fp32 (faster)\n\n"),
            True,
        ),
        (
            "k.cu",
            CPP,
            CPP.replace(b"/* fused rmsnorm */", b"/*\n * fused rmsnorm\n * v2\n */"),
            True,
        ),
        ("k.cu", CPP, CPP.replace(b"2.0f", b"2.5f"), False),
        ("k.cu", CPP, CPP + b"/* c */ int y = 1;\n", False),  # code after a block comment counts
        ("k.cu", CPP, CPP.replace(b"float f", b"  float f"), True),
        ("c.yaml", b"a:\n  b: 1\n", b"# note\na:\n  b: 1   \n", True),
        ("c.yaml", b"a:\n  b: 1\n", b"a:\nb: 1\n", False),  # YAML indentation is structure
        ("run.sh", b"echo hi\n", b"# say hi\necho hi\n", True),
        ("data.bin", b"\0\1", b"\0\1 ", False),
        ("notes.txt", b"a  b\n", b"a b\n", False),  # inner whitespace is kept
    ],
)
def test_text_files(path: str, old: bytes, new: bytes, expected: bool) -> None:
    assert cosmetic.is_cosmetic(path, old, new) is expected


def test_changed_lines_lists_added_first_and_drops_comments() -> None:
    old = b"a = 1\nb = 2\n# old comment\nc = 3\n"
    new = b"a = 1\nb = 20\n# new comment\n\nc = 3\n"
    assert cosmetic.changed_lines("x.py", old, new) == ["b = 20", "b = 2"]
    assert cosmetic.changed_lines("x.py", b"", b"x = 1\n") == ["x = 1"]
    assert cosmetic.changed_lines("x.py", b"x = 1\n", b"") == ["x = 1"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["x = 1", "y = x", "# c", "", "z = (1,", "'''s'''", "logger.info(1)"]),
        max_size=12,
    )
)
def test_is_cosmetic_is_reflexive_and_never_raises(lines: list[str]) -> None:
    data = "\n".join(lines).encode() + b"\n"
    fingerprint = cosmetic.python_fingerprint(data)
    assert cosmetic.is_cosmetic("f.py", data, data) is (fingerprint is not None)
    cosmetic.is_cosmetic("f.py", data, b"x = 2\n")


# --- the windowed comparison must agree with the whole-file token comparison ----------------------

SNIPPETS = [
    "import torch\n",
    "def f(x):\n    return x * 2\n",
    'def g(x):\n    """Doc.\n\ndef fake():\n    pass\n"""\n    return x\n',
    'PROMPT = """\n# header\nx = 1\n"""\n',
    "X = [\n1,\n2,\n]\n",
    "y = 1 + \\\n2\n",
    "class C:\n    # comment\n    a = 'q#q'\n\n"
    "    def m(self):\n        logger.info('m')\n        return 1\n",
    '"""Module doc."""\n',
    "z = {'a': (1,\n# inside\n2)}\n",
    "# top comment\n",
    "s = '''\nclass Fake:\n'''\n",
    # Nested blocks: the comparison starts at an indented line (a shorter indentation stack).
    "class K:\n    def m(self):\n        if x:\n            y = 1\n        z = 2\n    w = 3\n",
    "def h():\n  for i in r:\n      t = i\n  return t\n",
]
EDITS = [
    "# note\n",
    "\n",
    "    # indented note\n",
    "x = 2\n",
    "logger.info('x')\n",
    "'''doc'''\n",
    "1,\n",
    ")\n",
    '"""\n',
    "        y = 1\n",
    "    w = 3\n",
    "      t = i\n",
    "            # deep note\n",
]


def _edit_agrees(parts: list[str], edits: list[str], data: st.DataObject) -> None:
    """One line of the text of `parts` replaced by, or preceded by, one of `edits`: the windowed
    comparison says what the whole-file fingerprints say."""
    old = "".join(parts)
    lines = old.splitlines(keepends=True)
    at = data.draw(st.integers(0, len(lines)))
    edit = data.draw(st.sampled_from(edits))
    mode = data.draw(st.sampled_from(["insert", "replace"]))
    new_lines = lines[:at] + [edit] + lines[at + (mode == "replace") :]
    new = "".join(new_lines)
    a, b = cosmetic.python_fingerprint(old.encode()), cosmetic.python_fingerprint(new.encode())
    expected = a is not None and a == b
    assert cosmetic.is_cosmetic("f.py", old.encode(), new.encode()) is expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=8), st.data())
def test_windowed_comparison_equals_whole_file_comparison(
    parts: list[str], data: st.DataObject
) -> None:
    _edit_agrees(parts, EDITS, data)


# Statements whose changed line lies inside their brackets, where the comparison may start at
# that line (`_inside_brackets`): nested brackets, comments, strings with prefixes, a logger's
# call and a string statement (which must not start there: they may be dropped whole).
BRACKETED = [
    "T = {\n    'a': [1,\n          2],\n    # c\n    'b': (3, {4: 5}),\n}\n",
    "logger.info(\n    'a %s',\n    x,\n)\n",
    "call(\n    f'{x}',\n    rb'q',\n    y)\n",
    'D = dict(\n    k="""\nv""",\n    w=1,\n)\n',
    "rb'x' (\n    1,\n)\n",
    "class C:\n    m = max(\n        1,\n        2,\n    )\n",
    "u = [1 ; 2,\n 3]\n",
]
BRACKET_EDITS = [
    "    'c': 6,\n",
    "    # note\n",
    "    x,\n",
    "    'd',\n",
    "    )\n",
    "        3,\n",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*SNIPPETS, *BRACKETED]), min_size=1, max_size=6), st.data())
def test_comparison_inside_brackets_equals_whole_file_comparison(
    parts: list[str], data: st.DataObject
) -> None:
    restart = cosmetic._BRACKET_RESTART
    try:
        cosmetic._BRACKET_RESTART = 0  # start inside brackets however near the statement
        _edit_agrees(parts, [*EDITS, *BRACKET_EDITS], data)
    finally:
        cosmetic._BRACKET_RESTART = restart


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('P = """\n# header\n"""\n', 'P = """\n# header 2\n"""\n', False),  # string content
        (
            '"""Doc.\n\ndef fake():\n    pass\n"""\nx = 1\n',
            '"""Doc.\n\ndef fake():\n    pass\n"""\nx = 2\n',
            False,
        ),
        (
            '"""Doc.\n\ndef fake():\n    pass\n"""\nx = 1\n',
            '"""Doc.\n\ndef fake():\n    return\n"""\nx = 1\n',
            True,
        ),
        ("X = [\n1,\n2,\n]\n", "X = [\n3,\n2,\n]\n", False),
        ("X = [\n1,\n2,\n]\n", "X = [\n1,\n# two\n2,\n]\n", True),
        # The last statement of a block moved out of it: the same tokens from that line on, but
        # one DEDENT earlier; the comparison must start before the line that changed.
        (
            "def f():\n    if a:\n        b()\n        c()\n",
            "def f():\n    if a:\n        b()\n    c()\n",
            False,
        ),
        (
            "class A:\n    def f(self):\n        a = 1\n        # x\n        b = 2\n    g = 1\n",
            "class A:\n    def f(self):\n        a = 1\n        b = 2\n    g = 1\n",
            True,
        ),
    ],
)
def test_window_edges(old: str, new: str, expected: bool) -> None:
    assert cosmetic.is_cosmetic("m.py", old.encode(), new.encode()) is expected


# --- fresh lines: where the windowed comparison may start, against tokenize itself ---------------


def _fresh_by_tokenize(text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(line start, first token offset, indentation stack) of every line that starts a logical
    line, as `tokenize` reads the whole text."""
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    fresh, stack, at_start, depth = [], [0], True, 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{)]}":
            depth += 1 if tok.string in "([{" else -1
            if depth < 0:  # a closer with nothing open: tokenize's own reading is inconsistent
                raise SyntaxError("unbalanced brackets")
        if tok.type == tokenize.INDENT:
            stack.append(cosmetic._column(tok.string))
        elif tok.type == tokenize.DEDENT:
            stack.pop()
        elif tok.type == tokenize.NEWLINE:
            at_start = True
        elif tok.type == tokenize.ENDMARKER:
            break
        elif tok.type not in (tokenize.NL, tokenize.COMMENT) and at_start:
            start = line_starts[tok.start[0] - 1]
            fresh.append((start, start + tok.start[1], tuple(stack)))
            at_start = False
    return fresh


# Tabs, a form feed, a string continued by a backslash, an unclosed bracket left to the end.
FRESH_EXTRAS = ["if t:\n\tu = 1\n", "\fv = 2\n", "w = 'a\\\nb'\n", "q = (\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*SNIPPETS, *EDITS, *FRESH_EXTRAS]), max_size=10), st.data())
def test_fresh_lines_are_those_tokenize_reads(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    try:
        fresh = _fresh_by_tokenize(text)
    except (tokenize.TokenError, SyntaxError):
        return  # code that does not tokenize is never cosmetic: no window is opened
    limit = data.draw(st.integers(0, len(text)))
    # From the start, and from any fresh line with its stack: the last fresh line whose first
    # token is at or before `limit`, or where it began when there is none.
    begin, _, stack = data.draw(st.sampled_from([(0, 0, (0,)), *fresh]))
    expected = next(
        ((s, levels) for s, first, levels in reversed(fresh) if begin <= s and first <= limit),
        (begin, stack),
    )
    assert cosmetic._last_fresh(text, limit, begin, stack) == expected
    # The same when earlier lines are searched for in windows of a few characters at a time.
    first_window = cosmetic._FIRST_WINDOW
    try:
        cosmetic._FIRST_WINDOW = data.draw(st.integers(1, 16))
        assert cosmetic._last_fresh(text, limit, begin, stack) == expected
    finally:
        cosmetic._FIRST_WINDOW = first_window


# --- the middle lines: only the bytes between the common head and tail are decoded --------------


def _middle_by_walks(old: bytes, new: bytes) -> tuple[list[str], list[str]]:
    """Both texts decoded whole, the equal lines walked off the head, then off the tail."""
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    return a[start:end_a], b[start:end_b]


# Equal lines, line breaks git keeps apart but `splitlines` does not (\r\n, \r, form feed,
# U+2028), bytes that are not UTF-8 and decode alike, no final line break.
PIECES = [b"x\n", b"y\n", b"x\r\n", b"x\r", b"\n", b"\xff\n", b"\xfe\n", b"\xe2\x82\n", b"q\x0cr\n"]
PIECES += ["s\u2028t\n".encode(), b"x", b"y"]


@settings(max_examples=300, deadline=None)
# The head walk runs on into the common tail (x\r\n and x\n are equal lines, other bytes).
@example(head=[], old=[b"x\n", b"x\n", b"p\n"], new=[b"x\r\n"], tail=[b"x\n"])
@given(
    st.lists(st.sampled_from(PIECES), max_size=5),
    st.lists(st.sampled_from(PIECES), max_size=4),
    st.lists(st.sampled_from(PIECES), max_size=4),
    st.lists(st.sampled_from(PIECES), max_size=5),
)
def test_middle_lines_are_those_line_walks_find(
    head: list[bytes], old: list[bytes], new: list[bytes], tail: list[bytes]
) -> None:
    a, b = b"".join(head + old + tail), b"".join(head + new + tail)
    assert cosmetic._middle_lines(a, b) == _middle_by_walks(a, b)
