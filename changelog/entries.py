"""perf-changelog entries: the `Entry` record, the strict fast parser, schema checks, the renderer.

This module owns the InferenceX `perf-changelog.yaml` format: a top-level YAML list whose items
start at column 0 with `- config-keys:`, keys indented 2, list items indented 4, one empty line
between entries and one final newline.

Parsing is built for the commit hook's budget (stdlib + PyYAML only, near interpreter start-up):
- byte-level checks (size, NUL, CR, UTF-8, BOM, tabs, non-printable characters, conflict
  markers, line length, final newline) run over the whole input in C-speed primitives;
- entries are split at column-0 lines (a column-0 line can only start a new list item), so each
  entry is parsed on its own, keeps its byte span and line numbers, and a suffix of a file
  (the appended part) can be parsed without the history before it;
- an entry in the house style (and its common real-world variants) is read by a line parser;
  anything else falls back to PyYAML's event stream (the C parser when available) for that
  entry only, which is where anchors, aliases, tags, merge keys, flow collections and multi-line
  scalars are seen and judged;
- in a large file, entries are first matched against whole-entry grammars: the house style
  (valid, no findings) and its common variants (valid, style findings read off the match); only
  the rest are parsed line by line.
Both paths produce the same field values (one scalar resolver serves both) and the same
findings. Duplicate keys are findings on both paths (PyYAML's loader would keep the last one).

YAML 1.1 (PyYAML, which InferenceX's tooling uses) and YAML 1.2 disagree on plain scalars such
as `yes`, `on` or `012`; such a scalar is rejected with a hint to quote it or write it as a
YAML 1.2 value, so every tool reads the same entry.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

from relpipe.changelog.errors import ChangelogError

if False:  # for type checkers only (typing.TYPE_CHECKING without importing typing, ~7 ms)
    import yaml

# Caps on untrusted input; the real changelog is 396 KB with lines up to 1,089 bytes.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 8192
# An entry the line parser cannot read goes to PyYAML's event parser, whose events cost ~100x the
# text in memory: entries over this size that need it are refused (the largest real one: 3 KB).
MAX_FALLBACK_ENTRY_BYTES = 256 * 1024


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


def _lazy_re(pattern: str | bytes, flags: int = 0) -> re.Pattern:  # type: ignore[type-arg]
    return _LazyPattern(pattern, flags)  # type: ignore[return-value]


SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
REQUIRED_KEYS = ("config-keys", "description", "pr-link")
FLAG_KEYS = ("evals-only", "all-evals", "append-only")
# Rendering order: the order the real corpus uses, then InferenceX's model order.
KEY_ORDER = (
    "config-keys",
    "scenario-type",
    "description",
    "pr-link",
    "evals-only",
    "all-evals",
    "append-only",
    "eval-min-prefill-ep",
)
ENTRY_START = "- config-keys:"

ERROR = "error"
WARNING = "warning"

# Codes of findings that concern one entry's content or layout (history may carry them; they
# are warnings there). Everything else is about the file and is always an error.
ENTRY_CODES = frozenset(
    {
        "schema",
        "yaml-ambiguous",
        "trailing-whitespace",
        "whitespace-line",
        "separator",
        "indent",
        "continuation",
        "blank-in-entry",
        "duplicate-entry",
        "pr-link",
    }
)


@dataclass(frozen=True, slots=True)  # slots: a large audit holds hundreds of thousands
class Finding:
    """One problem, located at a line of the file being checked (1-based; 0 = whole file)."""

    line: int
    code: str
    message: str
    hint: str
    severity: str = ERROR

    def format(self, path: str) -> str:
        where = f"{path}:{self.line}" if self.line else path
        return f"{where}: {self.severity}: {self.message} (hint: {self.hint})"


@dataclass(frozen=True)
class Entry:
    """One perf-changelog entry, validated by `validate_entry`; flags default to absent/false."""

    config_keys: tuple[str, ...]
    description: tuple[str, ...]
    pr_link: str
    scenario_type: tuple[str, ...] | None = None
    evals_only: bool = False
    all_evals: bool = False
    append_only: bool = False
    eval_min_prefill_ep: int | None = None


@dataclass(frozen=True)
class Block:
    """One entry as it sits in a file: byte span, line span, text; fields and Entry on demand.

    `start`/`end` are byte offsets of the entry's lines (end is after its last line's newline);
    `line`/`end_line` are 1-based inclusive. `canonical` entries matched the house-style grammar
    as a whole, which proves them valid, so they are only parsed into fields when asked (this is
    what keeps a 20,000-entry file fast). `style` is set for entries that matched the grammar of
    the house style's common variants instead (other item indentation, comments, YAML 1.1
    booleans): also valid by construction, with these style findings; their fields are parsed on
    demand too. `entry` is None when the fields break the schema.
    """

    start: int
    end: int
    line: int
    end_line: int
    text: str
    canonical: bool
    style: tuple[Finding, ...] | None = None

    @property
    def proven(self) -> bool:
        """Valid by construction (a grammar matched): `entry` is not None, without parsing."""
        return self.canonical or self.style is not None

    @cached_property
    def _parsed(
        self,
    ) -> tuple[dict[str, object], dict[str, int], Entry | None, tuple[Finding, ...]]:
        return _parse_block(self.text.split("\n")[:-1], self.line)

    @property
    def fields(self) -> Mapping[str, object]:
        return self._parsed[0]

    @property
    def key_lines(self) -> Mapping[str, int]:
        return self._parsed[1]

    @property
    def entry(self) -> Entry | None:
        return self._parsed[2]

    @property
    def findings(self) -> tuple[Finding, ...]:
        if self.canonical:
            return ()
        return self.style if self.style is not None else self._parsed[3]

    def scalar(self, key: str) -> object:
        """A one-line field's value; for a canonical entry without parsing the whole entry."""
        if not self.canonical or "_parsed" in self.__dict__:
            return self.fields.get(key)
        start = self.text.find(f"\n  {key}: ")
        if start < 0:
            return None
        start += len(key) + 5
        return _value(self.text[start : self.text.index("\n", start)])


@dataclass(frozen=True)
class Changelog:
    """A parsed changelog (or suffix of one): its entries and every finding, in line order."""

    path: str
    blocks: tuple[Block, ...]
    findings: tuple[Finding, ...]
    line_count: int

    @property
    def entries(self) -> tuple[Entry | None, ...]:
        return tuple(block.entry for block in self.blocks)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)


@dataclass(frozen=True)
class _Odd:
    """A scalar that is not a string/bool/int/null for our purposes (float, date, map, ...)."""

    kind: str
    text: str


@dataclass(frozen=True)
class _Ambiguous:
    """A plain scalar that YAML 1.1 and YAML 1.2 read differently (`yes`, `on`, `012`, ...).

    `value` is what PyYAML (YAML 1.1, InferenceX's reader) makes of it: the verdict follows
    PyYAML, the ambiguity itself is a house-style finding."""

    kind: str
    text: str
    value: object = None


# ---------------------------------------------------------------------------------------------
# Scalars (one resolver for both parsing paths)


@cache
def _yaml() -> tuple[object, object]:
    """PyYAML and its resolver, imported on first need: an entry of plain strings and quoted
    text never needs them, and importing PyYAML is a third of the hook's start-up."""
    import yaml

    return yaml, yaml.resolver.Resolver()


_TAG = "tag:yaml.org,2002:"
# First characters for which PyYAML's implicit resolvers can give a non-string (see resolver.py).
_RESOLVABLE_FIRST = frozenset("yYnNtTfFoO-+0123456789.~<=")
_NUMERIC_CHARS = frozenset("0123456789+-._: xXoObBaAcCdDeEfFtTzZiInN")
_YAML12_INT = _lazy_re(r"[-+]?(?:0|[1-9][0-9]*)")
_YAML12_BOOL = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}


def _plain(text: str) -> object:
    """Value of a plain scalar as PyYAML reads it, or `_Ambiguous` where YAML 1.2 disagrees."""
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
    # boolean words are exactly _YAML11_BOOL's (tests/changelog/test_entries.py checks them).
    if text in _YAML11_BOOL:
        value = _YAML11_BOOL[text]
        return value if text in _YAML12_BOOL else _Ambiguous("boolean", text, value)
    if text in ("~", "null", "Null", "NULL"):
        return None
    yaml, resolver = _yaml()
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
            return _Odd("integer too long for PyYAML", text[:20] + "...")
        return _Ambiguous("integer", text, value)
    if tag == _TAG + "null":
        return None
    return _Odd(tag.rsplit(":", 1)[-1], text)


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
_DQ_ESCAPE = _lazy_re(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")


def _dq_unescape(match: re.Match[str]) -> str:
    hexa = match.group(1) or match.group(2) or match.group(3)
    if hexa:
        return chr(int(hexa, 16))
    char = _DQ_ESCAPES.get(match.group(4))
    if char is None:
        raise ValueError(match.group(0))
    return char


# A line's value part: a double-quoted, single-quoted or plain scalar, then an optional comment.
_DQ = _lazy_re(r'"((?:[^"\\]|\\.)*)"[ ]*(?:[ ]#.*)?$')
_SQ = _lazy_re(r"'((?:[^']|'')*)'[ ]*(?:[ ]#.*)?$")
_PLAIN_BAD_FIRST = frozenset("[]{}#&*!|>'\"%@`,")
_NOT_SIMPLE = object()  # the fast path cannot read this value: fall back to the event parser


def _value(text: str) -> object:
    """Scalar on one line (after `key: ` or `- `); `_NOT_SIMPLE` when it is not one-line simple."""
    first = text[0]
    if first == '"':
        if text[-1] == '"' and len(text) > 1 and '"' not in text[1:-1] and "\\" not in text:
            return text[1:-1]
        m = _DQ.match(text)
        if m is None:
            return _NOT_SIMPLE
        body = m.group(1)
        if "\\" not in body:
            return body
        try:
            return _DQ_ESCAPE.sub(_dq_unescape, body)
        except ValueError:
            return _NOT_SIMPLE
    if first == "'":
        m = _SQ.match(text)
        return _NOT_SIMPLE if m is None else m.group(1).replace("''", "'")
    if first in _PLAIN_BAD_FIRST or (first in "-?:" and text[1:2] in ("", " ")):
        return _NOT_SIMPLE
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut]
    text = text.rstrip(" ")
    if ": " in text or text.endswith(":"):
        return _NOT_SIMPLE
    return _plain(text)


# ---------------------------------------------------------------------------------------------
# Schema


def _describe(value: object) -> str:
    if isinstance(value, (_Odd, _Ambiguous)):
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


def _printable(text: str) -> bool:
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
    return _bad_char(raw) is None and unsafe_char(text) is None


# Unicode categories that are never text a reviewer can see: format characters (bidi controls,
# zero-width joiners: "trojan source"), controls, surrogates, private use, unassigned. An
# appended value holding one is an error even where InferenceX would accept it.
UNSAFE_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Co", "Cn"})


def unsafe_char(text: str) -> str | None:
    """The first invisible, control, private-use or unassigned character of `text`, if any."""
    if text.isascii():
        return None
    import unicodedata

    for char in text:
        if char >= "\x80" and unicodedata.category(char) in UNSAFE_CATEGORIES:
            return char
    return None


def validate_entry(entry: Entry) -> list[str]:
    """Schema and value problems of an Entry (empty when valid); each a sentence with its fix."""
    problems: list[str] = []
    for name, items in (("config-keys", entry.config_keys), ("description", entry.description)):
        if not isinstance(items, tuple) or not items:
            problems.append(f"{name} must be a non-empty list of strings")
            continue
        for item in items:
            if not isinstance(item, str) or not item.strip():
                problems.append(f"{name} items must be non-empty strings, got {_describe(item)}")
            elif not _printable(item):
                problems.append(f"{name} item {item[:40]!r} {_UNSAFE_PROBLEM}")
    if not isinstance(entry.pr_link, str) or not entry.pr_link.strip():
        problems.append("pr-link must be a non-empty string")
    elif not _printable(entry.pr_link):
        problems.append(f"pr-link {entry.pr_link[:40]!r} {_UNSAFE_PROBLEM}")
    elif entry.pr_link != entry.pr_link.strip():
        problems.append("pr-link must be one URL without surrounding spaces")
    if entry.scenario_type is not None:
        values = entry.scenario_type
        if not isinstance(values, tuple) or not values:
            problems.append("scenario-type must list at least one value")
        elif len(set(values)) != len(values):
            problems.append("scenario-type must list distinct values")
        for value in values if isinstance(values, tuple) else ():
            if value not in SCENARIO_TYPES:
                problems.append(
                    f"scenario-type {value!r} is not one of {', '.join(SCENARIO_TYPES)}"
                )
    for name, flag in (
        ("evals-only", entry.evals_only),
        ("all-evals", entry.all_evals),
        ("append-only", entry.append_only),
    ):
        if not isinstance(flag, bool):
            problems.append(f"{name} must be true or false")
    ep = entry.eval_min_prefill_ep
    if ep is not None and (isinstance(ep, bool) or not isinstance(ep, int) or ep < 1):
        problems.append("eval-min-prefill-ep must be an integer >= 1")
    if entry.append_only and (entry.evals_only or entry.all_evals or ep is not None):
        problems.append(
            "append-only cannot be combined with evals-only, all-evals or eval-min-prefill-ep"
        )
    return problems


_UNSAFE_PROBLEM = (
    "contains a control, line-break, invisible (format), private-use or unassigned character"
)
# validate_entry problems that InferenceX's ChangelogEntry accepts: house style when parsing
# (warnings unless --strict), errors for relpipe's own writer.
_STYLE_PROBLEMS = frozenset(
    {
        "scenario-type must list distinct values",
        "pr-link must be a non-empty string",
        "pr-link must be one URL without surrounding spaces",
    }
)
_STYLE_PROBLEM_PREFIXES = ("description items must be non-empty strings, got str",)


# The strings pydantic's lax mode reads as booleans (InferenceX's ChangelogEntry is a pydantic
# model, so `evals-only: "yes"` passes its CI): accepted, as a house-style finding.
_LAX_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_LAX_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _lax_bool(value: object) -> bool | None:
    """`value` as pydantic's lax `bool` reads it, or None where pydantic rejects it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, _Odd) and value.kind == "float":
        number = _float(value.text)
        return bool(number) if number in (0.0, 1.0) else None
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in _LAX_TRUE or lowered in _LAX_FALSE:
            return lowered in _LAX_TRUE
    return None


def _lax_int(value: object) -> int | None:
    """`value` as pydantic's lax `int` reads it (bool, integral float, numeric string)."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, _Odd) and value.kind == "float":
        number = _float(value.text)
        return int(number) if number is not None and number.is_integer() else None
    if isinstance(value, str) and len(value) <= 4300:
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _float(text: str) -> float | None:
    import math

    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _coerced(key: str, raw: object, value: object, line: int) -> Finding:
    return Finding(
        line,
        "style-value",
        f"{key} is {_describe(raw)}, read as {value!r} by InferenceX's schema",
        f"write `{key}: {str(value).lower() if isinstance(value, bool) else value}`",
    )


def _str_list(name: str, value: object) -> tuple[tuple[str, ...] | None, str | None]:
    if not isinstance(value, list):
        return None, f"{name} must be a list of strings, got {_describe(value)}"
    for item in value:
        if not isinstance(item, str):
            return None, f"{name} items must be strings, got {_describe(item)}"
    return tuple(value), None  # type: ignore[arg-type]


def _ambiguity_finding(key: str, kind: str, text: str, line: int, severity: str = ERROR) -> Finding:
    """`key`'s plain value `text`, a `kind` ("boolean", "integer") only in YAML 1.1."""
    if kind == "boolean":
        hint = f'write true or false (YAML 1.2), or quote "{text}" if it is text'
    else:
        hint = f'write the integer in decimal without leading zeros, or quote "{text}"'
    return Finding(
        line,
        "yaml-ambiguous",
        f"`{key}` value `{text}` is read differently by YAML 1.1 and 1.2",
        hint,
        severity,
    )


def _schema(
    fields: Mapping[str, object], key_lines: Mapping[str, int], line: int
) -> tuple[Entry | None, list[Finding]]:
    """Turn raw entry fields into an Entry, or findings located at the offending key's line."""
    found: list[Finding] = []

    def bad(key: str, message: str, hint: str, code: str = "schema") -> None:
        found.append(Finding(key_lines.get(key, line), code, message, hint))

    for key in fields:
        if key not in KEY_ORDER:
            bad(key, f"unknown key `{key}`", f"allowed keys: {', '.join(KEY_ORDER)}")
    for key in REQUIRED_KEYS:
        if key not in fields:
            bad(key, f"entry has no `{key}`", f"add `{key}:` to the entry")
    if found:
        return None, found
    # A YAML 1.1/1.2 ambiguity is house style: the entry is judged on PyYAML's value.
    style: list[Finding] = []
    resolved: dict[str, object] = {}
    for key, value in fields.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, _Ambiguous):
                at = key_lines.get(key, line)
                style.append(_ambiguity_finding(key, item.kind, item.text, at))
        if isinstance(value, list):
            value = [v.value if isinstance(v, _Ambiguous) else v for v in value]
        elif isinstance(value, _Ambiguous):
            value = value.value
        resolved[key] = value
    fields = resolved
    keys, problem = _str_list("config-keys", fields["config-keys"])
    if problem:
        bad("config-keys", problem, "list the master-config keys, one `- key` per line")
    description, problem = _str_list("description", fields["description"])
    if problem:
        bad("description", problem, 'write each description line as `- "text"`')
    link = fields["pr-link"]
    if not isinstance(link, str):
        bad(
            "pr-link",
            f"pr-link must be a URL string, got {_describe(link)}",
            "write `pr-link: <repo-url>/pull/<N>`",
        )
    scenario: tuple[str, ...] | None = None
    if fields.get("scenario-type") is not None:  # `scenario-type:` alone is null: absent
        raw = fields["scenario-type"]
        if isinstance(raw, str):
            bad(
                "scenario-type",
                f"scenario-type must be a list, got the string {raw!r} "
                "(InferenceX's ChangelogEntry requires a list)",
                f"write `scenario-type:` then `- {raw}` on the next line, indented by 4",
            )
        else:
            scenario, problem = _str_list("scenario-type", raw)
            if problem:
                bad(
                    "scenario-type", problem, f"write `scenario-type:` then `- {SCENARIO_TYPES[0]}`"
                )
    flags: dict[str, bool] = {}
    for key in FLAG_KEYS:
        if key in fields:
            flag = _lax_bool(fields[key])
            if flag is None:
                bad(
                    key,
                    f"{key} must be a boolean, got {_describe(fields[key])}",
                    f"write `{key}: true` or remove it",
                )
                continue
            if not isinstance(fields[key], bool):
                style.append(_coerced(key, fields[key], flag, key_lines.get(key, line)))
            flags[key] = flag
    raw_ep = fields.get("eval-min-prefill-ep")
    ep = _lax_int(raw_ep)
    if raw_ep is not None and ep is None:
        bad(
            "eval-min-prefill-ep",
            f"eval-min-prefill-ep must be an integer, got {_describe(raw_ep)}",
            "write a decimal integer >= 1",
        )
    elif raw_ep is not None and (isinstance(raw_ep, bool) or not isinstance(raw_ep, int)):
        style.append(
            _coerced("eval-min-prefill-ep", raw_ep, ep, key_lines.get("eval-min-prefill-ep", line))
        )
    if found:
        return None, found + style
    entry = Entry(
        config_keys=keys or (),
        description=description or (),
        pr_link=link,  # type: ignore[arg-type]
        scenario_type=scenario,
        evals_only=flags.get("evals-only", False),
        all_evals=flags.get("all-evals", False),
        append_only=flags.get("append-only", False),
        eval_min_prefill_ep=ep,  # type: ignore[arg-type]
    )
    for problem in validate_entry(entry):
        key = next((k for k in KEY_ORDER if problem.startswith(k)), "config-keys")
        if problem in _STYLE_PROBLEMS or problem.startswith(_STYLE_PROBLEM_PREFIXES):
            # Stricter than InferenceX's ChangelogEntry, which accepts it: house style.
            style.append(Finding(key_lines.get(key, line), "style-value", problem, "fix the value"))
        else:
            bad(key, problem, "fix the value as the message says")
    return (None if found else entry), found + style


# ---------------------------------------------------------------------------------------------
# Entry parsing: the fast line path and the PyYAML event path


_KEY_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(?: +(.*))?$")


class _Fallback(Exception):
    """Internal: the fast path met something it does not read; use the event parser."""


def _fast_fields(
    lines: Sequence[str], first: int
) -> tuple[dict[str, object], dict[str, int], list[Finding]]:
    """Read an entry written in the house style (or its real-world variants) line by line."""
    fields: dict[str, object] = {}
    key_lines: dict[str, int] = {}
    current: list[object] | None = None  # the list being filled, if the last key opened one
    key = ""  # the last key
    item_indent = -1
    for offset, line in enumerate(lines):
        if offset == 0:
            body = line[2:]
            indent = 2
        else:
            body = line.lstrip(" ")
            indent = len(line) - len(body)
            if not body or body[0] == "#":
                continue
        if body[:2] == "- ":
            # Items of one list share one indentation; anything else is YAML we leave to PyYAML.
            if current is None or indent < 2 or (item_indent >= 0 and indent != item_indent):
                raise _Fallback
            item_indent = indent
            value = _value(body[2:].lstrip(" ") or "#")
            if value is _NOT_SIMPLE:
                raise _Fallback
            current.append(value)
            continue
        if indent > 2 and current is not None and not current:
            # `key:` with its value alone on the next, deeper line (the real changelog has a
            # `pr-link:` so): one such line; a value folded over more is left to PyYAML.
            value = _value(body)
            if value is _NOT_SIMPLE:
                raise _Fallback
            fields[key] = value
            current = None
            continue
        m = _KEY_LINE.match(body) if indent == 2 else None
        if m is None:
            raise _Fallback
        key, rest = m.group(1), m.group(2)
        if key in fields:
            raise _Fallback  # the event path reports duplicates, with the same finding
        key_lines[key] = first + offset
        current = None
        if not rest or rest[0] == "#":
            current = []
            item_indent = -1
            fields[key] = current
            continue
        value = _value(rest)
        if value is _NOT_SIMPLE:
            raise _Fallback
        fields[key] = value
    for key, value in fields.items():
        if isinstance(value, list) and not value:
            fields[key] = None  # `key:` with no items is null, as YAML reads it
    return fields, key_lines, []


class _Map(dict):  # type: ignore[type-arg]
    """A mapping read from events, with the line of each key."""

    lines: dict[object, int]


def _event_line(event: object, first: int) -> int:
    mark = event.start_mark  # type: ignore[attr-defined]
    return first + (mark.line if mark is not None else 0)


def _event_node(
    yaml: object, events: Sequence[object], pos: int, found: list[Finding], first: int
) -> tuple[object, int]:
    """The value of the node that starts at events[pos], and the position after it.

    A module function, not a closure: a recursive closure refers to itself through its cell, a
    reference cycle that keeps the events alive until a collection (the hook runs without)."""

    def at(event: object) -> int:
        return _event_line(event, first)

    event = events[pos]
    pos += 1
    if isinstance(event, yaml.ScalarEvent):  # type: ignore[attr-defined]
        if (
            event.start_mark is not None
            and event.end_mark is not None
            and event.start_mark.line != event.end_mark.line
        ):
            found.append(
                Finding(
                    at(event),
                    "continuation",
                    "value spans several lines",
                    "write each value on one line",
                )
            )
        return (_plain(event.value) if event.implicit[0] else event.value), pos
    if isinstance(event, yaml.SequenceStartEvent):  # type: ignore[attr-defined]
        items = []
        while not isinstance(events[pos], yaml.SequenceEndEvent):  # type: ignore[attr-defined]
            item, pos = _event_node(yaml, events, pos, found, first)
            items.append(item)
        return items, pos + 1
    if isinstance(event, yaml.MappingStartEvent):  # type: ignore[attr-defined]
        mapping = _Map()
        mapping.lines = {}
        while not isinstance(events[pos], yaml.MappingEndEvent):  # type: ignore[attr-defined]
            key_event = events[pos]
            key, pos = _event_node(yaml, events, pos, found, first)
            if (
                isinstance(key_event, yaml.ScalarEvent)  # type: ignore[attr-defined]
                and key_event.value == "<<"
                and key_event.implicit[0]
            ):
                found.append(
                    Finding(at(key_event), "merge-key", "YAML merge key `<<`", "write the keys out")
                )
            if not isinstance(key, (str, int, bool)) or key is None:
                key = _describe(key)
            if key in mapping:
                found.append(
                    Finding(
                        at(key_event),
                        "duplicate-key",
                        f"duplicate key `{key}` in entry",
                        "keep one occurrence of the key",
                    )
                )
            mapping.lines[key] = at(key_event)
            mapping[key], pos = _event_node(yaml, events, pos, found, first)
        return mapping, pos + 1
    raise AssertionError(f"unexpected YAML event {event!r}")


def _event_fields(text: str, first: int) -> tuple[dict[str, object], dict[str, int], list[Finding]]:
    """Read one entry through PyYAML's event stream; judge anchors, aliases, tags, duplicates."""
    import yaml

    found: list[Finding] = []

    def at(event: yaml.Event) -> int:
        return _event_line(event, first)

    try:
        events = list(yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None and exc.context_mark is not None and mark.line >= text.count("\n"):
            mark = exc.context_mark  # hit the end (an unclosed quote): name where it opened
        line = first + mark.line if mark is not None else first
        return (
            {},
            {},
            [
                Finding(
                    line,
                    "yaml",
                    f"YAML syntax error: {exc.problem or exc.context}",
                    "fix the YAML syntax (compare with the entry above)",
                )
            ],
        )
    except yaml.YAMLError as exc:
        return {}, {}, [Finding(first, "yaml", f"YAML error: {exc}", "fix the YAML syntax")]
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            found.append(
                Finding(
                    at(event),
                    "alias",
                    f"YAML alias `*{event.anchor}`",
                    "aliases are not allowed (YAML bombs); write values out, quote a `*glob`",
                )
            )
        elif isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            found.append(
                Finding(
                    at(event),
                    "anchor",
                    f"YAML anchor `&{event.anchor}`",
                    "anchors are not allowed; write values out",
                )
            )
        if (
            isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent))
            and event.tag is not None
        ):
            found.append(
                Finding(at(event), "tag", f"explicit YAML tag `{event.tag}`", "remove the tag")
            )
    if found:
        return {}, {}, found
    pos = 0
    while not isinstance(events[pos], yaml.NodeEvent):  # StreamStart, DocumentStart
        pos += 1
    root, _ = _event_node(yaml, events, pos, found, first)
    if not isinstance(root, list) or len(root) != 1 or not isinstance(root[0], _Map):
        return (
            {},
            {},
            [
                Finding(
                    first,
                    "structure",
                    "entry is not one mapping in the top-level list",
                    f"start the entry with `{ENTRY_START}` and indent its keys by 2",
                )
            ],
        )
    mapping = root[0]
    fields: dict[str, object] = {}
    key_lines: dict[str, int] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            value = _Odd("mapping", "{...}")
        elif isinstance(value, list):
            value = [
                _Odd("nested collection", "...") if isinstance(v, (list, dict)) else v
                for v in value
            ]
        fields[str(key)] = value
        key_lines[str(key)] = mapping.lines[key]
    return fields, key_lines, found


def _indent_findings(first: int, count: int, indent: int, severity: str = ERROR) -> list[Finding]:
    """One finding for each of `count` list items from line `first`, indented by `indent`."""
    message = f"list item indented by {indent} spaces"
    hint = "indent list items by exactly 4 spaces"
    return [Finding(first + k, "indent", message, hint, severity) for k in range(count)]


def _layout(lines: Sequence[str], first: int) -> list[Finding]:
    """House-style layout of one entry: keys at 2, items at 4, no blank lines or trailing space."""
    found: list[Finding] = []
    for offset, line in enumerate(lines):
        number = first + offset
        if not line.strip(" "):  # never the first line: an entry starts with `- `
            found.append(
                Finding(
                    number,
                    "blank-in-entry",
                    "blank line inside an entry",
                    "entries have no blank lines inside; remove it",
                )
            )
            continue
        if line != line.rstrip(" "):
            found.append(
                Finding(
                    number,
                    "trailing-whitespace",
                    "trailing whitespace",
                    "remove the spaces at the end of the line",
                )
            )
        if offset == 0:
            continue
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if body[0] == "#":
            continue
        elif body[:2] == "- ":
            if indent != 4:
                found.extend(_indent_findings(number, 1, indent))
        elif indent != 2:
            found.append(
                Finding(
                    number,
                    "continuation",
                    "value continued on its own line",
                    "write each key and value on one line (keys indented by 2)",
                )
            )
    return found


# Parse findings after which the fields are not what PyYAML reads (none today: those paths
# return no fields); every other one leaves the schema check on.
_UNREAD = frozenset({"yaml", "alias", "anchor", "tag", "structure", "size"})


def _parse_block(
    lines: Sequence[str], first: int
) -> tuple[dict[str, object], dict[str, int], Entry | None, tuple[Finding, ...]]:
    """Fields, key lines, Entry and findings of one entry's lines (the first is `first`)."""
    found: list[Finding] = []
    # `- config-keys: [a, b]` is an entry too (flow style: the YAML parser reads it).
    if not lines[0].startswith(ENTRY_START):
        found.append(
            Finding(
                first,
                "structure",
                f"entry does not start with `{ENTRY_START}`",
                f"start every entry at column 0 with `{ENTRY_START}` on its own line",
            )
        )
        return {}, {}, None, tuple(found)
    try:
        fields, key_lines, parse_found = _fast_fields(lines, first)
    except _Fallback:
        size = sum(map(len, lines)) + len(lines)
        if size > MAX_FALLBACK_ENTRY_BYTES:
            # PyYAML's event list for one huge entry costs ~100x its size in memory: a cap, not
            # a parse (a documented exception to parity; no real entry comes near it).
            found.append(
                Finding(
                    first,
                    "size",
                    f"entry is {size} bytes and not in the house style, over the "
                    f"{MAX_FALLBACK_ENTRY_BYTES}-byte cap for the YAML parser",
                    "write the entry in the house style (keys at 2, `- ` items at 4, one a line)",
                )
            )
            return {}, {}, None, tuple(found)
        fields, key_lines, parse_found = _event_fields("\n".join(lines) + "\n", first)
    found.extend(parse_found)
    found.extend(_layout(lines, first))
    entry = None
    if fields and not any(f.code in _UNREAD for f in parse_found):
        # A parse finding that leaves the fields read (a value over several lines, a duplicate
        # key) does not switch the schema off: the entry is judged on what PyYAML reads.
        entry, schema_found = _schema(fields, key_lines, first)
        found.extend(schema_found)
    unique = sorted({(f.line, f.code): f for f in found}.values(), key=lambda f: f.line)
    return fields, key_lines, entry, tuple(unique)


# The house style as one grammar: an entry this matches is valid by construction (plain config
# keys are still checked against YAML 1.1 resolution, see `_suspect_plain`). Quoted strings here
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
_C_URL = r"(?:" + _NOT_A_WORD + r"[A-Za-z][A-Za-z0-9_.:/%?=&+~@-]*(?<!:)|" + _C_DQ + ")"
# Plain list items whose first character lets YAML 1.1 read them as non-strings (`070`, `yes`).
_SUSPECT_PLAIN = _lazy_re(r"\n    - ([-+.0-9~<=yYnNtTfFoO][^\n]*)")
# Entries split where InferenceX counts them: at lines that start with `- config-keys:`. In a
# file it accepts each such line starts an entry and each entry starts with one (its count must
# equal PyYAML's); anything else at column 0 (a comment, a quoted scalar's continuation, stray
# text) belongs to the entry above and is judged when that entry is parsed.
_NEXT_START = re.compile(r"\n(?=- config-keys:)")
_SEPARATED = "\n" + ENTRY_START  # one empty line, then the next entry
# Below this size the entry-by-entry path is faster than compiling the whole-entry grammar
# (which matters to the hook: it parses a suffix of a few entries in a fresh process).
_CANONICAL_MIN_BYTES = 32 * 1024


@cache
def _canonical() -> re.Pattern[str]:
    return re.compile(
        r"- config-keys:\n(?:    - " + _C_KEY + r"\n)+"
        r"(?:  scenario-type:\n    - (?:fixed-seq-len(?:\n    - agentic-coding)?"
        r"|agentic-coding(?:\n    - fixed-seq-len)?)\n)?"
        r"  description:\n(?:    - " + _C_DQ + r"\n)+"
        r"  pr-link: " + _C_URL + r"\n"
        r"(?:  append-only: true\n|(?:  evals-only: (?:true|false)\n)?"
        r"(?:  all-evals: (?:true|false)\n)?"
        r"(?:  append-only: false\n)?(?:  eval-min-prefill-ep: [1-9][0-9]*\n)?)"
    )


# The house style's common variants as one grammar, for files written by hand or by other tools:
# each list indented by any 2 or more spaces (one indentation per list: YAML reads `key:` then
# `- item` at the key's own indentation as the same list), a comment after any line, YAML 1.1
# booleans in the flags, plain and single-quoted text. An entry it matches is valid by
# construction and its style findings follow from the match (`_variant_style`), so a large file
# in such a style is checked at regex speed rather than line by line. Plain scalars are kept to
# what PyYAML reads as strings: a letter first, not a boolean or null word, no `: ` and no `#`.
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
_V_URL = r"(?:" + _C_URL + "|" + _V_SQ + ")"
# The booleans of YAML 1.1 (what PyYAML makes of a plain flag value); the ones outside
# _YAML12_BOOL are also style findings (yaml-ambiguous).
_YAML11_BOOL = {
    **dict.fromkeys(("yes", "Yes", "YES", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "off", "Off", "OFF"), False),
    **_YAML12_BOOL,
}
_V_BOOL = "(" + "|".join(_YAML11_BOOL) + ")"
# Entries off the house style a file has before the variants grammar is compiled for the rest.
_VARIANTS_AFTER = 64
# (group, key) of the flags in the variants grammar, and its lists (group `name`, indentation
# `name_i`), in their order.
_V_FLAGS = (("eo", "evals-only"), ("ae", "all-evals"), ("ao", "append-only"))
_V_LISTS = (("keys", "keys_i"), ("scen", "scen_i"), ("desc", "desc_i"))


@cache
def _variants() -> re.Pattern[str]:
    def items(name: str, value: str) -> str:
        """A list's item lines as group `name`, the indentation of the first as `name_i`."""
        return (
            f"(?P<{name}>(?P<{name}_i> {{2,}})- {value}{_V_END}(?:(?P={name}_i)- {value}{_V_END})*)"
        )

    scenario = (
        r"(?:fixed-seq-len(?:" + _V_END + r"(?P=scen_i)- agentic-coding)?"
        r"|agentic-coding(?:" + _V_END + r"(?P=scen_i)- fixed-seq-len)?)"
    )
    parts = (  # one a YAML key and its items, as _canonical() reads
        "- config-keys:" + _V_END + items("keys", _V_KEY),
        "(?:  scenario-type:" + _V_END + f"(?P<scen>(?P<scen_i> {{2,}})- {scenario}{_V_END}))?",
        "  description:" + _V_END + items("desc", _V_TEXT),
        "  pr-link: " + _V_URL + _V_END,
        *(f"(?:  {key}: (?P<{group}>{_V_BOOL}){_V_END})?" for group, key in _V_FLAGS),
        f"(?:  eval-min-prefill-ep: (?P<ep>[1-9][0-9]{{0,17}}){_V_END})?",
    )
    return re.compile("".join(parts))


# The style findings of an entry of one shape, relative to its first line: (line, code, message,
# hint) each. An entry's findings follow from its shape alone (see _variant_shape).
_Template = tuple[tuple[int, str, str, str], ...]


def _variant_style(
    m: re.Match[str], text: str, line: int, severity: str, shapes: dict[object, _Template]
) -> tuple[Finding, ...] | None:
    """Style findings of an entry the variants grammar matched (`line`: its first line), the same
    the line parser makes of it (with `severity`); None when its flags break the schema
    (append-only with another flag), which the line parser then reports.

    Entries of one shape have the same findings at the same offsets, so `shapes` (one scan's
    memo) keeps them: a large file in a variant style is mostly one or a few shapes."""
    groups = m.group("keys_i", "scen_i", "desc_i", "eo", "ae", "ao")
    flag = _YAML11_BOOL.get  # None (absent) is false too
    if flag(groups[5]) and (flag(groups[3]) or flag(groups[4]) or m.group("ep")):
        return None
    # Every part of the grammar but the lists is one line: the indentations, the flags' words
    # and the lists' lengths place every finding.
    shape = (
        groups,
        text.count("\n", *m.span("keys")),
        text.count("\n", *m.span("scen")),  # (-1, -1) when absent: 0
        text.count("\n", *m.span("desc")),
    )
    template = shapes.get(shape)
    if template is None:
        template = shapes[shape] = tuple(
            (f.line, f.code, f.message, f.hint) for f in _variant_findings(m, text)
        )
    return tuple(
        [Finding(line + at, code, message, hint, severity) for at, code, message, hint in template]
    )


def _variant_findings(m: re.Match[str], text: str) -> list[Finding]:
    """The style findings of a variants grammar match, lines counted from 0 (the entry's first)."""
    pos = m.start()
    found: list[Finding] = []
    for name, indentation in _V_LISTS:
        indent = m.end(indentation) - m.start(indentation)
        if indent > 0 and indent != 4:  # -1 - -1: an absent (optional) list
            start, stop = m.span(name)
            first = text.count("\n", pos, start)
            found.extend(_indent_findings(first, text.count("\n", start, stop), indent))
    for group, key in _V_FLAGS:
        word = m.group(group)
        if word is not None and word not in _YAML12_BOOL:
            at = text.count("\n", pos, m.start(group))
            found.append(_ambiguity_finding(key, "boolean", word, at))
    return found


# ---------------------------------------------------------------------------------------------
# File-level scan


# Characters YAML readers reject or treat as line breaks (tab, CR, NUL have their own findings).
# Code points YAML readers reject or read as line breaks, as UTF-8: C0/C1 controls, DEL, U+2028,
# U+2029, U+FFFE/U+FFFF, a BOM after the start (tab, CR, NUL have their own findings). Each
# pattern starts with a literal so the regex engine skips ahead at memchr speed; translate()
# finds ASCII controls without it.
_ASCII_OK = bytes([9, 10, 13, 0, *range(0x20, 0x7F), *range(0x80, 0x100)])
_ASCII_CONTROL = _lazy_re(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UTF8_BAD = tuple(
    re.compile(p)
    for p in (rb"\xc2[\x80-\x9f]", rb"\xe2\x80[\xa8\xa9]", rb"\xef\xbf[\xbe\xbf]", rb"\xef\xbb\xbf")
)


def _bad_char(data: bytes) -> re.Match[bytes] | None:
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


_ASCII_BYTES = bytes(range(128))
_CONFLICT_BYTES = (b"<" * 7, b"=" * 7, b">" * 7, b"|" * 7)
_CONFLICT = _lazy_re(r"^(?:<{7}|={7}|>{7}|\|{7})(?: |$)", re.M)


def _line_of(data: bytes | str, index: int) -> int:
    if isinstance(data, bytes):
        return data.count(b"\n", 0, index) + 1
    return data.count("\n", 0, index) + 1


def _first_line(data: bytes, needle: bytes) -> int:
    return _line_of(data, data.index(needle))


def _byte_findings(data: bytes, first: int) -> tuple[str | None, list[Finding]]:
    """Byte-level rules; returns the decoded text when the bytes can be parsed further."""
    found: list[Finding] = []
    base = first - 1
    if len(data) > MAX_FILE_BYTES:
        return None, [
            Finding(
                0,
                "size",
                f"file is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte cap",
                "this is not a perf-changelog; check the file",
            )
        ]
    if b"\0" in data:
        found.append(
            Finding(base + _first_line(data, b"\0"), "nul", "NUL byte", "remove binary content")
        )
    if b"\r" in data:
        found.append(
            Finding(
                base + _first_line(data, b"\r"),
                "crlf",
                "CR line ending (CRLF)",
                "convert line endings to LF (e.g. `dos2unix`, or git config core.autocrlf input)",
            )
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(
            Finding(
                base + _line_of(data, exc.start), "utf8", "invalid UTF-8", "save the file as UTF-8"
            )
        )
        return None, found
    if text.startswith("\ufeff"):
        found.append(
            Finding(first, "bom", "UTF-8 byte-order mark", "save the file as UTF-8 without BOM")
        )
    if "\t" in text:
        found.append(
            Finding(
                base + _line_of(text, text.index("\t")),
                "tab",
                "tab character",
                "indent and separate with spaces only",
            )
        )
    if not data.isascii():
        # Deleting the ASCII bytes leaves whole UTF-8 sequences: all non-ASCII characters, in
        # order, at C speed (a str regex over the file would cost more than the rest of the scan).
        char = unsafe_char(data.translate(None, _ASCII_BYTES).decode("utf-8"))
        if char is not None:
            found.append(
                Finding(
                    base + _line_of(text, text.index(char)),
                    "unsafe-char",
                    f"invisible, private-use or unassigned character U+{ord(char):04X}",
                    "remove it (bidi controls and zero-width characters hide what a "
                    "reviewer reads)",
                )
            )
    odd = _bad_char(data)
    if odd is not None:
        char = odd.group(0).decode("utf-8")
        found.append(
            Finding(
                base + _line_of(data, odd.start()),
                "non-printable",
                f"non-printable or line-break character U+{ord(char):04X}",
                "remove it, or write it as an escape inside a double-quoted string",
            )
        )
    conflict = _CONFLICT.search(text) if any(m in data for m in _CONFLICT_BYTES) else None
    if conflict is not None:
        found.append(
            Finding(
                base + _line_of(text, conflict.start()),
                "conflict-marker",
                f"merge conflict marker `{conflict.group(0).strip()}`",
                "resolve the merge conflict and delete the <<<<<<< ======= >>>>>>> lines",
            )
        )
    if not data.endswith(b"\n"):
        found.append(
            Finding(
                base + data.count(b"\n") + 1,
                "final-newline",
                "no newline at end of file",
                "end the file with exactly one newline",
            )
        )
    elif data[len(data.rstrip(b" \n")) :].count(b"\n") > 1:
        # An empty last line is InferenceX's "must end with one newline"; whitespace-only ones
        # before the final newline are only style there.
        found.append(
            Finding(
                base + len(data.rstrip(b" \n").split(b"\n")) + 1,
                "trailing-blank-lines" if data.endswith(b"\n\n") else "trailing-whitespace",
                "blank lines at end of file"
                if data.endswith(b"\n\n")
                else "whitespace-only lines at end of file",
                "end the file with exactly one newline",
            )
        )
    # Blank lines at the end and unsafe characters leave the file readable: go on parsing.
    if any(
        f.code not in ("unsafe-char", "trailing-blank-lines", "trailing-whitespace") for f in found
    ):
        return None, found
    return text, found


def _gap_findings(gap: Sequence[str], first: int) -> list[Finding]:
    """The separator before an entry must be exactly one empty line."""
    found = [
        Finding(first + k, "whitespace-line", "whitespace-only line", "make separator lines empty")
        for k, line in enumerate(gap)
        if line
    ]
    if len(gap) != 1:
        message = (
            f"{len(gap)} blank lines before the entry" if gap else "no empty line before the entry"
        )
        found.append(
            Finding(
                first + len(gap),
                "separator",
                message,
                "separate entries with exactly one empty line",
            )
        )
    return found


def scan(
    data: bytes,
    path: str = "perf-changelog.yaml",
    *,
    first_line: int = 1,
    offset: int = 0,
    leading_blank: bool = False,
    style: str = ERROR,
) -> Changelog:
    """Parse a changelog, or a suffix of one, collecting every finding (errors as errors).

    `first_line`/`offset` place `data` inside a larger file (a suffix after the history), so
    lines and byte spans are those of the whole file. `leading_blank` says `data` starts with the
    separator line before its first entry (a suffix appended to a non-empty history). `style` is
    the severity of the house-style findings of entries the variants grammar proves valid: a
    caller that grades them as warnings gets them so, rather than copying each (a large file in
    such a style has several an entry).
    """
    text, found = _byte_findings(data, first_line)
    if text is None:
        return Changelog(path, (), tuple(found), first_line - 1 + data.count(b"\n"))
    line_count = first_line - 1 + data.count(b"\n")
    if len(data) > MAX_LINE_BYTES:
        longest = max(map(len, data.split(b"\n")))
        if longest > MAX_LINE_BYTES:
            lengths = [len(line) for line in data.split(b"\n")]
            found.append(
                Finding(
                    first_line + lengths.index(longest),
                    "line-length",
                    f"line is {longest} bytes long",
                    f"keep lines under {MAX_LINE_BYTES} bytes",
                )
            )
            return Changelog(path, (), tuple(found), line_count)
    ascii_only = data.isascii()
    size = len(text)
    canonical = _canonical() if size >= _CANONICAL_MIN_BYTES else None
    # The variants grammar's findings are the line parser's only where every character is one
    # the line parser accepts (it would add a schema finding for an unsafe one). Compiling it
    # costs as much as parsing some 60 entries line by line, so a file pays for it only once
    # that many have missed the house style (the real changelog has 20).
    variants_ok = canonical is not None and not any(f.code == "unsafe-char" for f in found)
    variants: re.Pattern[str] | None = None
    misses = 0
    shapes: dict[object, _Template] = {}

    def next_start(index: int) -> int:
        m = _NEXT_START.search(text, index)
        return m.end() if m is not None else size

    pos = 0 if text[:1] not in ("", " ", "\n", "#") else next_start(0)
    if pos >= size:
        found.append(
            Finding(
                first_line,
                "structure",
                "no entries: the file must be a YAML list of entries",
                f"start each entry at column 0 with `{ENTRY_START}`",
            )
        )
    elif leading_blank:
        gap = text[:pos].split("\n")[:-1]
        if any(line.strip() for line in gap):
            found.append(
                Finding(
                    first_line,
                    "structure",
                    "text appended to the last existing entry",
                    "existing entries are immutable; add a new entry at the end, "
                    "after one empty line",
                )
            )
        else:
            found.extend(_gap_findings(gap, first_line))
    elif pos != 0:
        comments_only = all(
            not line.strip(" ") or line.lstrip(" ").startswith("#")
            for line in text[:pos].split("\n")
        )
        found.append(
            Finding(
                first_line,
                "comment" if comments_only else "structure",
                "comments before the first entry"
                if comments_only
                else "text before the first entry",
                f"start the file with `{ENTRY_START}`",
            )
        )
    blocks: list[Block] = []
    seen: dict[str, int] = {}
    line = first_line + text.count("\n", 0, pos)
    byte_pos = offset + (pos if ascii_only else len(text[:pos].encode("utf-8")))
    while pos < size:
        if text[pos] != "-":
            stop = next_start(pos)
            found.append(
                Finding(
                    line,
                    "structure",
                    "text at column 0 that is not an entry",
                    f"start entries with `{ENTRY_START}`; indent keys by 2",
                )
            )
            line += text.count("\n", pos, stop)
            byte_pos += stop - pos if ascii_only else len(text[pos:stop].encode("utf-8"))
            pos = stop
            continue
        m = canonical.match(text, pos) if canonical is not None else None
        proven = None  # the style findings of an entry the variants grammar matched
        if m is None and variants_ok:
            misses += 1
            if variants is None and misses > _VARIANTS_AFTER:
                variants = _variants()
            m = variants.match(text, pos) if variants is not None else None
            proven = None if m is None else _variant_style(m, text, line, style, shapes)
            if proven is None:
                m = None
        if m is not None:
            end = m.end()
            # The grammar proves the entry only if it reaches the entry's end: PyYAML reads every
            # indented or blank line up to the next column-0 line as part of this entry (a
            # second `pr-link:` below a match would win there), so anything else is parsed.
            # (The usual case, one empty line and the next entry, needs no search.)
            if end < size and text[end] != "-" and not text.startswith(_SEPARATED, end):
                stop = next_start(end - 1)
                if text[end:stop].strip(" \n"):
                    m = proven = None
        if m is None:
            kept = text[pos : next_start(pos)].split("\n")[:-1]
            while len(kept) > 1 and not kept[-1].strip(" "):
                kept.pop()  # trailing blank lines are the separator, not the entry
            end = pos + sum(map(len, kept)) + len(kept)
        body = text[pos:end]
        lines_in = body.count("\n")
        end_byte = byte_pos + (end - pos if ascii_only else len(body.encode("utf-8")))
        block = Block(
            byte_pos,
            end_byte,
            line,
            line + lines_in - 1,
            body,
            m is not None and proven is None,
            proven,
        )
        blocks.append(block)
        if body in seen:
            found.append(
                Finding(
                    line,
                    "duplicate-entry",
                    f"exact duplicate of the entry at line {seen[body]}",
                    "remove the repeated entry",
                )
            )
        else:
            seen[body] = line
        if m is None:
            found.extend(block.findings)
        elif proven:
            found.extend(proven)
        line += lines_in
        byte_pos = end_byte
        if end >= size:
            break
        if text[end] == "\n" and text[end + 1 : end + 2] == "-":
            pos = end + 1  # the one empty separator line
        else:
            pos = next_start(end - 1)
            if pos < size:
                found.extend(_gap_findings(text[end:pos].split("\n")[:-1], line))
            pos = min(pos, size)
        byte_pos += pos - end if ascii_only else len(text[end:pos].encode("utf-8"))
        line += text.count("\n", end, pos)
    # A canonical entry may still hold a plain config key that YAML 1.1 reads as a non-string.
    if any(block.canonical for block in blocks):
        for m in _SUSPECT_PLAIN.finditer(text):
            if _plain(m.group(1)) != m.group(1):
                index = _block_at(
                    blocks,
                    offset + (m.start() if ascii_only else len(text[: m.start()].encode("utf-8"))),
                )
                old = blocks[index]
                if old.canonical:
                    blocks[index] = Block(
                        old.start, old.end, old.line, old.end_line, old.text, False
                    )
                    found.extend(blocks[index].findings)
    found.sort(key=_LINE)
    return Changelog(path, tuple(blocks), tuple(found), line_count)


_LINE = operator.attrgetter("line")  # a sort key in C: a large file has a finding a line


def _block_at(blocks: Sequence[Block], byte: int) -> int:
    """Index of the block holding byte offset `byte` (blocks are sorted by start)."""
    import bisect

    return bisect.bisect_right([b.start for b in blocks], byte) - 1


def proven_valid(data: bytes) -> bool:
    """True when `data` is, byte for byte, house-style entries each after one empty line: then
    it is valid by construction (InferenceX's parse accepts it). False means "not proven", not
    "invalid": `scan` decides. Cheaper than `scan` (no per-entry records), for the hook's base.
    """
    if not data.startswith(b"- config-keys:") or not data.endswith(b"\n") or data.endswith(b"\n\n"):
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    match = _canonical().match
    size, pos = len(text), 0
    while True:
        m = match(text, pos)
        if m is None:
            return False
        pos = m.end()
        if pos == size:
            break
        if not text.startswith("\n- config-keys:", pos):
            return False
        pos += 1
    if _byte_findings(data, 1) != (text, []):
        return False
    # The grammar leaves plain config keys that YAML 1.1 reads as non-strings to this check.
    return all(_plain(m.group(1)) == m.group(1) for m in _SUSPECT_PLAIN.finditer(text))


def parse(data: bytes, path: str = "perf-changelog.yaml") -> Changelog:
    """Parse a whole changelog; raise ChangelogError (exit code 1) naming the first error."""
    changelog = scan(data, path)
    errors = changelog.errors
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        err = ChangelogError(errors[0].format(path) + more)
        err.exit_code = 1
        raise err
    return changelog


def parse_appended(base: bytes, head: bytes, path: str = "perf-changelog.yaml") -> Changelog:
    """Parse only what `head` appends to `base` (a byte prefix of it), with head's lines and spans.

    The last base entry is re-read too, so that a base which does not end in a complete entry
    cannot swallow the appended text. Raises ChangelogError when `base` is not a prefix.
    """
    if not head.startswith(base):
        raise ChangelogError(
            f"{path}: the base is not a byte prefix of the head; compare them entry by entry"
        )
    suffix = head[len(base) :]
    first = base.count(b"\n") + 1
    found: list[Finding] = []
    if base:
        if not base.endswith(b"\n"):
            found.append(
                Finding(
                    first,
                    "final-newline",
                    "the history does not end with a newline",
                    "restore the history as it is in the base",
                )
            )
        last_start = base.rfind(b"\n- config-keys:") + 1
        tail = scan(
            base[last_start:], path, first_line=_line_of(base, last_start), offset=last_start
        )
        # Only what says the history does not end in a complete entry matters here.
        found.extend(f for f in tail.findings if f.code in ("yaml", "structure", "final-newline"))
    if not suffix:
        return Changelog(path, (), tuple(found), first - 1)
    changelog = scan(suffix, path, first_line=first, offset=len(base), leading_blank=bool(base))
    return Changelog(
        path, changelog.blocks, tuple(found) + changelog.findings, changelog.line_count
    )


# ---------------------------------------------------------------------------------------------
# Rendering

_PLAIN_SAFE = _lazy_re(r"[A-Za-z0-9][A-Za-z0-9_.:/*+=%~@-]*")


def _scalar(text: str, plain_ok: bool) -> str:
    if plain_ok and _PLAIN_SAFE.fullmatch(text) and not text.endswith(":") and _plain(text) == text:
        return text
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = (
        out.replace("\x85", "\\N")
        .replace("\u2028", "\\L")
        .replace("\u2029", "\\P")
        .replace("\ufeff", "\\uFEFF")
    )
    return f'"{out}"'


def render(entry: Entry) -> str:
    """The entry in house style, ending with its newline (the separator line is the caller's)."""
    problems = validate_entry(entry)
    if problems:
        err = ChangelogError(f"cannot render an invalid changelog entry: {problems[0]}")
        err.exit_code = 1
        raise err
    out = ["- config-keys:\n"]
    out.extend(f"    - {_scalar(key, True)}\n" for key in entry.config_keys)
    if entry.scenario_type is not None:
        out.append("  scenario-type:\n")
        out.extend(f"    - {value}\n" for value in entry.scenario_type)
    out.append("  description:\n")
    out.extend(f"    - {_scalar(line, False)}\n" for line in entry.description)
    out.append(f"  pr-link: {_scalar(entry.pr_link, True)}\n")
    for key, flag in (
        ("evals-only", entry.evals_only),
        ("all-evals", entry.all_evals),
        ("append-only", entry.append_only),
    ):
        if flag:
            out.append(f"  {key}: true\n")
    if entry.eval_min_prefill_ep is not None:
        out.append(f"  eval-min-prefill-ep: {entry.eval_min_prefill_ep}\n")
    return "".join(out)


def as_warnings(findings: Iterable[Finding]) -> list[Finding]:
    """History findings: entry-level problems become warnings, file-level ones stay errors."""
    return [
        Finding(f.line, f.code, f.message, f.hint, WARNING) if f.code in ENTRY_CODES else f
        for f in findings
    ]


__all__ = [
    "Block",
    "Changelog",
    "Entry",
    "Finding",
    "as_warnings",
    "parse",
    "parse_appended",
    "render",
    "scan",
    "validate_entry",
]
