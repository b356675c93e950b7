"""`core.instant`: every time relpipe compares is parsed into an instant first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relpipe.core import instant


def test_an_offset_time_is_later_than_an_older_utc_one_whatever_the_text_order() -> None:
    offset, utc = "2026-10-01T10:00:00-05:00", "2026-10-01T12:00:00Z"
    assert offset < utc  # as text: the trap `revert` fell into
    assert instant.parse(offset) > instant.parse(utc)
    assert instant.normalise(offset) == "2026-10-01T15:00:00Z"


def test_registry_nanoseconds_are_cut_to_microseconds() -> None:
    when = instant.parse("2026-10-07T03:33:12.123456789Z")
    assert when == datetime(2026, 10, 7, 3, 33, 12, 123456, tzinfo=UTC)
    assert instant.text(when) == "2026-10-07T03:33:12.123456Z"


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-01T10:00:00",  # no zone: not an instant
        "2026-13-01T10:00:00Z",
        "20261001T100000Z",
        "",
        "2026-10-01T10:00:00Z" + "0" * 100,
        "99999-10-01T10:00:00Z",
    ],
)
def test_what_is_not_an_rfc3339_instant_is_refused(text: str) -> None:
    with pytest.raises(instant.InstantError):
        instant.parse(text)
    assert instant.parse_or_none(text) is None


@pytest.mark.parametrize("raw", ["99999999999999999999", "-1", "1e400", "", 10**30, True, 1.5])
def test_epoch_seconds_outside_any_calendar_are_none(raw: object) -> None:
    assert instant.from_epoch(raw) is None


def test_epoch_seconds_in_range() -> None:
    assert instant.from_epoch("1767225600") == datetime(2026, 1, 1, tzinfo=UTC)


@given(
    st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_any_offset_spelling_is_the_same_instant_as_its_stored_text(
    local: datetime, minutes: int
) -> None:
    when = local.replace(tzinfo=timezone(timedelta(minutes=minutes)))
    offset = f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    spelled = local.isoformat() + offset
    assert instant.parse(spelled) == when
    assert instant.parse(instant.text(when)) == when
    assert instant.normalise(spelled) == instant.text(when)


def test_the_results_store_reads_times_through_the_one_parser() -> None:
    from relpipe.changelog.results import inferencex, qualification

    later = "2026-10-01T10:00:00-05:00"  # 15:00 UTC
    ms = instant.milliseconds(datetime(2026, 10, 1, 15, tzinfo=UTC))
    assert inferencex.stamp(later) == ms
    assert qualification._created_ms(later) == ms  # noqa: SLF001 - the store's own reader
    assert qualification._created_ms("2026-10-01T10:00:00") == 0  # no zone: no instant
    assert inferencex.stamp("20261001-150000") == ms  # InferenceX's run-id spelling, UTC
