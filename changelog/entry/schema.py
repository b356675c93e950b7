"""The schema of one entry, rule by rule from the field table (model.FIELDS).

`problems` judges a typed `Entry` (what relpipe writes must pass every rule); `schema` turns the
raw fields a parser read into an `Entry` and findings at the offending key's line. Each rule has
a stable name, `<key>.<rule>`; whether breaking it is an error (`schema`) or house style
(`style-value`: InferenceX's ChangelogEntry accepts it) is the field's declaration, not the
message's wording.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from .fields import (
    CHOICES,
    COUNT,
    ERROR,
    FLAG,
    KEYS,
    TEXTS,
    URL,
    Field,
    Finding,
    RuleFinding,
)
from .model import BY_KEY, FIELDS, KEY_ORDER, Entry
from .scalars import (
    Ambiguous,
    describe,
    lax_bool,
    lax_int,
    printable,
)

UNSAFE_PROBLEM = (
    "contains a control, line-break, invisible (format), private-use or unassigned character"
)


_LIST_RULES = ("not-list", "item-type", "empty", "blank-item", "unsafe")
# Every rule of each kind of field, as findings name them (`<key>.<rule>`), and `excludes` for a
# flag that excludes others: tests/changelog/test_entry_fields.py breaks each one in files below
# and above 32 KiB, so a rule added here is checked on the grammars' path too.
KIND_RULES = {
    KEYS: _LIST_RULES,
    TEXTS: _LIST_RULES,
    CHOICES: ("not-list", "item-type", "empty", "duplicate", "allowed"),
    URL: ("type", "blank", "unsafe", "spaces"),
    FLAG: ("type", "coerced"),
    COUNT: ("type", "range", "coerced"),
}


# ---------------------------------------------------------------------------------------------
# A typed Entry


def _list_problems(f: Field, items: object) -> Iterator[tuple[str, str]]:
    if not isinstance(items, tuple) or not items:
        yield "empty", f"{f.key} must be a non-empty list of strings"
        return
    for item in items:
        if not isinstance(item, str):
            yield "item-type", f"{f.key} items must be non-empty strings, got {describe(item)}"
        elif not item.strip():
            yield "blank-item", f"{f.key} items must be non-empty strings, got {describe(item)}"
        elif not printable(item):
            yield "unsafe", f"{f.key} item {item[:40]!r} {UNSAFE_PROBLEM}"


def _url_problems(f: Field, link: object) -> Iterator[tuple[str, str]]:
    if not isinstance(link, str):
        yield "type", f"{f.key} must be a non-empty string"
    elif not link.strip():
        yield "blank", f"{f.key} must be a non-empty string"
    elif not printable(link):
        yield "unsafe", f"{f.key} {link[:40]!r} {UNSAFE_PROBLEM}"
    elif link != link.strip():
        yield "spaces", f"{f.key} must be one URL without surrounding spaces"


def _choice_problems(f: Field, values: object) -> Iterator[tuple[str, str]]:
    if values is None:
        return
    if not isinstance(values, tuple) or not values:
        yield "empty", f"{f.key} must list at least one value"
        return
    if len(set(values)) != len(values):
        yield "duplicate", f"{f.key} must list distinct values"
    for value in values:
        if value not in f.allowed:
            yield "allowed", f"{f.key} {value!r} is not one of {', '.join(f.allowed)}"


def _flag_problems(f: Field, flag: object) -> Iterator[tuple[str, str]]:
    if not isinstance(flag, bool):
        yield "type", f"{f.key} must be true or false"


def _count_problems(f: Field, count: object) -> Iterator[tuple[str, str]]:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        yield "range", f"{f.key} must be an integer >= 1"


_RULES: dict[str, Callable[[Field, object], Iterator[tuple[str, str]]]] = {
    KEYS: _list_problems,
    TEXTS: _list_problems,
    URL: _url_problems,
    CHOICES: _choice_problems,
    FLAG: _flag_problems,
    COUNT: _count_problems,
}


def problems(entry: Entry) -> list[tuple[Field, str, str]]:
    """Every rule `entry` breaks, field by field in written order: (field, rule, message)."""
    out = [
        (f, rule, message)
        for f in FIELDS
        for rule, message in _RULES[f.kind](f, getattr(entry, f.attr))
    ]
    for f in FIELDS:
        if f.excludes and getattr(entry, f.attr) is True:
            if any(getattr(entry, BY_KEY[k].attr) not in (None, False) for k in f.excludes):
                *most, last = f.excludes
                message = f"{f.key} cannot be combined with {', '.join(most)} or {last}"
                out.append((f, "excludes", message))
    return out


def validate_entry(entry: Entry) -> list[str]:
    """Schema and value problems of an Entry (empty when valid); each a sentence with its fix."""
    return [message for _, _, message in problems(entry)]


# ---------------------------------------------------------------------------------------------
# Raw fields, as a parser read them


def ambiguity_finding(key: str, kind: str, text: str, line: int, severity: str = ERROR) -> Finding:
    """`key`'s plain value `text`, a `kind` ("boolean", "integer") only in YAML 1.1."""
    if kind == "boolean":
        hint = f'write true or false (YAML 1.2), or quote "{text}" if it is text'
    else:
        hint = f'write the integer in decimal without leading zeros, or quote "{text}"'
    return Finding(
        line=line,
        code="yaml-ambiguous",
        message=f"`{key}` value `{text}` is read differently by YAML 1.1 and 1.2",
        hint=hint,
        severity=severity,
    )


def _resolved(
    fields: Mapping[str, object], key_lines: Mapping[str, int], line: int, style: list[Finding]
) -> dict[str, object]:
    """The fields with YAML 1.1/1.2 ambiguities read as PyYAML does, each a style finding."""
    resolved: dict[str, object] = {}
    for key, value in fields.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, Ambiguous):
                at = key_lines.get(key, line)
                style.append(ambiguity_finding(key, item.kind, item.text, at))
        if isinstance(value, list):
            value = [v.value if isinstance(v, Ambiguous) else v for v in value]
        elif isinstance(value, Ambiguous):
            value = value.value
        resolved[key] = value
    return resolved


class _Bad(Exception):
    """A raw value the field cannot hold: (rule, message, hint)."""


def _coerced(f: Field, raw: object, value: object) -> tuple[str, str]:
    shown = str(value).lower() if isinstance(value, bool) else value
    return (
        f"{f.key} is {describe(raw)}, read as {value!r} by InferenceX's schema",
        f"write `{f.key}: {shown}`",
    )


def _read_list(f: Field, raw: object) -> tuple[str, ...]:
    if f.kind == CHOICES and isinstance(raw, str):
        raise _Bad(
            "not-list",
            f"{f.key} must be a list, got the string {raw!r} "
            "(InferenceX's ChangelogEntry requires a list)",
            f"write `{f.key}:` then `- {raw}` on the next line, indented by 4",
        )
    if not isinstance(raw, list):
        raise _Bad("not-list", f"{f.key} must be a list of strings, got {describe(raw)}", f.hint)
    for item in raw:
        if not isinstance(item, str):
            raise _Bad("item-type", f"{f.key} items must be strings, got {describe(item)}", f.hint)
    return tuple(raw)


def _read(f: Field, raw: object) -> tuple[object, tuple[str, str] | None]:
    """The typed value of field `f` from its raw value, and a coercion's (message, hint)."""
    if f.kind in (KEYS, TEXTS, CHOICES):
        return _read_list(f, raw), None
    if f.kind == URL:
        if not isinstance(raw, str):
            raise _Bad("type", f"{f.key} must be a URL string, got {describe(raw)}", f.hint)
        return raw, None
    value: object = lax_bool(raw) if f.kind == FLAG else lax_int(raw)
    if value is None:
        if f.kind == FLAG:
            hint = f"write `{f.key}: true` or remove it"
            raise _Bad("type", f"{f.key} must be a boolean, got {describe(raw)}", hint)
        raise _Bad("type", f"{f.key} must be an integer, got {describe(raw)}", _COUNT_HINT)
    exact = isinstance(raw, bool) if f.kind == FLAG else type(raw) is int
    return value, None if exact else _coerced(f, raw, value)


_COUNT_HINT = "write a decimal integer >= 1"


def _entry_level(fields: Mapping[str, object], at: Callable[[str], int]) -> list[Finding]:
    """Unknown and missing keys: then the fields are not judged one by one."""
    found: list[Finding] = [
        RuleFinding(
            line=at(key),
            code="schema",
            message=f"unknown key `{key}`",
            hint=f"allowed keys: {', '.join(KEY_ORDER)}",
            rule="entry.unknown-key",
        )
        for key in fields
        if key not in BY_KEY
    ]
    found.extend(
        RuleFinding(
            line=at(f.key),
            code="schema",
            message=f"entry has no `{f.key}`",
            hint=f"add `{f.key}:` to the entry",
            rule="entry.missing-key",
        )
        for f in FIELDS
        if f.required and f.key not in fields
    )
    return found


def schema(
    fields: Mapping[str, object], key_lines: Mapping[str, int], line: int
) -> tuple[Entry | None, list[Finding]]:
    """Turn raw entry fields into an Entry, or findings located at the offending key's line."""

    def at(key: str) -> int:
        return key_lines.get(key, line)

    found = _entry_level(fields, at)
    if found:
        return None, found
    # A YAML 1.1/1.2 ambiguity is house style: the entry is judged on PyYAML's value.
    style: list[Finding] = []
    fields = _resolved(fields, key_lines, line, style)
    values: dict[str, object] = {}
    for f in FIELDS:
        if f.key not in fields or (f.nullable and fields[f.key] is None):
            continue  # absent (`key:` alone is null)
        try:
            values[f.attr], coerced = _read(f, fields[f.key])
        except _Bad as bad:
            rule, message, hint = bad.args
            found.append(
                RuleFinding(
                    line=at(f.key),
                    code=f.code(rule),
                    message=message,
                    hint=hint,
                    rule=f"{f.key}.{rule}",
                )
            )
            continue
        if coerced is not None:
            message, hint = coerced
            style.append(
                RuleFinding(
                    line=at(f.key),
                    code="style-value",
                    message=message,
                    hint=hint,
                    rule=f"{f.key}.coerced",
                )
            )
    if found:
        return None, found + style
    entry = Entry(**values)  # type: ignore[arg-type]
    for f, rule, message in problems(entry):
        code = f.code(rule)
        hint = "fix the value" if code != "schema" else "fix the value as the message says"
        finding = RuleFinding(
            line=at(f.key), code=code, message=message, hint=hint, rule=f"{f.key}.{rule}"
        )
        (found if code == "schema" else style).append(finding)
    return (None if found else entry), found + style


__all__ = ["KIND_RULES", "ambiguity_finding", "problems", "schema", "validate_entry"]
