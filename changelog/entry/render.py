"""Writing an entry in the house style, field by field from the field table (model.FIELDS)."""

from __future__ import annotations

from ..errors import ChangelogError
from .fields import CHOICES, FLAG, KEYS, TEXTS, URL, Field
from .model import FIELDS, Entry
from .scalars import lazy_re, plain
from .schema import validate_entry

_PLAIN_SAFE = lazy_re(r"[A-Za-z0-9][A-Za-z0-9_.:/*+=%~@-]*")


def _scalar(text: str, plain_ok: bool) -> str:
    if plain_ok and _PLAIN_SAFE.fullmatch(text) and not text.endswith(":") and plain(text) == text:
        return text
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = (
        out.replace("\x85", "\\N")
        .replace("\u2028", "\\L")
        .replace("\u2029", "\\P")
        .replace("\ufeff", "\\uFEFF")
    )
    return f'"{out}"'


def _lines(f: Field, value: object) -> list[str]:
    """Field `f` holding `value`, as house-style lines (none for an unset optional field)."""
    lead = "- " if f is FIELDS[0] else "  "
    if value is None or value is False:
        return []
    if f.kind in (KEYS, TEXTS, CHOICES):
        # Keys and choices are plain where YAML reads them back as the same string; text is
        # always double-quoted (a description line may start with anything).
        items = [f"    - {_scalar(str(item), f.kind != TEXTS)}\n" for item in value]  # type: ignore[attr-defined]
        return [f"{lead}{f.key}:\n", *items]
    if f.kind == URL:
        return [f"{lead}{f.key}: {_scalar(str(value), True)}\n"]
    shown = "true" if f.kind == FLAG else str(value)
    return [f"{lead}{f.key}: {shown}\n"]


def render(entry: Entry) -> str:
    """The entry in house style, ending with its newline (the separator line is the caller's)."""
    problems = validate_entry(entry)
    if problems:
        err = ChangelogError(f"cannot render an invalid changelog entry: {problems[0]}")
        err.exit_code = 1
        raise err
    return "".join(line for f in FIELDS for line in _lines(f, getattr(entry, f.attr)))


__all__ = ["render"]
