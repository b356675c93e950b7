"""`Record`: a frozen, keyword-only record class for the modules the commit hook imports.

What `@dataclass(frozen=True, kw_only=True)` makes (keyword-only `__init__` with defaults,
read-only attributes, value equality and hash, `repr`; `slots=True` as a class keyword), written
here because `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`; about 7 ms of CPU of
a commit's hook run, bench/bench_hook.py) only to write a signature into classes without a
docstring. The hook's path declares its records with `Record`; everything else keeps dataclasses.

    class Finding(Record, slots=True):
        code: str
        line: int = 0

`eq=False` compares by identity. A default is a value, or `declare(default=..., metadata=...)`
to attach data to the field (`fields(cls)` returns them in order, inherited ones first).
`core.jsoncodec` reads and writes records as it does dataclasses; `replace(record, **changes)`
copies one with changes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar, dataclass_transform

    R = TypeVar("R", bound="Record")
    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        """For type checkers only (PEP 681: a `Record` is typed as the dataclass it acts as)."""
        return lambda cls: cls


class FrozenRecordError(AttributeError):
    """An attribute of a record was assigned or deleted."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_EMPTY: Mapping[str, Any] = {}


class RecordField:
    """One declared field: `name`, `default` (MISSING when required) and `metadata`."""

    __slots__ = ("name", "default", "metadata")

    def __init__(self, name: str, default: Any, metadata: Mapping[str, Any]) -> None:
        self.name, self.default, self.metadata = name, default, metadata

    def __repr__(self) -> str:
        return f"RecordField({self.name!r}, default={self.default!r})"


class _Declared:
    __slots__ = ("default", "metadata")

    def __init__(self, default: Any, metadata: Mapping[str, Any]) -> None:
        self.default, self.metadata = default, metadata


def declare(*, default: Any = MISSING, metadata: Mapping[str, Any] | None = None) -> Any:
    """A field's default with data attached to it (what `dataclasses.field(metadata=)` is)."""
    return _Declared(default, metadata or _EMPTY)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(declare,))
class _RecordType(type):
    """Builds each `Record` subclass: its fields from the annotations, then its methods."""

    def __new__(
        mcs,
        name: str,
        bases: tuple[type, ...],
        ns: dict[str, Any],
        *,
        slots: bool = False,
        eq: bool = True,
    ) -> _RecordType:
        own: list[RecordField] = []
        for attr, hint in ns.get("__annotations__", {}).items():
            if str(hint).startswith(("ClassVar", "typing.ClassVar")):
                continue
            value = ns.pop(attr, MISSING)
            if isinstance(value, _Declared):
                own.append(RecordField(attr, value.default, value.metadata))
            else:
                own.append(RecordField(attr, value, _EMPTY))
        if slots:
            ns["__slots__"] = tuple(f.name for f in own)
        if not eq:  # compared and hashed by identity
            ns.setdefault("__eq__", object.__eq__)
            ns.setdefault("__hash__", object.__hash__)
        cls = super().__new__(mcs, name, bases, ns)
        inherited = [f for b in reversed(cls.__mro__[1:]) for f in getattr(b, "_record_own", ())]
        cls._record_own = tuple(own)  # type: ignore[attr-defined]
        fields = tuple({f.name: f for f in (*inherited, *own)}.values())
        cls._record_fields = fields  # type: ignore[attr-defined]
        cls._record_names = tuple(f.name for f in fields)  # type: ignore[attr-defined]
        if own and "__init__" not in ns:
            cls.__init__ = _init(cls, fields)  # type: ignore[misc]
        return cls


def _init(cls: type, fields: tuple[RecordField, ...]) -> Any:
    """A keyword-only `__init__` setting each field, compiled once per class (as dataclasses)."""
    required = [f.name for f in fields if f.default is MISSING]
    optional = [f.name for f in fields if f.default is not MISSING]
    params = ", ".join([*required, *(f"{n}=_defaults[{n!r}]" for n in optional)])
    body = "".join(f"    _set(self, {f.name!r}, {f.name})\n" for f in fields)
    source = f"def __init__(self, *, {params}):\n{body or '    pass'}\n"
    scope: dict[str, Any] = {
        "_set": object.__setattr__,
        "_defaults": {f.name: f.default for f in fields if f.default is not MISSING},
    }
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), scope)  # noqa: S102 - our source
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Record(metaclass=_RecordType):
    """Base of the hook path's records (see the module docstring)."""

    __slots__ = ()
    # Set on each class by _RecordType (not annotated here: annotations declare fields).
    _record_fields = ()  # tuple[RecordField, ...]
    _record_names = ()  # tuple[str, ...]

    def _values(self) -> tuple[Any, ...]:
        names: tuple[str, ...] = self._record_names
        return tuple(getattr(self, name) for name in names)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r} of {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r} of {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        names: tuple[str, ...] = self._record_names
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), dict(zip(self._record_names, self._values(), strict=True))))


def _rebuild(cls: type[R], values: dict[str, Any]) -> R:
    return cls(**values)


def is_record(obj: object) -> bool:
    """Whether `obj` is a `Record` class or instance."""
    return isinstance(obj, Record) or (isinstance(obj, type) and issubclass(obj, Record))


def fields(record: Record | type[Record]) -> tuple[RecordField, ...]:
    """The fields of a record (class or instance), in order, inherited ones first."""
    return record._record_fields


def replace(record: R, **changes: Any) -> R:
    """A copy of `record` with `changes` (as `dataclasses.replace`)."""
    values = dict(zip(record._record_names, record._values(), strict=True))
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field(s) {sorted(unknown)}")
    return type(record)(**{**values, **changes})
