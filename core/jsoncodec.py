"""Records as JSON: the one serialiser of the frozen dataclasses relpipe writes and reads back.

`to_json(record)` and `from_json(cls, data, where=...)` follow the record's fields and their
resolved type hints, so a record states its JSON shape once, in its field list. Supported: str,
int, float, bool, None, `X | None` and other unions, `tuple[X, ...]`, `tuple[X, Y]`, `list[X]`,
`Mapping[str, X]`/`dict[str, X]`, `Literal[...]`, `Path` (a string), enums such as
`core.status.Status` (their value), `Any` (JSON carried as it is) and nested records. A field's
metadata (`field(metadata=spec(...))`) renames its key, leaves it out when None or its default,
or spells an enum's members with words of its own (a stage output's `"ok"` for `Status.PASS`):
only where a format written before this module has that shape.

`from_json` reads untrusted JSON and fails closed with one `RecordError` whose line names the
field path (`report.json: evals[2].score: expected a number or null, got a string ('0.99')`): a
missing key without a default, a value of another type (a bool is not an int, an int is not a
string), an object where a list belongs, a number outside the bounded-number policy
(`core.numbers`). Keys a record does not declare are ignored: documents
carry derived values (a summary, a title) for their readers, and those are recomputed.

A record whose JSON is more than its fields (derived values, a schema number, a flattened
nesting, an older spelling to read) keeps a `to_json(self)` method built on `fields_to_json`, or a
`from_json(cls, data, *, where)` classmethod built on `fields_from_json`; `to_json`/`from_json`
call them wherever the record stands, nested or not, and an error inside still names the path.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar

from . import numbers
from . import record as _records
from .errors import RelpipeError

R = TypeVar("R")
_SPEC = "relpipe.core.jsoncodec"  # the metadata key of a field's `spec`
_REPR_LIMIT = 40


class RecordError(RelpipeError):
    """JSON that is not the record it should be: `where: path: problem`, one line."""

    def __init__(self, where: str, path: str, problem: str) -> None:
        self.where, self.path, self.problem = where, path, problem
        super().__init__(f"{where}: {self.detail}")

    @property
    def detail(self) -> str:
        """`path: problem` (the problem alone for the document itself)."""
        return f"{self.path}: {self.problem}" if self.path else self.problem


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spec:
    key: str | None = None  # the JSON key, where it is not the field's name
    omit: Literal["none", "default"] | None = None  # left out when None / equal to the default
    words: Mapping[Enum, str] | None = None  # an enum field's JSON word per member it may hold


def spec(
    *,
    key: str | None = None,
    omit: Literal["none", "default"] | None = None,
    words: Mapping[Enum, str] | None = None,
) -> Mapping[str, Spec]:
    """Field metadata: `field(default=None, metadata=jsoncodec.spec(omit="none"))`."""
    return {_SPEC: Spec(key=key, omit=omit, words=words)}


_PLAIN = Spec()  # a field without metadata: shared, not built per field per record


# A record is a dataclass or a `core.record.Record` (the commit hook's records); their fields
# answer `name`, `metadata` and `default` alike.
Field = dataclasses.Field[Any] | _records.RecordField


def is_record(value: object) -> bool:
    """A record class or instance: a dataclass or a `core.record.Record`."""
    return dataclasses.is_dataclass(value) or _records.is_record(value)


def _fields(cls: type) -> tuple[Field, ...]:
    if _records.is_record(cls):
        return _records.fields(cls)
    return dataclasses.fields(cls)


def _required(f: Field) -> bool:
    if isinstance(f, _records.RecordField):
        return f.default is _records.MISSING
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _spec(f: Field) -> Spec:
    found = f.metadata.get(_SPEC)
    return found if isinstance(found, Spec) else _PLAIN


# --- writing ------------------------------------------------------------------------------------


def to_json(record: object) -> dict[str, Any]:
    """The record's JSON object: its own `to_json()` where it defines one, else its fields."""
    own = getattr(type(record), "to_json", None)
    if callable(own):
        return typing.cast(dict[str, Any], own(record))
    return fields_to_json(record)


def fields_to_json(record: object, *, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """The record's fields as a JSON object, in field order (the half a `to_json` builds on)."""
    if not is_record(record) or isinstance(record, type):
        raise TypeError(f"{type(record).__name__} is not a record (a dataclass instance)")
    plan = _plan(type(record))
    unknown = set(exclude) - {f.name for f, _ in plan}
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r} to exclude")
    out: dict[str, Any] = {}
    for f, s in plan:
        if f.name in exclude:
            continue
        value = getattr(record, f.name)
        if s.omit == "none" and value is None:
            continue
        if s.omit == "default" and value == _default(f):
            continue
        if s.words is not None:
            out[s.key or f.name] = _word(s.words, value, f"{type(record).__name__}.{f.name}")
            continue
        out[s.key or f.name] = value if type(value) in _SCALARS else _encode(value, f.name)
    return out


def _word(words: Mapping[Enum, str], value: Any, what: str) -> str:
    found = words.get(value)
    if found is None:  # a writer's mistake (the record holds a member its format cannot spell)
        raise TypeError(
            f"{what}: {value!r} has no recorded word (known: {', '.join(words.values())})"
        )
    return found


_PLANS: dict[type, tuple[tuple[Field, Spec], ...]] = {}


def _plan(cls: type) -> tuple[tuple[Field, Spec], ...]:
    """A record class's fields with their specs, looked up once per class (a report writes
    thousands of records of a few classes)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((f, _spec(f)) for f in _fields(cls))
    return plan


def _default(f: Field) -> Any:
    if isinstance(f, _records.RecordField):
        if f.default is _records.MISSING:
            raise TypeError(f"field {f.name!r}: omit='default' needs a default")
        return f.default
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"field {f.name!r}: omit='default' needs a default")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _encode(value: Any, path: str) -> Any:
    if isinstance(value, Enum):
        return _encode(value.value, path)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, PurePath):
        return str(value)
    if is_record(value) and not isinstance(value, type):
        return to_json(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{path}: key {k!r} is not a string")
            out[k] = _encode(v, f"{path}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        # Plain JSON scalars as they are (an enum member's type is its enum's, not str or int),
        # without building a path no error will name: a report's lists hold thousands.
        return [
            v if type(v) in _SCALARS else _encode(v, f"{path}[{i}]") for i, v in enumerate(value)
        ]
    raise TypeError(f"{path}: {type(value).__name__} has no JSON form")


# --- reading ------------------------------------------------------------------------------------


class _Bad(Exception):
    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem


def from_json(cls: type[R], data: object, *, where: str = "record") -> R:
    """A `cls` from untrusted JSON, or one `RecordError`: its own `from_json(data, where=...)`
    classmethod where it defines one, else `fields_from_json`."""
    own = getattr(cls, "from_json", None)
    if callable(own):
        return typing.cast(R, own(data, where=where))
    return fields_from_json(cls, data, where=where)


def fields_from_json(cls: type[R], data: object, *, where: str = "record") -> R:
    """A `cls` from its fields in untrusted JSON, each checked against its type hint."""
    try:
        return _record(cls, data, "", own=False)
    except _Bad as bad:
        raise RecordError(where, bad.path, bad.problem) from None


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The field types, resolved once per record (annotations are strings under `__future__`)."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def _record(cls: type[R], data: object, path: str, *, own: bool = True) -> R:
    reader = getattr(cls, "from_json", None) if own else None
    if callable(reader):  # a nested record with a reader of its own
        try:
            return typing.cast(R, reader(data, where=path))
        except RecordError as exc:
            raise _Bad(_join(path, exc.path), exc.problem) from None
    if not isinstance(data, Mapping):
        raise _Bad(path, f"expected an object, got {_kind(data)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if not getattr(f, "init", True):
            continue
        s = _spec(f)
        key = s.key or f.name
        where = _join(path, key)
        if key in data and s.words is not None:
            values[f.name] = _member(s.words, data[key], where)
        elif key in data:
            values[f.name] = _value(data[key], hints[f.name], where)
        elif _required(f):
            raise _Bad(where, "missing")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a record's own check (__post_init__)
        raise _Bad(path, str(exc).split("\n")[0]) from None


def _member(words: Mapping[Enum, str], value: object, path: str) -> Enum:
    for member, word in words.items():
        if value == word and type(value) is str:
            return member
    raise _Bad(
        path, f"expected one of {', '.join(map(_short, words.values()))}, got {_kind(value)}"
    )


_BARE = {dict: dict[str, Any], Mapping: Mapping[str, Any], list: list[Any], tuple: tuple[Any, ...]}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path and key else path or key


def _value(value: object, hint: Any, path: str) -> Any:
    hint = _BARE.get(hint, hint)  # a bare container: its items carried as they are
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return value
    if origin is typing.Union or origin is types.UnionType:
        return _union(value, typing.get_args(hint), path)
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in typing.get_args(hint)):
            return value
        raise _Bad(path, f"expected {_want(hint)}, got {_kind(value)}")
    if origin is not None:
        return _container(value, hint, origin, path)
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            raise _Bad(path, f"expected {_want(hint)}, got {_kind(value)}") from None
    if isinstance(hint, type) and is_record(hint):
        return _record(hint, value, path)
    return _scalar(value, hint, path)


def _scalar(value: object, hint: Any, path: str) -> Any:
    if hint is type(None) and value is None:
        return None
    if hint is bool and isinstance(value, bool):
        return value
    if hint in (int, float) and isinstance(value, int | float) and not isinstance(value, bool):
        # The bounded-number policy (core.numbers): a value from a document that did not pass
        # core.jsonload (a store row, YAML) is bounded here; `float(10**400)` raised.
        if not numbers.is_bounded(value):
            raise _Bad(path, f"{numbers.describe(value)} is out of range (at most 2**53)")
        if hint is int and isinstance(value, int):
            return value
        if hint is float:
            return float(value)
    if hint is str and isinstance(value, str):
        return value
    if hint in (Path, PurePath) and isinstance(value, str):
        return Path(value)
    if hint not in (type(None), bool, int, float, str, Path, PurePath):
        raise TypeError(f"{path}: records cannot read {hint!r}")
    raise _Bad(path, f"expected {_want(hint)}, got {_kind(value)}")


def _union(value: object, members: tuple[Any, ...], path: str) -> Any:
    if value is None and type(None) in members:
        return None
    others = [m for m in members if m is not type(None)]
    if len(others) == 1:  # `X | None`: X's own error says more than "X or null"
        try:
            return _value(value, others[0], path)
        except _Bad as bad:
            if bad.path != path or type(None) not in members:
                raise
            raise _Bad(path, f"expected {_want(members)}, got {_kind(value)}") from None
    for member in others:
        try:
            return _value(value, member, path)
        except _Bad:
            continue
    raise _Bad(path, f"expected {_want(members)}, got {_kind(value)}")


def _container(value: object, hint: Any, origin: Any, path: str) -> Any:
    args = typing.get_args(hint)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _Bad(path, f"expected an object, got {_kind(value)}")
        item = args[1] if len(args) == 2 else Any
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _Bad(path, f"key {_short(k)} is not a string")
            out[k] = _value(v, item, f"{path}[{k!r}]")
        return out
    if origin in (list, tuple, Sequence):
        if not isinstance(value, list | tuple):
            raise _Bad(path, f"expected a list, got {_kind(value)}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise _Bad(path, f"expected a list of {len(args)}, got {len(value)} items")
            pairs = enumerate(zip(value, args, strict=True))
            return tuple(_value(v, a, f"{path}[{i}]") for i, (v, a) in pairs)
        item = args[0] if args else Any
        items = [_value(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    raise TypeError(f"{path}: records cannot read {hint!r}")


# --- one-line descriptions ----------------------------------------------------------------------


def _want(hint: Any) -> str:
    if isinstance(hint, tuple):  # union members
        return " or ".join(_want(m) for m in hint)
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _want(typing.get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(_short(a) for a in typing.get_args(hint))
    if origin in (dict, Mapping) or hint is dict:
        return "an object"
    if origin in (list, tuple, Sequence) or hint in (list, tuple):
        return "a list"
    if isinstance(hint, type) and issubclass(hint, Enum):
        return "one of " + ", ".join(_short(m.value) for m in hint)
    if isinstance(hint, type) and is_record(hint):
        return "an object"
    names = {
        type(None): "null",
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        Path: "a string",
    }
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"a number ({_short(value)})"
    if isinstance(value, str):
        return f"a string ({_short(value)})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _short(value: object) -> str:
    """A scalar as a capped repr (escapes control characters: the message stays one line)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return numbers.describe(value)  # `repr` of a 5,000-digit int raises
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."
