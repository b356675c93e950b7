"""Timestamps as instants: the one parser for every time relpipe reads or compares.

A registry's image config `created` (docker writes nanoseconds and any UTC offset), the pins'
`resolved-at` / `created` / `archived-at` and the results store's times all pass through `parse`,
which returns an aware UTC `datetime`; comparisons are made on those, never on the text (as text,
`2026-10-01T10:00:00-05:00` sorts before the older `2026-10-01T12:00:00Z`). `text` writes the one
spelling relpipe stores (`YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, UTC), which also sorts as its instant.

A time without a zone is not an instant and is refused; so is anything that is not RFC 3339
(the pattern is anchored and bounded: linear on untrusted text). Seconds since the epoch from a
header (`x-ratelimit-reset`) go through `from_epoch`, which refuses what no calendar holds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RFC3339 = re.compile(
    r"(?P<seconds>\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d{1,9}))?"
    r"(?P<zone>[Zz]|[+-]\d{2}:\d{2})"
)
_MAX_TEXT = 64  # the longest valid spelling is 35 characters
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_EPOCH_S = 253402300799  # 9999-12-31T23:59:59Z, the last second a datetime holds


class InstantError(ValueError):
    """Not an RFC 3339 time with a zone (the message names the text, shortened)."""


def parse(text: str) -> datetime:
    """RFC 3339 text -> aware UTC datetime (nanoseconds cut to microseconds); InstantError if not
    one (no zone, out of range, garbage)."""
    if not isinstance(text, str) or len(text) > _MAX_TEXT:
        raise InstantError(f"not a time: {str(text)[:40]!r}")
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise InstantError(f"not an RFC 3339 time with a zone: {text!r}")
    fraction = (m["fraction"] or "")[:6].ljust(6, "0")
    zone = "+00:00" if m["zone"] in "Zz" else m["zone"]
    try:
        when = datetime.fromisoformat(f"{m['seconds'][:10]}T{m['seconds'][11:]}.{fraction}{zone}")
        return when.astimezone(UTC)
    except (ValueError, OverflowError):
        raise InstantError(f"not a valid time: {text!r}") from None


def parse_or_none(text: object) -> datetime | None:
    """`parse`, or None for a missing or unreadable time (evidence that is absent, not a guess)."""
    if not isinstance(text, str):
        return None
    try:
        return parse(text)
    except InstantError:
        return None


def text(when: datetime) -> str:
    """The stored spelling: UTC with `Z`, microseconds only when there are any."""
    if when.tzinfo is None:
        raise InstantError("a time without a zone is not an instant")
    utc = when.astimezone(UTC).replace(tzinfo=None)
    # isoformat, not strftime: glibc's %Y does not pad years before 1000 to four digits
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def normalise(raw: str) -> str:
    """`text(parse(raw))`: one spelling per instant (what is stored and compared)."""
    return text(parse(raw))


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def from_epoch(seconds: object) -> datetime | None:
    """Seconds since the epoch (an int, or decimal digits as sent in a header) -> instant; None
    for anything a calendar cannot hold (99999999999999999999, negative, not a number)."""
    if isinstance(seconds, str):
        if not seconds.isdigit() or len(seconds) > 12:
            return None
        seconds = int(seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        return None
    if not 0 <= seconds <= _MAX_EPOCH_S:
        return None
    return _EPOCH + timedelta(seconds=seconds)


def milliseconds(when: datetime) -> int:
    """Milliseconds since the epoch (the results store's integer times)."""
    return (when - _EPOCH) // timedelta(milliseconds=1)
