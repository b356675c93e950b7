"""The vocabulary of one perf-changelog entry's fields: how a field is declared, findings, codes.

`Entry` (model.py) declares its fields with `spec`; everything else (the schema rules, the
renderer, both whole-entry grammars) reads them from `model.FIELDS`, so a field is spelled out
once. A finding carries a stable `code` (and a schema finding, a `RuleFinding`, a stable
`rule`, `<key>.<rule>`): severity follows from the code (`ENTRY_CODES` here, the hook's
STYLE_CODES), never from a message's text.
"""

from __future__ import annotations

from ...core.findings import ERROR as ERROR  # the entry package's words are the core's
from ...core.findings import WARNING as WARNING
from ...core.findings import Finding as Finding
from ...core.record import MISSING, Record, declare, fields

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from typing import Any


# Kinds of field: what values it takes, hence its rules, its grammar and how it is written.
KEYS = "keys"  # a non-empty list of config keys (plain when YAML reads them as strings)
TEXTS = "texts"  # a non-empty list of text lines (always double-quoted when written)
CHOICES = "choices"  # a list of distinct values from `allowed`
URL = "url"  # one string
FLAG = "flag"  # a boolean (pydantic's lax reading: `yes`, 1 are house style)
COUNT = "count"  # an integer >= 1

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


class RuleFinding(Finding, slots=True):
    """A finding of the schema, naming the field rule broken: `<key>.<rule>` (such as
    `description.blank-item`) or `entry.unknown-key` / `entry.missing-key`.

    A subclass, not a field of every Finding (a large audit makes hundreds of thousands of the
    others)."""

    rule: str


class Field(Record, eq=False):  # compared by identity: one per field
    """One entry field as `Entry` declares it.

    `lenient` names the rules InferenceX's ChangelogEntry does not enforce for this field:
    breaking one is house style (code `style-value`), any other rule is an error (`schema`).
    `excludes` (a flag's): the keys that must be unset or false when this flag is true."""

    attr: str  # the Entry attribute
    key: str  # the YAML spelling
    kind: str
    required: bool  # no default
    nullable: bool  # defaults to None: `key:` alone (null) means absent
    order: int  # position in an entry as written (the real corpus's order)
    hint: str = ""  # how to write the field, for schema findings
    allowed: tuple[str, ...] = ()
    lenient: frozenset[str] = frozenset()
    excludes: tuple[str, ...] = ()

    def code(self, rule: str) -> str:
        """The finding code of breaking `rule` on this field: severity follows from it."""
        return "style-value" if rule in self.lenient else "schema"


def spec(
    kind: str,
    order: int,
    *,
    hint: str = "",
    allowed: tuple[str, ...] = (),
    lenient: tuple[str, ...] = (),
    excludes: tuple[str, ...] = (),
    **default: object,
) -> Any:
    """A field of `Entry` carrying its declaration (`default=` when optional)."""
    meta = {
        "kind": kind,
        "order": order,
        "hint": hint,
        "allowed": allowed,
        "lenient": frozenset(lenient),
        "excludes": excludes,
    }
    return declare(metadata=meta, **default)


def declared(model: type[Record]) -> tuple[Field, ...]:
    """The fields `model` declares with `spec`, in written order."""
    out = [
        Field(
            attr=f.name,
            key=f.name.replace("_", "-"),
            required=f.default is MISSING,
            nullable=f.default is None,
            **f.metadata,
        )
        for f in fields(model)
    ]
    return tuple(sorted(out, key=lambda f: f.order))
