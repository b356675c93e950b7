"""The records of the results history: one `Sample` per value, as ingest parses it.

A sample is what a benchmark or eval reported for one series (config key or dashboard series), one
benchmark point (ISL/OSL and concurrency, or an eval task) and one metric, on one image. Bad input
is kept as what it is: `status` is a `core.status.Status`, PASS (`ok`: a measurement), FAIL
(`failed`: the run failed: zeros, no completed requests) or N/A (`ambiguous`: a value that cannot
be attributed or read safely: duplicate names in one run, an image without tag or digest, a unit
that may be percent or fraction); `note` says why in one line. Only PASS samples are ever compared
as measurements. The words in brackets are how the store and `relpipe history` spell them
(`WORDS`), as they always have.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ...core import numbers
from ...core.reference import is_digest, split
from ...core.status import FAIL, NA, PASS, Status

OK, FAILED, AMBIGUOUS = PASS, FAIL, NA
STATUSES = (OK, FAILED, AMBIGUOUS)
WORDS: Mapping[Status, str] = {OK: "ok", FAILED: "failed", AMBIGUOUS: "ambiguous"}

# kinds of metric, each judged its own way (regressions.py)
PERF = "perf"  # throughput, latency: a noise band learned from repeated runs
ACCURACY = "accuracy"  # eval scores: standard errors
ACCEPTANCE = "acceptance"  # speculative-decoding acceptance rate / length: flagged on its own
OTHER = "other"  # recorded, never judged (counts, metadata)
KINDS = (PERF, ACCURACY, ACCEPTANCE, OTHER)

HIGHER = "higher"
LOWER = "lower"


@dataclass(frozen=True, kw_only=True)
class Image:
    """Which image a sample was measured on. `ref` is the identity used to group repeated runs:
    the digest when known, else the tag as written (nightly tags are never re-pushed)."""

    ref: str
    tag: str | None = None
    digest: str | None = None
    engine_version: str | None = None
    engine_commit: str | None = None


@dataclass(frozen=True, kw_only=True)
class Sample:
    series: str
    point: str
    metric: str
    kind: str
    better: str
    unit: str
    image: Image
    run: str  # the run or file it came from (several samples of one point share a run only once)
    seq: int  # order in the history: the run's time in milliseconds since the epoch
    status: Status
    value: float | None
    se: float | None = None
    threshold: float | None = None
    note: str = ""
    source: str = ""

    @property
    def id(self) -> str:
        """The sample's identity: the same run re-ingested is the same sample."""
        text = "\x1f".join((self.source, self.run, self.series, self.point, self.metric))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


class Measurement(NamedTuple):
    """What regressions read of a sample (a plain row: 100,000 of them are read per comparison)."""

    series: str
    point: str
    metric: str
    kind: str
    better: str
    unit: str
    image: str
    engine_commit: str | None  # with `image`, the run's identity: what was measured
    run: str
    seq: int
    status: str  # a Status value (the member itself, or its value as the store selects it)
    value: float | None
    se: float | None
    threshold: float | None
    note: str


MEASUREMENT_COLUMNS = Measurement._fields


def measurement(s: Sample) -> Measurement:
    return Measurement(
        s.series,
        s.point,
        s.metric,
        s.kind,
        s.better,
        s.unit,
        s.image.ref,
        s.image.engine_commit,
        s.run,
        s.seq,
        s.status,
        s.value,
        s.se,
        s.threshold,
        s.note,
    )  # fmt: skip - Measurement's field order


@dataclass(frozen=True, kw_only=True)
class Rejected:
    """An input (file or entry) ingest could not use at all, with the one-line reason."""

    source: str
    reason: str


def image_from_ref(ref: str) -> tuple[Image | None, str]:
    """An `Image` from a reference as a dashboard writes it, or None and why it is ambiguous.

    `repo:latest@sha256:...` is identified by its digest (the tag says nothing); a bare
    `repo:latest` (or no tag) names no fixed image, so its samples are ambiguous."""
    ref = ref.strip()
    written = split(ref)
    repo, tag, digest = written.name, written.tag or "", written.digest or ""
    if digest:
        if not is_digest(digest):
            return None, f"image {ref!r} has a malformed digest"
        return Image(
            ref=f"{repo}@{digest}", tag=None if tag == "latest" else tag, digest=digest
        ), ""
    if not tag or tag == "latest":
        return None, f"image {ref!r} names no fixed image (no version tag, no digest)"
    return Image(ref=f"{repo}:{tag}", tag=tag), ""


def finite(raw: object) -> float | None:
    """A number from outside as a float, or None when it is not one or is outside the
    bounded-number policy (core.numbers: finite, at most 2**53; a bool is no number)."""
    return float(raw) if numbers.is_bounded(raw) else None  # type: ignore[arg-type]
