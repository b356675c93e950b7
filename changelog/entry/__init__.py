"""perf-changelog entries: one declaration of an entry's fields and everything built from it.

- `model`: `Entry`, whose fields declare kind, YAML spelling, required, allowed values, which
  rules are house style, and written order; `FIELDS` is that table.
- `fields`: the declaration's vocabulary, `Finding` and the codes that decide severity.
- `scalars`: YAML scalars as PyYAML reads them (YAML 1.1/1.2 ambiguities flagged).
- `schema`: the rules, from the table (`validate_entry`, and raw fields to an `Entry`).
- `read`: one entry's lines to raw fields (line parser, PyYAML events), layout, schema.
- `grammar`: the house-style and variants whole-entry grammars, from the table.
- `scan`: a whole file or an appended suffix: byte rules, entries, findings.
- `render`: an `Entry` in the house style, from the table.

The hook path imports this package: standard library and PyYAML only (PyYAML on first need).
"""

from __future__ import annotations

from .fields import (
    ENTRY_CODES,
    ERROR,
    WARNING,
    Field,
    Finding,
    RuleFinding,
)
from .model import (
    ENTRY_START,
    FIELDS,
    FLAG_KEYS,
    KEY_ORDER,
    REQUIRED_KEYS,
    SCENARIO_TYPES,
    Entry,
)
from .render import render
from .scalars import UNSAFE_CATEGORIES, unsafe_char
from .scan import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    Block,
    Changelog,
    as_warnings,
    parse,
    parse_appended,
    proven_valid,
    scan,
)
from .schema import validate_entry

__all__ = [
    "ENTRY_CODES",
    "ENTRY_START",
    "ERROR",
    "FIELDS",
    "FLAG_KEYS",
    "KEY_ORDER",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "REQUIRED_KEYS",
    "SCENARIO_TYPES",
    "UNSAFE_CATEGORIES",
    "WARNING",
    "Block",
    "Changelog",
    "Entry",
    "Field",
    "Finding",
    "RuleFinding",
    "as_warnings",
    "parse",
    "parse_appended",
    "proven_valid",
    "render",
    "scan",
    "unsafe_char",
    "validate_entry",
]
