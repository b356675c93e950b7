"""`core.record.Record`: the frozen keyword-only records of the commit hook's path behave as
the dataclasses they replace, and `core.jsoncodec` reads and writes them alike."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from relpipe.core import jsoncodec
from relpipe.core.record import FrozenRecordError, Record, declare, fields, replace


class Point(Record, slots=True):
    """A slotted record with a default."""

    name: str
    line: int = 0


class Located(Point, slots=True):
    """A subclass adds its own fields after the inherited ones."""

    path: str


class Declared(Record):
    """A field carrying metadata; a record nested in another."""

    point: Point
    tags: tuple[str, ...] = declare(default=(), metadata={"kind": "texts"})
    note: str | None = None


class Token(Record, eq=False):
    """Compared by identity."""

    text: str


def test_a_record_is_built_by_keyword_with_its_defaults() -> None:
    assert Point(name="a") == Point(name="a", line=0)
    assert repr(Located(name="a", path="p")) == "Located(name='a', line=0, path='p')"
    with pytest.raises(TypeError, match="positional argument"):
        Point("a")  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'name'"):
        Point()  # type: ignore[call-arg]


def test_a_record_is_frozen_and_compared_by_value() -> None:
    point = Point(name="a", line=3)
    with pytest.raises(FrozenRecordError):
        point.line = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.name  # type: ignore[misc]
    assert point == Point(name="a", line=3) and hash(point) == hash(Point(name="a", line=3))
    assert point != Point(name="a", line=4)
    assert Point(name="a") != Located(name="a", path="")  # another class is another record
    assert not hasattr(point, "__dict__") and Located.__slots__ == ("path",)
    token = Token(text="x")
    assert token == token and token != Token(text="x") and len({token, Token(text="x")}) == 2


def test_fields_replace_and_pickle() -> None:
    assert [f.name for f in fields(Located)] == ["name", "line", "path"]
    assert fields(Declared)[1].metadata == {"kind": "texts"} and fields(Declared)[1].default == ()
    located = Located(name="a", path="p")
    assert replace(located, line=2) == Located(name="a", line=2, path="p")
    with pytest.raises(TypeError, match="no field"):
        replace(located, nope=1)
    assert pickle.loads(pickle.dumps(located)) == located


def test_jsoncodec_reads_and_writes_records() -> None:
    record = Declared(point=Point(name="a", line=2), tags=("x",))
    data = jsoncodec.to_json(record)
    assert data == {"point": {"name": "a", "line": 2}, "tags": ["x"], "note": None}
    assert jsoncodec.from_json(Declared, data) == record
    assert jsoncodec.from_json(Declared, {"point": {"name": "b"}}) == Declared(
        point=Point(name="b")
    )
    with pytest.raises(jsoncodec.RecordError, match=r"point\.name: missing"):
        jsoncodec.from_json(Declared, {"point": {}})


def test_the_module_imports_no_dataclasses_inspect_or_typing() -> None:
    probe = (
        "import sys\nimport relpipe.core.record\n"
        "print(sorted({'dataclasses', 'inspect', 'typing'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr
