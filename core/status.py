"""The one status vocabulary: every check (qualification C1..C12, review, golden AL) is one of four.

`Status` is a `StrEnum`, so a status compares equal to, formats as and serialises to its word
(`"PASS"`, `"WARN"`, `"FAIL"`, `"N/A"`): records and reports written before it read the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Status(StrEnum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    NA = "N/A"


PASS, WARN, FAIL, NA = Status.PASS, Status.WARN, Status.FAIL, Status.NA
STATUSES = (PASS, WARN, FAIL, NA)


def overall(statuses: Iterable[str]) -> Status:
    """FAIL if any check failed, else WARN if any warned, else PASS (N/A counts as nothing)."""
    seen = set(statuses)
    if FAIL in seen:
        return FAIL
    if WARN in seen:
        return WARN
    return PASS
