"""Reading one entry's lines into raw fields: the fast line path and PyYAML's event path.

An entry in the house style (and its common real-world variants) is read by a line parser;
anything else falls back to PyYAML's event stream (the C parser when available) for that entry
only, which is where anchors, aliases, tags, merge keys, flow collections and multi-line scalars
are seen and judged. Both paths produce the same field values (one scalar resolver serves both)
and the same findings; duplicate keys are findings on both (PyYAML's loader keeps the last).
Then the house-style layout and the schema (schema.py) judge the entry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .fields import ERROR, Finding
from .model import ENTRY_START, Entry
from .scalars import NOT_SIMPLE, Odd, describe, plain, read_value
from .schema import schema

# An entry the line parser cannot read goes to PyYAML's event parser, whose events cost ~100x the
# text in memory: entries over this size that need it are refused (the largest real one: 3 KB).
MAX_FALLBACK_ENTRY_BYTES = 256 * 1024

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
            value = read_value(body[2:].lstrip(" ") or "#")
            if value is NOT_SIMPLE:
                raise _Fallback
            current.append(value)
            continue
        if indent > 2 and current is not None and not current:
            # `key:` with its value alone on the next, deeper line (the real changelog has a
            # `pr-link:` so): one such line; a value folded over more is left to PyYAML.
            value = read_value(body)
            if value is NOT_SIMPLE:
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
        value = read_value(rest)
        if value is NOT_SIMPLE:
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
                    line=at(event),
                    code="continuation",
                    message="value spans several lines",
                    hint="write each value on one line",
                )
            )
        return (plain(event.value) if event.implicit[0] else event.value), pos
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
                    Finding(
                        line=at(key_event),
                        code="merge-key",
                        message="YAML merge key `<<`",
                        hint="write the keys out",
                    )
                )
            if not isinstance(key, (str, int, bool)) or key is None:
                key = describe(key)
            if key in mapping:
                found.append(
                    Finding(
                        line=at(key_event),
                        code="duplicate-key",
                        message=f"duplicate key `{key}` in entry",
                        hint="keep one occurrence of the key",
                    )
                )
            mapping.lines[key] = at(key_event)
            mapping[key], pos = _event_node(yaml, events, pos, found, first)
        return mapping, pos + 1
    raise AssertionError(f"unexpected YAML event {event!r}")


def _events(text: str, first: int) -> tuple[list[object], list[Finding]]:
    """PyYAML's events of one entry, or the syntax error that stops them."""
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    try:
        return list(yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))), []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None and exc.context_mark is not None and mark.line >= text.count("\n"):
            mark = exc.context_mark  # hit the end (an unclosed quote): name where it opened
        line = first + mark.line if mark is not None else first
        message = f"YAML syntax error: {exc.problem or exc.context}"
        hint = "fix the YAML syntax (compare with the entry above)"
        return [], [Finding(line=line, code="yaml", message=message, hint=hint)]
    except yaml.YAMLError as exc:
        return [], [
            Finding(
                line=first, code="yaml", message=f"YAML error: {exc}", hint="fix the YAML syntax"
            )
        ]


def _node_findings(events: Sequence[object], first: int) -> list[Finding]:
    """Aliases, anchors and explicit tags: refused (YAML bombs, values hidden from a reader)."""
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    found: list[Finding] = []
    for event in events:
        at = _event_line(event, first)
        if isinstance(event, yaml.AliasEvent):
            found.append(
                Finding(
                    line=at,
                    code="alias",
                    message=f"YAML alias `*{event.anchor}`",
                    hint="aliases are not allowed (YAML bombs); write values out, quote a `*glob`",
                )
            )
        elif isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            found.append(
                Finding(
                    line=at,
                    code="anchor",
                    message=f"YAML anchor `&{event.anchor}`",
                    hint="anchors are not allowed; write values out",
                )
            )
        if (
            isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent))
            and event.tag is not None
        ):
            found.append(
                Finding(
                    line=at,
                    code="tag",
                    message=f"explicit YAML tag `{event.tag}`",
                    hint="remove the tag",
                )
            )
    return found


def event_fields(text: str, first: int) -> tuple[dict[str, object], dict[str, int], list[Finding]]:
    """Read one entry through PyYAML's event stream; judge anchors, aliases, tags, duplicates."""
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    events, found = _events(text, first)
    found = found or _node_findings(events, first)
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
                    line=first,
                    code="structure",
                    message="entry is not one mapping in the top-level list",
                    hint=f"start the entry with `{ENTRY_START}` and indent its keys by 2",
                )
            ],
        )
    mapping = root[0]
    fields: dict[str, object] = {}
    key_lines: dict[str, int] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            value = Odd(kind="mapping", text="{...}")
        elif isinstance(value, list):
            value = [
                Odd(kind="nested collection", text="...") if isinstance(v, (list, dict)) else v
                for v in value
            ]
        fields[str(key)] = value
        key_lines[str(key)] = mapping.lines[key]
    return fields, key_lines, found


def indent_findings(first: int, count: int, indent: int, severity: str = ERROR) -> list[Finding]:
    """One finding for each of `count` list items from line `first`, indented by `indent`."""
    message = f"list item indented by {indent} spaces"
    hint = "indent list items by exactly 4 spaces"
    return [
        Finding(line=first + k, code="indent", message=message, hint=hint, severity=severity)
        for k in range(count)
    ]


def _house_style(lines: Sequence[str], first: int) -> list[Finding]:
    """House style of one entry's lines: keys at 2, items at 4, no blank lines or trailing space."""
    found: list[Finding] = []
    for offset, line in enumerate(lines):
        number = first + offset
        if not line.strip(" "):  # never the first line: an entry starts with `- `
            found.append(
                Finding(
                    line=number,
                    code="blank-in-entry",
                    message="blank line inside an entry",
                    hint="entries have no blank lines inside; remove it",
                )
            )
            continue
        if line != line.rstrip(" "):
            found.append(
                Finding(
                    line=number,
                    code="trailing-whitespace",
                    message="trailing whitespace",
                    hint="remove the spaces at the end of the line",
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
                found.extend(indent_findings(number, 1, indent))
        elif indent != 2:
            found.append(
                Finding(
                    line=number,
                    code="continuation",
                    message="value continued on its own line",
                    hint="write each key and value on one line (keys indented by 2)",
                )
            )
    return found


# Parse findings after which the fields are not what PyYAML reads (none today: those paths
# return no fields); every other one leaves the schema check on.
_UNREAD = frozenset({"yaml", "alias", "anchor", "tag", "structure", "size"})


def parse_block(
    lines: Sequence[str], first: int
) -> tuple[dict[str, object], dict[str, int], Entry | None, tuple[Finding, ...]]:
    """Fields, key lines, Entry and findings of one entry's lines (the first is `first`)."""
    found: list[Finding] = []
    # `- config-keys: [a, b]` is an entry too (flow style: the YAML parser reads it).
    if not lines[0].startswith(ENTRY_START):
        found.append(
            Finding(
                line=first,
                code="structure",
                message=f"entry does not start with `{ENTRY_START}`",
                hint=f"start every entry at column 0 with `{ENTRY_START}` on its own line",
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
                    line=first,
                    code="size",
                    message=f"entry is {size} bytes and not in the house style, over the "
                    f"{MAX_FALLBACK_ENTRY_BYTES}-byte cap for the YAML parser",
                    hint="write the entry in the house style "
                    "(keys at 2, `- ` items at 4, one a line)",
                )
            )
            return {}, {}, None, tuple(found)
        fields, key_lines, parse_found = event_fields("\n".join(lines) + "\n", first)
    found.extend(parse_found)
    found.extend(_house_style(lines, first))
    entry = None
    if fields and not any(f.code in _UNREAD for f in parse_found):
        # A parse finding that leaves the fields read (a value over several lines, a duplicate
        # key) does not switch the schema off: the entry is judged on what PyYAML reads.
        entry, schema_found = schema(fields, key_lines, first)
        found.extend(schema_found)
    unique = sorted({(f.line, f.code): f for f in found}.values(), key=lambda f: f.line)
    return fields, key_lines, entry, tuple(unique)
