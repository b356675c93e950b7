"""The one JSON loader for untrusted input: size and nesting bounded before the parser runs.

CPython's JSON parser recurses once per nesting level, so 100,000 `[` end in RecursionError, an
unexpected error (exit 3) instead of a one-line refusal (issue 27.4). `loads` checks the size,
then the nesting with one linear scan that does not recurse (strings removed by one regular
expression, then a count over the brackets that remain), and only then parses. Its refusals are
`json.JSONDecodeError`s, so every boundary's existing handler of invalid JSON reports them in
its own one line and exit code. Numbers follow the bounded-number policy (`core.numbers`): a
number that is not finite or over 2**53 in magnitude (`1e400`, a 401-digit integer, `NaN`) is
such a refusal too, before any reader can crash on it.
"""

from __future__ import annotations

import json
import re

from . import numbers

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64  # the deepest real document (an OCI index in a facts file) is under 10
# A string, or a run of bytes that are neither brackets nor quotes: what `depth` removes.
_NOT_BRACKETS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+', re.S)


class JSONLimitError(json.JSONDecodeError):
    """JSON refused for its size or nesting before parsing (one line: what and the limit)."""

    def __init__(self, msg: str) -> None:
        ValueError.__init__(self, msg)
        self.msg, self.doc, self.pos, self.lineno, self.colno = msg, "", 0, 1, 1

    def __reduce__(self) -> tuple[type[JSONLimitError], tuple[str]]:
        return type(self), (self.msg,)


def depth(data: bytes, stop: int | None = None) -> int:
    """The deepest nesting of arrays and objects in `data`, outside strings (linear time); the
    scan ends as soon as it is deeper than `stop`."""
    deepest = level = 0
    for byte in _NOT_BRACKETS.sub(b"", data):
        level += 1 if byte in b"[{" else -1
        if level > deepest:
            deepest = level
            if stop is not None and deepest > stop:
                break
    return deepest


def loads(
    data: bytes | str,
    *,
    max_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
    **hooks: Any,
) -> Any:
    """Parse untrusted JSON (UTF-8 when bytes) within `max_bytes` and `max_depth` levels;
    `hooks` are `json.loads`'s (`object_pairs_hook`; the number hooks are the policy's).

    Raises `JSONLimitError` (a `json.JSONDecodeError`) over a limit or for a number out of
    range, `json.JSONDecodeError` or
    `UnicodeDecodeError` (both `ValueError`s) for text that is not UTF-8 JSON.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if max_bytes is not None and len(raw) > max_bytes:
        raise JSONLimitError(f"over the {max_bytes}-byte limit")
    # Fewer brackets in all than the limit need no scan (most manifests, tokens, tag lists).
    deepest = 0 if raw.count(b"[") + raw.count(b"{") <= max_depth else depth(raw, max_depth)
    if deepest > max_depth:
        raise JSONLimitError(f"nested more than {max_depth} levels deep")
    text = data if isinstance(data, str) else raw.decode("utf-8")
    try:
        return json.loads(text, **{**_NUMBERS, **hooks})
    except numbers.NumberError as exc:
        raise JSONLimitError(str(exc)) from None


_NUMBERS = {
    "parse_int": numbers.parse_int,
    "parse_float": numbers.parse_float,
    "parse_constant": numbers.parse_constant,
}
