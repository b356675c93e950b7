"""`core.jsoncodec`: records to JSON and back from their fields and types; untrusted JSON refused
with one line naming the field, never a KeyError or TypeError."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relpipe.core import jsoncodec, numbers
from relpipe.core.errors import RelpipeError
from relpipe.core.jsoncodec import RecordError
from relpipe.core.status import Status


class Colour(Enum):
    RED = 1
    BLUE = 2


@dataclass(frozen=True, kw_only=True)
class Inner:
    name: str
    size: int = 0


@dataclass(frozen=True, kw_only=True)
class Every:
    """One field of every supported type."""

    text: str
    count: int
    ratio: float
    flag: bool
    maybe: int | None
    either: str | int
    names: tuple[str, ...]
    pair: tuple[str, int]
    items: list[float]
    table: Mapping[str, float | None]
    plain: dict[str, Any]
    inner: Inner
    inners: tuple[Inner, ...]
    status: Status
    colour: Colour
    path: Path
    mode: Literal["fast", "slow"]
    blob: Any
    spelled: str = field(default="x", metadata=jsoncodec.spec(key="spelled-out"))
    gone_if_none: Inner | None = field(default=None, metadata=jsoncodec.spec(omit="none"))
    gone_if_default: str = field(default="", metadata=jsoncodec.spec(omit="default"))
    defaulted: tuple[int, ...] = ()


EVERY = Every(
    text="t",
    count=3,
    ratio=0.5,
    flag=True,
    maybe=None,
    either=7,
    names=("a", "b"),
    pair=("p", 2),
    items=[1.5, 2.0],
    table={"fp8": None, "bf16": 0.99},
    plain={"nested": [1, {"x": None}]},
    inner=Inner(name="i", size=4),
    inners=(Inner(name="j"),),
    status=Status.NA,
    colour=Colour.BLUE,
    path=Path("/x/y"),
    mode="slow",
    blob=[{"free": "form"}],
)
EVERY_JSON = {
    "text": "t",
    "count": 3,
    "ratio": 0.5,
    "flag": True,
    "maybe": None,
    "either": 7,
    "names": ["a", "b"],
    "pair": ["p", 2],
    "items": [1.5, 2.0],
    "table": {"fp8": None, "bf16": 0.99},
    "plain": {"nested": [1, {"x": None}]},
    "inner": {"name": "i", "size": 4},
    "inners": [{"name": "j", "size": 0}],
    "status": "N/A",
    "colour": 2,
    "path": "/x/y",
    "mode": "slow",
    "blob": [{"free": "form"}],
    "spelled-out": "x",
    "defaulted": [],
}


def test_every_supported_type_is_written_in_field_order_and_read_back() -> None:
    data = jsoncodec.to_json(EVERY)
    assert data == EVERY_JSON and list(data) == list(EVERY_JSON)
    assert json.loads(json.dumps(data)) == data  # plain JSON: no tuples, enums or paths left
    again = jsoncodec.from_json(Every, json.loads(json.dumps(data)), where="every")
    assert again == EVERY
    assert type(again.names) is tuple and type(again.items) is list
    assert again.status is Status.NA and again.colour is Colour.BLUE and again.path == Path("/x/y")


def test_renames_and_omissions_apply_both_ways() -> None:
    full = Every(**{**EVERY.__dict__, "gone_if_none": Inner(name="g"), "gone_if_default": "set"})
    data = jsoncodec.to_json(full)
    assert data["gone_if_none"] == {"name": "g", "size": 0} and data["gone_if_default"] == "set"
    assert jsoncodec.from_json(Every, data) == full
    assert "spelled" not in data and jsoncodec.from_json(Every, EVERY_JSON).spelled == "x"


@dataclass(frozen=True, kw_only=True)
class Stage:
    """A stage output whose format spells its statuses with older words."""

    status: Status = field(metadata=jsoncodec.spec(words={Status.PASS: "ok", Status.NA: "n/a"}))


def test_an_enum_with_words_of_its_own_reads_and_writes_only_those_words() -> None:
    assert jsoncodec.from_json(Stage, {"status": "n/a"}).status is Status.NA
    assert jsoncodec.to_json(Stage(status=Status.PASS)) == {"status": "ok"}
    for bad, got in (
        ("PASS", "a string ('PASS')"),
        ("error", "a string ('error')"),
        (1, "a number (1)"),
    ):
        with pytest.raises(RecordError) as err:
            jsoncodec.from_json(Stage, {"status": bad}, where="probe.json")
        assert str(err.value) == f"probe.json: status: expected one of 'ok', 'n/a', got {got}"
    with pytest.raises(TypeError, match="Stage.status: .*FAIL.* has no recorded word"):
        jsoncodec.to_json(Stage(status=Status.FAIL))  # a writer's mistake, never silent


def test_missing_keys_take_their_defaults_and_unknown_keys_are_ignored() -> None:
    data = {k: v for k, v in EVERY_JSON.items() if k not in ("spelled-out", "defaulted")}
    data["summary"] = {"derived": True}  # a derived value some documents carry for readers
    assert jsoncodec.from_json(Every, data) == EVERY


def test_an_int_is_a_float_but_nothing_else_converts() -> None:
    again = jsoncodec.from_json(Every, {**EVERY_JSON, "ratio": 1})
    assert again.ratio == 1.0 and type(again.ratio) is float


# --- hostile input: one line naming the field ---------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"count": True}, "every: count: expected an integer, got true"),
        ({"count": 1.0}, "every: count: expected an integer, got a number (1.0)"),
        ({"count": "3"}, "every: count: expected an integer, got a string ('3')"),
        ({"ratio": False}, "every: ratio: expected a number, got false"),
        ({"flag": 1}, "every: flag: expected true or false, got a number (1)"),
        ({"text": 5}, "every: text: expected a string, got a number (5)"),
        ({"text": None}, "every: text: expected a string, got null"),
        ({"maybe": "x"}, "every: maybe: expected an integer or null, got a string ('x')"),
        ({"either": 1.5}, "every: either: expected a string or an integer, got a number (1.5)"),
        ({"names": "ab"}, "every: names: expected a list, got a string ('ab')"),
        ({"names": ["a", ["b"]]}, "every: names[1]: expected a string, got a list"),
        ({"pair": ["p"]}, "every: pair: expected a list of 2, got 1 items"),
        ({"pair": ["p", "2"]}, "every: pair[1]: expected an integer, got a string ('2')"),
        ({"items": {"a": 1}}, "every: items: expected a list, got an object"),
        ({"table": []}, "every: table: expected an object, got a list"),
        ({"table": {"fp8": "x"}}, "every: table['fp8']: expected a number or null, got a string"),
        ({"inner": "i"}, "every: inner: expected an object, got a string ('i')"),
        ({"inner": {"size": 1}}, "every: inner.name: missing"),
        ({"inner": {"name": "i", "size": [1]}}, "every: inner.size: expected an integer, got a"),
        ({"inners": [{"name": "a"}, {"name": {}}]}, "every: inners[1].name: expected a string"),
        ({"status": "OK"}, "every: status: expected one of 'PASS', 'WARN', 'FAIL', 'N/A', got"),
        ({"colour": "BLUE"}, "every: colour: expected one of 1, 2, got a string ('BLUE')"),
        ({"path": 3}, "every: path: expected a string, got a number (3)"),
        ({"mode": "medium"}, "every: mode: expected one of 'fast', 'slow', got a string"),
        ({"spelled-out": 1}, "every: spelled-out: expected a string, got a number (1)"),
        ({"gone_if_none": {"name": 1}}, "every: gone_if_none.name: expected a string, got a"),
        ({"count": ...}, "every: count: missing"),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_field(change: dict[str, Any], message: str) -> None:
    data = {k: v for k, v in {**EVERY_JSON, **change}.items() if v is not ...}
    with pytest.raises(RecordError) as err:
        jsoncodec.from_json(Every, data, where="every")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert isinstance(err.value, RelpipeError) and err.value.exit_code == 2


@pytest.mark.parametrize("document", [None, [], "text", 3, [EVERY_JSON]])
def test_a_document_that_is_not_an_object_is_refused(document: object) -> None:
    with pytest.raises(RecordError, match=r"^report\.json: expected an object, got "):
        jsoncodec.from_json(Every, document, where="report.json")


def test_a_long_or_hostile_value_is_quoted_short_on_one_line() -> None:
    with pytest.raises(RecordError) as err:
        jsoncodec.from_json(Inner, {"name": "n", "size": "x\n\x1b[31m" + "y" * 500}, where="w")
    message = str(err.value)
    assert message.startswith(r"w: size: expected an integer, got a string ('x\n\x1b[31myyy")
    assert message.endswith("...)") and len(message) < 100 and "\x1b" not in message


@st.composite
def _json(draw: st.DrawFn) -> Any:
    return draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
            ),
            max_leaves=8,
        )
    )


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(sorted(EVERY_JSON)), value=_json())
def test_any_json_in_any_field_is_read_or_refused_with_a_record_error(key: str, value: Any) -> None:
    try:
        again = jsoncodec.from_json(Every, {**EVERY_JSON, key: value}, where="fuzz")
    except RecordError as exc:
        assert str(exc).startswith(f"fuzz: {key}") and "\n" not in str(exc)
    else:
        assert jsoncodec.from_json(Every, jsoncodec.to_json(again)) == again


# --- round trips -------------------------------------------------------------------------------

_text = st.text(max_size=8)
# Numbers within the bounded-number policy (core.numbers): what a record holds.
_int = st.integers(-numbers.LIMIT, numbers.LIMIT)
_float = st.floats(-numbers.LIMIT, numbers.LIMIT, allow_nan=False)
_inner = st.builds(Inner, name=_text, size=st.integers(-5, 10**12))
_every = st.builds(
    Every,
    text=_text,
    count=_int,
    ratio=_float,
    flag=st.booleans(),
    maybe=st.none() | _int,
    either=_text | _int,
    names=st.lists(_text, max_size=3).map(tuple),
    pair=st.tuples(_text, _int),
    items=st.lists(_float, max_size=3),
    table=st.dictionaries(_text, st.none() | _float, max_size=3),
    plain=st.dictionaries(_text, st.none() | _int | _text, max_size=3),
    inner=_inner,
    inners=st.lists(_inner, max_size=2).map(tuple),
    status=st.sampled_from(Status),
    colour=st.sampled_from(Colour),
    path=st.sampled_from([Path("/"), Path("rel/p"), Path("/a b/ü")]),
    mode=st.sampled_from(["fast", "slow"]),
    blob=st.none() | st.lists(_int, max_size=2),
    spelled=_text,
    gone_if_none=st.none() | _inner,
    gone_if_default=_text,
    defaulted=st.lists(_int, max_size=3).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(_every)
def test_every_record_round_trips_through_json_text(record: Every) -> None:
    data = json.loads(json.dumps(jsoncodec.to_json(record)))
    again = jsoncodec.from_json(Every, data)
    assert again == record and jsoncodec.to_json(again) == data


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(["count", "ratio", "maybe", "pair", "items", "table"]),
    value=st.integers(numbers.LIMIT + 1, 10**500).flatmap(lambda n: st.sampled_from([n, -n]))
    | st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not numbers.is_bounded(x)),
)
def test_a_number_out_of_range_in_a_number_field_is_one_record_error(key: str, value: Any) -> None:
    """Issue 34.3: `float(10**400)` raised OverflowError in a float field (exit 3)."""
    doc = {**EVERY_JSON}
    if key == "pair":
        doc[key] = ["a", value]
    elif key == "items":
        doc[key] = [value]
    elif key == "table":
        doc[key] = {"k": value}
    else:
        doc[key] = value
    with pytest.raises(RecordError, match="out of range|expected") as info:
        jsoncodec.from_json(Every, doc, where="fuzz")
    assert str(info.value).startswith(f"fuzz: {key}") and "\n" not in str(info.value)


# --- records with a shape of their own ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Versioned:
    """A record whose JSON adds a derived value and reads an older spelling."""

    count: int
    names: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**jsoncodec.fields_to_json(self), "total": len(self.names)}

    @classmethod
    def from_json(cls, data: object, *, where: str) -> Versioned:
        if isinstance(data, Mapping) and "n" in data:  # the older spelling of `count`
            data = {**data, "count": data["n"]}
        return jsoncodec.fields_from_json(cls, data, where=where)


@dataclass(frozen=True, kw_only=True)
class Holder:
    one: Versioned
    many: tuple[Versioned, ...] = ()


def test_a_records_own_methods_serve_it_wherever_it_stands() -> None:
    holder = Holder(one=Versioned(count=1, names=("a",)), many=(Versioned(count=2),))
    data = jsoncodec.to_json(holder)
    assert data == {
        "one": {"count": 1, "names": ["a"], "total": 1},
        "many": [{"count": 2, "names": [], "total": 0}],
    }
    assert jsoncodec.from_json(Holder, data) == holder
    assert jsoncodec.from_json(Holder, {"one": {"n": 1, "names": ["a"]}}).one == holder.one
    with pytest.raises(RecordError, match=r"^holder: many\[0\]\.count: expected an integer"):
        jsoncodec.from_json(Holder, {"one": {"count": 1}, "many": [{"n": "2"}]}, where="holder")


def test_a_records_own_check_is_a_record_error() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError(f"n must be positive, not {self.n}")

    with pytest.raises(RecordError, match=r"^w: n must be positive, not -1$"):
        jsoncodec.from_json(Positive, {"n": -1}, where="w")


def test_writing_something_that_is_not_json_is_a_programming_error() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Raw:
        data: Any

    with pytest.raises(TypeError, match="data: bytes has no JSON form"):
        jsoncodec.to_json(Raw(data=b"x"))
    with pytest.raises(TypeError, match="not a record"):
        jsoncodec.to_json({"a": 1})
