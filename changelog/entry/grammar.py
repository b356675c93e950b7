"""The two whole-entry grammars, both built from the field table (model.FIELDS).

In a large file, entries are first matched as a whole: against the house style (an entry it
matches is valid, with no findings) and, once enough entries missed it, against the house
style's common variants (valid, with style findings read off the match). Both are one regex
each, assembled field by field in written order from each field's kind (its values' syntax),
whether it is required (optional parts) and what it excludes, so a field added to `Entry` is
in both grammars, and a value a grammar cannot prove valid is left to the line parser.
"""

from __future__ import annotations

import re
from functools import cache

from .fields import CHOICES, COUNT, FLAG, KEYS, TEXTS, URL, Field, Finding
from .model import BY_KEY, ENTRY_START, FIELDS
from .read import indent_findings
from .scalars import YAML11_BOOL, YAML12_BOOL, lazy_re
from .schema import ambiguity_finding

# The house style as one grammar: an entry this matches is valid by construction (plain config
# keys are still checked against YAML 1.1 resolution, see `SUSPECT_PLAIN`). Quoted strings here
# use only the \" and \\ escapes and hold a non-space character.
_C_DQ = (
    r'" *(?:[^ "\\\n]|\\["\\])[^"\\\n]*(?:\\["\\][^"\\\n]*)*"'  # unrolled: no per-char alternation
)
# A plain scalar that starts with a letter is a string for PyYAML unless it is one of these YAML
# 1.1 boolean or null words (ints, floats and timestamps start with a digit, sign or dot): a
# plain pr-link `no` is the boolean false, which InferenceX's schema rejects.
_YAML11_WORDS = (
    "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL"
)
# Not one of the words as the whole value (then a comment or the line's end); a cheap guard first.
_NOT_A_WORD = r"(?!(?=[yYnNtTfFoO])(?:" + _YAML11_WORDS + r")(?: +#[^\n]*)?\n)"
_C_KEY = r"(?:[A-Za-z0-9][A-Za-z0-9_.:/*+=%~@-]*(?<!:)|" + _C_DQ + ")"


def _trimmed(quoted: str) -> str:
    """A quoted scalar's syntax without spaces at either end of its value (one URL)."""
    return quoted[0] + "(?! )" + quoted[1:-1] + "(?<! )" + quoted[-1]


_C_URL = r"(?:" + _NOT_A_WORD + r"[A-Za-z][A-Za-z0-9_.:/%?=&+~@-]*(?<!:)|" + _trimmed(_C_DQ) + ")"
# Plain list items whose first character lets YAML 1.1 read them as non-strings (`070`, `yes`).
SUSPECT_PLAIN = lazy_re(r"\n    - ([-+.0-9~<=yYnNtTfFoO][^\n]*)")
# Entries split where InferenceX counts them: at lines that start with `- config-keys:`. In a
# file it accepts each such line starts an entry and each entry starts with one (its count must
# equal PyYAML's); anything else at column 0 (a comment, a quoted scalar's continuation, stray
# text) belongs to the entry above and is judged when that entry is parsed.
NEXT_START = re.compile(r"\n(?=" + re.escape(ENTRY_START) + ")")
SEPARATED = "\n" + ENTRY_START  # one empty line, then the next entry
# Below this size the entry-by-entry path is faster than compiling the whole-entry grammar
# (which matters to the hook: it parses a suffix of a few entries in a fresh process).
CANONICAL_MIN_BYTES = 32 * 1024

# The house style's common variants, for files written by hand or by other tools: each list
# indented by any 2 or more spaces (one indentation per list: YAML reads `key:` then `- item` at
# the key's own indentation as the same list), a comment after any line, YAML 1.1 booleans in
# the flags, plain and single-quoted text. An entry it matches is valid by construction and its
# style findings follow from the match (`variant_style`), so a large file in such a style is
# checked at regex speed rather than line by line. Plain scalars are kept to what PyYAML reads
# as strings: a letter first, not a boolean or null word, no `: ` and no `#`.
_V_END = r"(?: +#(?:[^\n]*[^ \n])?)?\n"  # an optional comment (no trailing space), the newline
_V_SQ = r"' *(?:[^' \n]|'')(?:[^'\n]|'')*'"
# Words of plain text: runs of safe characters and colons not followed by a space, unrolled
# (`normal* (special normal*)*`) so that a failed match backtracks in linear time.
_V_SAFE = r"[A-Za-z0-9_.,/()+=%~@!?&*'\"-]"
_V_RUN = _V_SAFE + r"*(?::(?=[^ \n])" + _V_SAFE + "*)*"
_V_PLAIN = (
    _NOT_A_WORD + "[A-Za-z]" + _V_RUN + "(?: (?:" + _V_SAFE + r"|:(?=[^ \n]))" + _V_RUN + ")*"
)
_V_TEXT = r"(?:" + _V_PLAIN + "|" + _C_DQ + "|" + _V_SQ + ")"
_V_KEY = (
    r"(?:" + _NOT_A_WORD + r"[A-Za-z][A-Za-z0-9_.:/*+=%~@-]*(?<!:)|" + _C_DQ + "|" + _V_SQ + ")"
)
_V_URL = r"(?:" + _C_URL + "|" + _trimmed(_V_SQ) + ")"
# Entries off the house style a file has before the variants grammar is compiled for the rest.
VARIANTS_AFTER = 64
_COUNT = "[1-9][0-9]{0,17}"  # an integer >= 1 that every reader holds exactly


# How each grammar writes a field: its values' syntax by kind (an item's, for the lists), what
# ends a line (the variants allow a comment), and whether each list's items and indentation and
# each flag's word are captured as groups named by the field.
_HOUSE = (
    {KEYS: _C_KEY, TEXTS: _C_DQ, URL: _C_URL, FLAG: "(?:true|false)", COUNT: _COUNT},
    "\n",
    False,
)
_VARIANT = (
    {
        KEYS: _V_KEY,
        TEXTS: _V_TEXT,
        URL: _V_URL,
        FLAG: "(?:" + "|".join(YAML11_BOOL) + ")",
        COUNT: _COUNT,
    },
    _V_END,
    True,
)


def _choices(values: tuple[str, ...], separator: str) -> str:
    """Distinct values of `values` in any order, at least one, `separator` between them."""
    return (
        "(?:"
        + "|".join(
            re.escape(v) + (f"(?:{separator}{_choices(rest, separator)})?" if rest else "")
            for v in values
            for rest in [tuple(x for x in values if x != v)]
        )
        + ")"
    )


def _items(f: Field, value: str, end: str, named: bool) -> str:
    """A list's item lines; named: group `attr`, the first item's indentation `attr_i`."""
    if not named:
        if f.kind == CHOICES:
            return f"    - {_choices(f.allowed, chr(10) + '    - ')}\n"
        return f"(?:    - {value}\n)+"
    name, indent = f.attr, f"{f.attr}_i"
    first = f"(?P<{indent}> {{2,}})- "
    if f.kind == CHOICES:
        return f"(?P<{name}>{first}{_choices(f.allowed, end + f'(?P={indent})- ')}{end})"
    return f"(?P<{name}>{first}{value}{end}(?:(?P={indent})- {value}{end})*)"


def _line(f: Field, values: dict[str, str], end: str, named: bool, value: str | None = None) -> str:
    """Field `f` as a grammar writes it (with `value` for a one-line field's value)."""
    lead = "- " if f is FIELDS[0] else "  "
    syntax = values.get(f.kind, "")
    if f.kind in (KEYS, TEXTS, CHOICES):
        return f"{lead}{f.key}:{end}{_items(f, syntax, end, named)}"
    value = value or (f"(?P<{f.attr}>{syntax})" if named else syntax)
    return f"{lead}{f.key}: {value}{end}"


def _optional(part: str, f: Field) -> str:
    return part if f.required else f"(?:{part})?"


def grammar(values: dict[str, str], end: str, named: bool) -> str:
    """The whole-entry regex of a grammar, field by field in written order. In the house style
    (not `named`), a flag that excludes others is true alone, or false among them."""
    exclusive = [f for f in FIELDS if f.excludes] if not named else []
    span: set[str] = set()
    for f in exclusive:
        span |= {f.key, *f.excludes}
    order = [f.key for f in FIELDS]
    first = min((order.index(k) for k in span), default=len(order))
    parts = [_optional(_line(f, values, end, named), f) for f in FIELDS[:first]]
    if span:
        last = max(order.index(k) for k in span)
        assert all(not BY_KEY[k].required for k in order[first : last + 1])
        alone = "|".join(_line(f, values, end, named, "true") for f in exclusive)
        among = "".join(
            _optional(
                _line(f, values, end, named, "false" if f in exclusive else None),
                f,
            )
            for f in FIELDS[first : last + 1]
        )
        parts.append(f"(?:{alone}|{among})")
        parts.extend(_optional(_line(f, values, end, named), f) for f in FIELDS[last + 1 :])
    return "".join(parts)


@cache
def canonical() -> re.Pattern[str]:
    """The house style: an entry it matches is valid by construction."""
    return re.compile(grammar(*_HOUSE))


@cache
def variants() -> re.Pattern[str]:
    """The house style's common variants: valid, with the findings `variant_style` reads."""
    return re.compile(grammar(*_VARIANT))


_LISTS = tuple(f for f in FIELDS if f.kind in (KEYS, TEXTS, CHOICES))
_FLAGS = tuple(f for f in FIELDS if f.kind == FLAG)
_LIST_NAMES = tuple(f.attr for f in _LISTS)
# The groups that, with the lists' lengths, fix an entry's findings: its shape.
_SHAPE_GROUPS = (*(f"{f.attr}_i" for f in _LISTS), *(f.attr for f in _FLAGS))
# (index of an excluding flag's word in the shape groups, the groups of what it excludes).
_EXCLUDING = tuple(
    (_SHAPE_GROUPS.index(f.attr), tuple(BY_KEY[k] for k in f.excludes))
    for f in _FLAGS
    if f.excludes
)
_NEWLINES = ("\n",) * len(_LIST_NAMES)  # what to count in each list (its lines), in C
# The style findings of an entry of one shape, relative to its first line: (line, code, message,
# hint) each. An entry's findings follow from its shape alone (see variant_style).
_Template = tuple[tuple[int, str, str, str], ...]


def _excluded(m: re.Match[str], excluded: tuple[Field, ...]) -> bool:
    """Whether a field that a true flag excludes is set too: the line parser reports it."""
    for f in excluded:
        word = m.group(f.attr)
        if YAML11_BOOL.get(word) if f.kind == FLAG else word is not None:  # type: ignore[arg-type]
            return True
    return False


def variant_style(
    m: re.Match[str], text: str, line: int, severity: str, shapes: dict[object, _Template]
) -> tuple[Finding, ...] | None:
    """Style findings of an entry the variants grammar matched (`line`: its first line), the same
    the line parser makes of it (with `severity`); None when its flags break the schema
    (a flag with one it excludes), which the line parser then reports.

    Entries of one shape have the same findings at the same offsets, so `shapes` (one scan's
    memo) keeps them: a large file in a variant style is mostly one or a few shapes."""
    groups = m.group(*_SHAPE_GROUPS)
    for index, excluded in _EXCLUDING:
        if YAML11_BOOL.get(groups[index]) and _excluded(m, excluded):  # type: ignore[arg-type]
            return None
    # Every part of the grammar but the lists is one line: the indentations, the flags' words
    # and the lists' lengths place every finding ((-1, -1) for an absent list counts 0).
    lines_in = map(text.count, _NEWLINES, map(m.start, _LIST_NAMES), map(m.end, _LIST_NAMES))
    shape = (groups, *lines_in)
    template = shapes.get(shape)
    if template is None:
        template = shapes[shape] = tuple(
            (f.line, f.code, f.message, f.hint) for f in _variant_findings(m, text)
        )
    return tuple(
        [
            Finding(line=line + at, code=code, message=message, hint=hint, severity=severity)
            for at, code, message, hint in template
        ]
    )


def _variant_findings(m: re.Match[str], text: str) -> list[Finding]:
    """The style findings of a variants grammar match, lines counted from 0 (the entry's first)."""
    pos = m.start()
    found: list[Finding] = []
    for f in _LISTS:
        indent = m.end(f"{f.attr}_i") - m.start(f"{f.attr}_i")
        if indent > 0 and indent != 4:  # -1 - -1: an absent (optional) list
            start, stop = m.span(f.attr)
            first = text.count("\n", pos, start)
            found.extend(indent_findings(first, text.count("\n", start, stop), indent))
    for f in _FLAGS:
        word = m.group(f.attr)
        if word is not None and word not in YAML12_BOOL:
            at = text.count("\n", pos, m.start(f.attr))
            found.append(ambiguity_finding(f.key, "boolean", word, at))
    return found


__all__ = ["CANONICAL_MIN_BYTES", "VARIANTS_AFTER", "canonical", "variant_style", "variants"]
