"""YAML scalars as PyYAML reads them, for both parsing paths (one resolver serves both).

YAML 1.1 (PyYAML, which InferenceX's tooling uses) and YAML 1.2 disagree on plain scalars such
as `yes`, `on` or `012`: such a scalar reads as `Ambiguous` (PyYAML's value, and the fact), so
every tool reads the same entry. Also the character rules that values share with the file.
"""

from __future__ import annotations

import re
from functools import cache

from ...core.record import Record


class _LazyPattern:
    """A regex compiled on first use: the hook starts a fresh interpreter per commit and most
    patterns here serve rare paths, so compiling them all at import would cost more than the
    parse itself."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: object = None

    def __getattr__(self, name: str) -> object:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return getattr(self._compiled, name)


def lazy_re(pattern: str | bytes, flags: int = 0) -> re.Pattern:  # type: ignore[type-arg]
    return _LazyPattern(pattern, flags)  # type: ignore[return-value]


class Odd(Record):
    """A scalar that is not a string/bool/int/null for our purposes (float, date, map, ...)."""

    kind: str
    text: str


class Ambiguous(Record):
    """A plain scalar that YAML 1.1 and YAML 1.2 read differently (`yes`, `on`, `012`, ...).

    `value` is what PyYAML (YAML 1.1, InferenceX's reader) makes of it: the verdict follows
    PyYAML, the ambiguity itself is a house-style finding."""

    kind: str
    text: str
    value: object = None


@cache
def load_yaml() -> tuple[object, object]:
    """PyYAML and its resolver, imported on first need: an entry of plain strings and quoted
    text never needs them, and importing PyYAML is a third of the hook's start-up."""
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    return yaml, yaml.resolver.Resolver()


_TAG = "tag:yaml.org,2002:"
# First characters for which PyYAML's implicit resolvers can give a non-string (see resolver.py).
_RESOLVABLE_FIRST = frozenset("yYnNtTfFoO-+0123456789.~<=")
_NUMERIC_CHARS = frozenset("0123456789+-._: xXoObBaAcCdDeEfFtTzZiInN")
_YAML12_INT = lazy_re(r"[-+]?(?:0|[1-9][0-9]*)")
YAML12_BOOL = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}

# The booleans of YAML 1.1 (what PyYAML makes of a plain flag value); the ones outside
# YAML12_BOOL are also style findings (yaml-ambiguous).
YAML11_BOOL = {
    **dict.fromkeys(("yes", "Yes", "YES", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "off", "Off", "OFF"), False),
    **YAML12_BOOL,
}


def plain(text: str) -> object:
    """Value of a plain scalar as PyYAML reads it, or `Ambiguous` where YAML 1.2 disagrees."""
    if not text:
        return None
    if text[0] not in _RESOLVABLE_FIRST:
        return text
    if len(text) > 5 and not _NUMERIC_CHARS.issuperset(text):
        # Longer than every YAML 1.1 bool/null word, with a character no int, float or
        # timestamp can hold: a string, without importing PyYAML for it.
        return text
    # The flags' booleans and null, as PyYAML's resolver reads them, without importing it (a
    # third of a hook run that meets `evals-only: true` in an entry off the house style). Its
    # boolean words are exactly YAML11_BOOL's (tests/changelog/test_entries.py checks them).
    if text in YAML11_BOOL:
        value = YAML11_BOOL[text]
        return value if text in YAML12_BOOL else Ambiguous(kind="boolean", text=text, value=value)
    if text in ("~", "null", "Null", "NULL"):
        return None
    yaml, resolver = load_yaml()
    tag = resolver.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[attr-defined]
    if tag == _TAG + "str":
        return text
    if tag == _TAG + "int":
        # PyYAML's own constructor (sexagesimal, octal, `_`); Python refuses to convert more than
        # 4,300 digits (ValueError, a crash in PyYAML): that is a bad integer, not a traceback.
        try:
            if _YAML12_INT.fullmatch(text):
                return int(text)
            node = yaml.ScalarNode(tag, text)  # type: ignore[attr-defined]
            value = yaml.constructor.SafeConstructor().construct_yaml_int(node)  # type: ignore[attr-defined]
        except ValueError:
            return Odd(kind="integer too long for PyYAML", text=text[:20] + "...")
        return Ambiguous(kind="integer", text=text, value=value)
    if tag == _TAG + "null":
        return None
    return Odd(kind=tag.rsplit(":", 1)[-1], text=text)


_DQ_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_DQ_ESCAPE = lazy_re(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")


def _dq_unescape(match: re.Match[str]) -> str:
    hexa = match.group(1) or match.group(2) or match.group(3)
    if hexa:
        return chr(int(hexa, 16))
    char = _DQ_ESCAPES.get(match.group(4))
    if char is None:
        raise ValueError(match.group(0))
    return char


# A line's value part: a double-quoted, single-quoted or plain scalar, then an optional comment.
_DQ = lazy_re(r'"((?:[^"\\]|\\.)*)"[ ]*(?:[ ]#.*)?$')
_SQ = lazy_re(r"'((?:[^']|'')*)'[ ]*(?:[ ]#.*)?$")
_PLAIN_BAD_FIRST = frozenset("[]{}#&*!|>'\"%@`,")
NOT_SIMPLE = object()  # the fast path cannot read this value: fall back to the event parser


def read_value(text: str) -> object:
    """Scalar on one line (after `key: ` or `- `); `NOT_SIMPLE` when it is not one-line simple."""
    first = text[0]
    if first == '"':
        if text[-1] == '"' and len(text) > 1 and '"' not in text[1:-1] and "\\" not in text:
            return text[1:-1]
        m = _DQ.match(text)
        if m is None:
            return NOT_SIMPLE
        body = m.group(1)
        if "\\" not in body:
            return body
        try:
            return _DQ_ESCAPE.sub(_dq_unescape, body)
        except ValueError:
            return NOT_SIMPLE
    if first == "'":
        m = _SQ.match(text)
        return NOT_SIMPLE if m is None else m.group(1).replace("''", "'")
    if first in _PLAIN_BAD_FIRST or (first in "-?:" and text[1:2] in ("", " ")):
        return NOT_SIMPLE
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut]
    text = text.rstrip(" ")
    if ": " in text or text.endswith(":"):
        return NOT_SIMPLE
    return plain(text)


def describe(value: object) -> str:
    if isinstance(value, (Odd, Ambiguous)):
        return f"{value.kind} `{value.text}`"
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{type(value).__name__} {value!r}"


def printable(text: str) -> bool:
    """No control, line-break, BOM or non-character code points (a str regex over the astral
    ranges is slow, so non-ASCII text is checked as UTF-8 bytes)."""
    if text.isascii():
        return text.isprintable()
    if "\ufeff" in text or "\n" in text or "\t" in text or "\r" in text or "\0" in text:
        return False
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from escapes
        return False
    return bad_char(raw) is None and unsafe_char(text) is None


# Unicode categories that are never text a reviewer can see: format characters (bidi controls,
# zero-width joiners: "trojan source"), controls, surrogates, private use, unassigned. An
# appended value holding one is an error even where InferenceX would accept it.
UNSAFE_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Co", "Cn"})


def unsafe_char(text: str) -> str | None:
    """The first invisible, control, private-use or unassigned character of `text`, if any."""
    if text.isascii():
        return None
    import unicodedata  # deferred: not on the commit hook's usual path (start-up)

    for char in text:
        if char >= "\x80" and unicodedata.category(char) in UNSAFE_CATEGORIES:
            return char
    return None


# Characters YAML readers reject or treat as line breaks (tab, CR, NUL have their own findings).
# Code points YAML readers reject or read as line breaks, as UTF-8: C0/C1 controls, DEL, U+2028,
# U+2029, U+FFFE/U+FFFF, a BOM after the start (tab, CR, NUL have their own findings). Each
# pattern starts with a literal so the regex engine skips ahead at memchr speed; translate()
# finds ASCII controls without it.
_ASCII_OK = bytes([9, 10, 13, 0, *range(0x20, 0x7F), *range(0x80, 0x100)])
_ASCII_CONTROL = lazy_re(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UTF8_BAD = tuple(
    lazy_re(p)
    for p in (rb"\xc2[\x80-\x9f]", rb"\xe2\x80[\xa8\xa9]", rb"\xef\xbf[\xbe\xbf]", rb"\xef\xbb\xbf")
)


def bad_char(data: bytes) -> re.Match[bytes] | None:
    """First non-printable character of valid UTF-8 `data` (a leading BOM is not counted)."""
    hits = []
    if data.translate(None, _ASCII_OK):
        hits.append(_ASCII_CONTROL.search(data))
    if not data.isascii():
        hits.extend(
            pattern.search(data, 1 if pattern is _UTF8_BAD[3] else 0) for pattern in _UTF8_BAD
        )
    found = [m for m in hits if m is not None]
    return min(found, key=lambda m: m.start()) if found else None


# The strings pydantic's lax mode reads as booleans (InferenceX's ChangelogEntry is a pydantic
# model, so `evals-only: "yes"` passes its CI): accepted, as a house-style finding.
_LAX_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_LAX_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def lax_bool(value: object) -> bool | None:
    """`value` as pydantic's lax `bool` reads it, or None where pydantic rejects it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, Odd) and value.kind == "float":
        number = _float(value.text)
        return bool(number) if number in (0.0, 1.0) else None
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in _LAX_TRUE or lowered in _LAX_FALSE:
            return lowered in _LAX_TRUE
    return None


def lax_int(value: object) -> int | None:
    """`value` as pydantic's lax `int` reads it (bool, integral float, numeric string)."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Odd) and value.kind == "float":
        number = _float(value.text)
        return int(number) if number is not None and number.is_integer() else None
    if isinstance(value, str) and len(value) <= 4300:
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _float(text: str) -> float | None:
    import math  # deferred: not on the commit hook's usual path (start-up)

    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None
