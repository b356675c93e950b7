"""Per-point regressions against the history: every run change of every (series, point, metric).

A run is identified by what was measured: the image and the engine commit (ATOM's CI runs many
engine commits on top of one nightly image; an image without a known commit is one run identity).
Identities are ordered by their first run's time, so a change between two runs of one image is
found where it happened, with both commits. A run identity's value at a point is the median of its
measurements there. Two identities are compared by kind of metric:

* perf (throughput, latency) and acceptance: the change is judged against a noise band learned from
  repeated runs of the *same* image (relative differences of consecutive runs). From n >= 5 such
  pairs a band is `K_SIGMA` times the robust spread (1.4826 x their median, which estimates the
  spread of a difference of two runs) or their 99th percentile widened by 1/sqrt(n) (the highest
  of few pairs underestimates a heavy tail), whichever is wider. The band used is the widest of
  those of the point, of its series (same metric) and of the metric over the whole history (from
  `MIN_POOLED` pairs): ATOM's dashboards are heavy-tailed (May 2026: median same-image throughput
  difference 0.4 %, 99th percentile 59 %), and a point's few pairs rarely saw its tail. Without
  5 pairs anywhere: `DEFAULT_BAND` (25 %). Tail latencies (TTFT, p99/p999), dominated by queueing,
  never get less than `TAIL_MIN_BAND` (+150 %; default `TAIL_DEFAULT_BAND`); others never less
  than `MIN_BAND`. Pairs of an image whose acceptance collapsed in some runs only (`unsettled`)
  differ in kind, not by noise, and teach no band.
  A change outside the band is still noise when the new value is within the band of the median
  of the last `LEVEL_IMAGES` images: the previous image's value was the outlier (one run).
  Measured by a run-by-run replay (tests/changelog/test_results_corpus.py): same-image pairs
  flagged 1 of 520 (Aug 2026 dashboard), 14 of 1,404 (May), 0 of 420 (mocker), at most 1 %.
* accuracy: the drop is judged with the standard errors of both scores (a two-sample z-test at
  `Z_EVAL`), and every score below its own threshold is `below-threshold` whatever the change.
* acceptance additionally: a rate that falls to under half of the previous image's is a
  regression whatever the band; a run that accepted nothing (rate under 1 %, accept length 1.0
  token per forward) is a collapse judged on its own, with or without an earlier image: `failed`
  when most runs of the image collapsed, `regression` when some did.
* an identity whose only results at a point failed is `failed`; one that ran the series (at least
  one point the previous identity ran too) and the metric at other points but not at this one is
  `missing`, its own kind (partial CI runs), summarised per run by `missing_runs`.
* unstable acceptance: a series whose acceptance collapsed in some runs of one identity and not in
  others is unstable; a collapse there seen in a single run (and whatever else that run measured)
  is `unstable-acceptance`, not a regression: one run cannot name a cause.

Bands and instability are learned from every row given; `compare(rows, series=...)` filters what is
returned, never what is learned, so the verdict on a point does not depend on the filter.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import overload

from ...core import collector, jsoncodec
from .records import (
    ACCEPTANCE,
    ACCURACY,
    FAILED,
    HIGHER,
    OK,
    OTHER,
    PERF,
    Measurement,
    Sample,
    measurement,
)

K_SIGMA = 4.0
MIN_PAIRS = 5
TAIL_QUANTILE = (
    0.99  # benchmark noise is heavy-tailed: the band also covers 99 % of same-image pairs
)
DEFAULT_BAND = 0.25
TAIL_DEFAULT_BAND = 2.0
TAIL_MIN_BAND = 1.5
MIN_POOLED = 20
LEVEL_IMAGES = 3  # a change is judged also against the median of the last 3 images
_PERCENTILE = re.compile(r"\bp9\d")
MIN_BAND = 0.01
Z_EVAL = 2.58  # one-sided 99.5 %: two runs of one image differ by sampling alone far less often
COLLAPSE_RATIO = 0.5
COLLAPSED_LENGTH = 1.0
NOTHING_ACCEPTED = 0.01  # an acceptance rate under 1 %: the draft model's tokens are all refused

REGRESSION = "regression"
IMPROVEMENT = "improvement"
FAILED_KIND = "failed"
BELOW = "below-threshold"
WITHIN = "within-noise"
NO_BASELINE = "no-baseline"
MISSING = "missing"
UNSTABLE = "unstable-acceptance"
FINDING_KINDS = (REGRESSION, IMPROVEMENT, FAILED_KIND, BELOW, MISSING, UNSTABLE)
BAD_KINDS = (REGRESSION, FAILED_KIND, BELOW)  # what makes `relpipe history regressions` exit 1


@dataclass(frozen=True, kw_only=True)
class PointChange:
    """One metric at one point between two runs: a regression, an improvement, a failure, a
    score below its threshold, a missing point or unstable acceptance (`kind`), with the noise
    band it was judged against and the two run identities (image, engine commit)."""

    series: str
    point: str
    metric: str
    kind: str
    metric_kind: str  # perf | accuracy | acceptance (records.KINDS)
    old_image: str | None
    new_image: str
    # the engine commits of the two run identities (None: not recorded), the metric's unit;
    # left out of JSON when empty, so records written before them read and write back unchanged
    old_commit: str | None = field(default=None, metadata=jsoncodec.spec(omit="none"))
    new_commit: str | None = field(default=None, metadata=jsoncodec.spec(omit="none"))
    unit: str = field(default="", metadata=jsoncodec.spec(omit="default"))
    old_value: float | None
    new_value: float | None
    change: float | None  # relative (new - old) / old
    band: float | None  # relative for perf/acceptance; absolute score for accuracy (z x se)
    band_source: str
    note: str
    runs_old: int
    runs_new: int
    # the first run of the new identity (where a missing point is summarised)
    new_run: str = field(default="", metadata=jsoncodec.spec(omit="default"))
    # where the change began when it is older than the previous run (a collapse that persists):
    # the last (image, commit) that worked and the first that did not
    onset_old: tuple[str, str | None] | None = field(
        default=None, metadata=jsoncodec.spec(omit="none")
    )
    onset_new: tuple[str, str | None] | None = field(
        default=None, metadata=jsoncodec.spec(omit="none")
    )

    @property
    def good_bad(self) -> tuple[tuple[str, str | None] | None, tuple[str, str | None]]:
        """The last good and the first bad run identity: where to look for the cause."""
        if self.onset_new is not None:
            return self.onset_old, self.onset_new
        old = (self.old_image, self.old_commit) if self.old_image else None
        return old, (self.new_image, self.new_commit)


@dataclass(frozen=True, kw_only=True)
class MissingRun:
    """Points a run did not report that the run before it in the series did ("12 of 40")."""

    series: str
    image: str
    commit: str | None
    run: str
    missing: int
    of: int


class _Image:
    """One run identity (image, engine commit) at one point: its runs' values in time order.
    A plain class with slots, made from a `_Column` only for the identities that are read."""

    __slots__ = (
        "ref",
        "commit",
        "first_seq",
        "run",
        "values",
        "seqs",
        "ses",
        "thresholds",
        "failed",
        "notes",
        "_mid",
    )  # fmt: skip - one tuple of names

    def __init__(self, ref: str, commit: str | None, first_seq: int, run: str) -> None:
        self.ref, self.commit, self.first_seq, self.run = ref, commit, first_seq, run
        self.values: list[float] = []
        self.seqs: list[int] = []
        # rarely filled: made on first use (`_more`), one shared empty tuple until then
        self.ses: list[float] | tuple[()] = ()
        self.thresholds: list[float] | tuple[()] = ()
        self.failed = 0
        self.notes: list[str] | tuple[()] = ()
        self._mid: float | None | _Unset = _UNSET

    @property
    def median(self) -> float | None:
        """The median of its values (None without one), computed once: every judgement, level
        and chart reads it."""
        mid = self._mid
        if mid is _UNSET:
            mid = self._mid = _median(self.values) if self.values else None
        return mid  # type: ignore[return-value]


class _Unset:
    """The type of `_UNSET`: a median not computed yet (None is a value: no median)."""


_UNSET = _Unset()


def _median(values: Sequence[float]) -> float:
    """`statistics.median`, the same arithmetic without its generality (called 100,000 times)."""
    n = len(values)
    if n == 1:
        return values[0]
    ordered = sorted(values)
    i = n // 2
    return ordered[i] if n % 2 else (ordered[i - 1] + ordered[i]) / 2


Group = tuple[str, str, str]
Identity = tuple[str, str | None]  # (image, engine commit)


class Runs:
    """The rows grouped by (series, point, metric) and run identity, with their noise bands:
    made once, read by `compare`, `charts` and `missing_runs` (a dashboard needs all three)."""

    groups: Mapping[Group, Mapping[Identity, _Image]]
    series_points: Mapping[str, Mapping[Identity, set[Group]]]

    def __init__(self, samples: Iterable[Sample | Measurement], *, plain: bool = False) -> None:
        """`plain`: every run identity made an object at once, in plain dicts (the
        straightforward shape the columns must agree with; tests compare the two)."""
        with collector.paused():  # 100,000 rows in, one object per point: no cycle
            self.groups, self.kinds, self.series_points = _group(samples)
            if plain:
                self.groups = {k: dict(self.groups[k]) for k in self.groups}
                points = self.series_points
                self.series_points = {s: {i: set(points[s][i]) for i in points[s]} for s in points}
            self.bands = _Bands(self.groups, self.kinds)


@collector.paused()  # findings and charts of 100,000 rows: no cycle
def compare(
    samples: Iterable[Sample | Measurement] | Runs,
    *,
    every: bool = False,
    all_points: bool = False,
    series: Iterable[str] = (),
) -> list[PointChange]:
    """Findings for the newest run change of every point (`every`: each change in order), of
    `series` only when given (learned from every row all the same).

    Only regression/improvement/failed/below-threshold/missing/unstable unless `all_points` (then
    also the points within noise and those without a previous run), as the notes' table needs."""
    runs = samples if isinstance(samples, Runs) else Runs(samples)
    groups, kinds, series_points = runs.groups, runs.kinds, runs.series_points
    bands = runs.bands
    wanted = set(series)
    out: list[PointChange] = []
    for key in sorted(groups):
        if kinds[key][0] == OTHER or (wanted and key[0] not in wanted):
            continue
        images = groups.ordered(key) if isinstance(groups, _Groups) else _ordered(groups[key])
        start = 1 if every else max(1, len(images) - 1)
        # the levels of the runs judged and the LEVEL_IMAGES before them (not of every run)
        lowest = max(0, start - LEVEL_IMAGES)
        levels = [None] * lowest + [i.median for i in images[lowest:]]
        if len(images) < 2 and all_points and images:
            out += _judge(key, kinds[key], None, images[-1], bands, [], keep=True)
        for at in range(start, len(images)):
            if every and at < len(images) - 1 and _still_collapsed(key[2], images, at):
                continue  # one finding per collapse (its onset) and one for the newest run
            recent = [v for v in levels[max(0, at - LEVEL_IMAGES) : at] if v is not None]
            found = _judge(
                key, kinds[key], images[at - 1], images[at], bands, recent, keep=all_points
            )
            out += [_with_onset(f, key[2], images, at) for f in found]
    out += _missing(groups, kinds, series_points, every=every, wanted=wanted)
    out = [_unstable(f, bands) for f in out]
    return [f for f in out if all_points or f.kind in FINDING_KINDS]


def _dead(metric: str, image: _Image) -> bool:
    values = image.values
    if not values:
        return False
    # every value accepted nothing only if the highest did (the common case: no, at once)
    if not _nothing_accepted(metric, max(values)):
        return False
    return all(_nothing_accepted(metric, v) for v in values)


def _still_collapsed(metric: str, images: Sequence[_Image], at: int) -> bool:
    return _dead(metric, images[at - 1]) and _dead(metric, images[at])


def _with_onset(f: PointChange, metric: str, images: Sequence[_Image], at: int) -> PointChange:
    """A collapse that began before the previous run: named with the runs where it began (the
    last run that worked and the first that accepted nothing), where its cause lies."""
    if (
        f.kind != FAILED_KIND
        or f.metric_kind != ACCEPTANCE
        or not _still_collapsed(metric, images, at)
    ):
        return f
    first = at
    while first > 0 and _dead(metric, images[first - 1]):
        first -= 1
    bad = images[first]
    good = images[first - 1] if first > 0 else None
    since = f"{bad.ref}@{(bad.commit or '?')[:12]}"
    note = f"{f.note}; collapsed since {since}"
    return replace(
        f,
        onset_old=(good.ref, good.commit) if good else None,
        onset_new=(bad.ref, bad.commit),
        note=note if good else note + " (the first run of the series)",
    )


def _ordered(identities: Mapping[Identity, _Image]) -> list[_Image]:
    return sorted(identities.values(), key=lambda i: (i.first_seq, i.ref, i.commit or ""))


def missing_runs(
    findings: Iterable[PointChange], rows: Iterable[Sample | Measurement] | Runs
) -> list[MissingRun]:
    """The `missing` findings summarised per run: how many of the points the previous run of the
    series reported this one did not."""
    counted: dict[tuple[str, str, str | None, str], int] = defaultdict(int)
    for f in findings:
        if f.kind == MISSING:
            counted[(f.series, f.new_image, f.new_commit, f.new_run)] += 1
    if not counted:
        return []
    runs = rows if isinstance(rows, Runs) else Runs(rows)
    groups, kinds, series_points = runs.groups, runs.kinds, runs.series_points
    out = []
    for (series, image, commit, run), n in sorted(counted.items(), key=lambda kv: kv[0][3]):
        before = _previous(groups, series_points[series], (image, commit))
        ran = series_points[series].get(before, set()) if before else set()
        total = len([k for k in ran if kinds[k][0] != OTHER])
        out.append(
            MissingRun(series=series, image=image, commit=commit, run=run, missing=n, of=total)
        )
    return out


def _previous(
    groups: Mapping[Group, Mapping[Identity, _Image]],
    by_id: Mapping[Identity, set[Group]],
    ident: Identity,
) -> Identity | None:
    order = list(by_id)  # made in (seq, run) order: each identity where its first run is
    at = order.index(ident) if ident in order else 0
    return order[at - 1] if at > 0 else None


def for_image(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> list[PointChange] | None:
    """Every point of `series` for the image named by any of `images` (its digest ref, its tag
    ref) against the image before it; None when the history holds nothing of that image."""
    upto = _up_to(rows, series=series, images=images)
    return None if upto is None else compare(upto, all_points=True, series=[series])


def trend(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """Per (point, metric): each image's median value, oldest first, up to the named image."""
    upto = _up_to(rows, series=series, images=images) or []
    groups, kinds, _ = _group(upto)
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for key in sorted(groups):
        if kinds[key][0] == OTHER or key[0] != series:
            continue
        ordered = _ordered(groups[key])
        out[(key[1], key[2])] = [(i.ref, statistics.median(i.values)) for i in ordered if i.values]
    return out


def _up_to(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> list[Measurement] | None:
    """The series' measurements as of the named image's first run: images first measured after
    it are left out (the question is what changed when it came); its refs merged into one."""
    every = [m if isinstance(m, Measurement) else measurement(m) for m in rows]
    others = [m for m in every if m.series != series]  # what the bands are learned from too
    mine = [m for m in every if m.series == series]
    ours = [m for m in mine if m.image in images]
    if not ours:
        return None
    ref, commit = ours[0].image, ours[0].engine_commit
    first = min(m.seq for m in ours)
    later = {m.image for m in mine if m.image != ref and m.seq > first}
    earlier = {m.image for m in mine if m.image != ref and m.seq <= first}
    return others + [
        m._replace(image=ref, engine_commit=commit) if m.image in images else m
        for m in mine
        if m.image in images or m.image in earlier or m.image not in later
    ]


Kinds = dict[Group, tuple[str, str, str]]  # (metric kind, better, unit)


def _group(
    samples: Iterable[Sample | Measurement],
) -> tuple[_Groups, Kinds, _SeriesPoints]:
    rows = [measurement(m) if isinstance(m, Sample) else m for m in samples]
    # Python's order, not the database's: PostgreSQL may collate `run` differently from SQLite.
    rows.sort(key=itemgetter(9, 8))  # (seq, run)
    columns: dict[Group, _Column] = {}
    kinds: Kinds = {}
    series_keys: dict[str, list[Group]] = defaultdict(list)
    series_order: dict[str, dict[Identity, None]] = defaultdict(dict)
    _fill(rows, columns, kinds, series_keys, series_order)
    return _Groups(columns), kinds, _SeriesPoints(columns, series_keys, series_order)


def _fill(
    rows: Sequence[Measurement],
    columns: dict[Group, _Column],
    kinds: Kinds,
    series_keys: dict[str, list[Group]],
    series_order: dict[str, dict[Identity, None]],
) -> None:
    """The rows, in (seq, run) order, into one `_Column` per (series, point, metric): a few
    appends per row, no object per run identity (100,000 rows are read per comparison)."""
    last_key: Group | None = None
    column = _Column()
    for row in rows:
        (
            series,
            point,
            metric,
            kind,
            better,
            unit,
            ref,
            commit,
            run,
            seq,
            status,
            value,
            se,
            limit,
            note,
        ) = row  # fmt: skip - Measurement's fields
        if status != OK and status != FAILED:
            continue  # ambiguous samples are never measurements
        key = (series, point, metric)
        if key != last_key:
            found = columns.get(key)
            if found is None:
                found = columns[key] = _Column()
                kinds[key] = (kind, better, unit)
                series_keys[series].append(key)
            column, last_key = found, key
        ident = (ref, commit)
        idents = column.idents
        at = idents.get(ident)
        if at is None:
            at = idents[ident] = len(idents)
            column.first_seq.append(seq)
            column.first_run.append(run)
            order = series_order[series]
            if ident not in order:
                order[ident] = None
        if status == FAILED or value is None:
            value = None
            column.extra[len(column.owner)] = (None, None, note)  # few: failures
        elif se is not None or limit is not None:
            column.extra[len(column.owner)] = (se, limit, "")
        column.owner.append(at)
        column.seqs.append(seq)
        column.values.append(value)


class _Column:
    """One (series, point, metric) as columns: per row (in (seq, run) order) the index of its run
    identity, its seq and its value (None: failed); per identity its first seq and run; standard
    errors, thresholds and failure notes of the rare rows that have them. `_Image`s are made
    from it only for the identities read (`images`)."""

    __slots__ = ("idents", "first_seq", "first_run", "owner", "seqs", "values", "extra", "_made")

    def __init__(self) -> None:
        self.idents: dict[Identity, int] = {}
        self.first_seq: list[int] = []
        self.first_run: list[str] = []
        self.owner: list[int] = []
        self.seqs: list[int] = []
        self.values: list[float | None] = []
        self.extra: dict[int, tuple[float | None, float | None, str]] = {}
        self._made: dict[int, _Image] = {}

    def images(self, wanted: Iterable[int]) -> dict[int, _Image]:
        """The `_Image`s of the identities `wanted` (indices), made in one pass over the rows."""
        made = self._made
        todo = {i for i in wanted if i not in made}
        if todo:
            idents = list(self.idents)
            fresh = {
                i: _Image(*idents[i], self.first_seq[i], self.first_run[i]) for i in sorted(todo)
            }
            extra = self.extra
            for j, (i, seq, value) in enumerate(
                zip(self.owner, self.seqs, self.values, strict=True)
            ):
                image = fresh.get(i)
                if image is None:
                    continue
                if value is None:
                    image.failed += 1
                    image.notes = [*image.notes, extra[j][2]]
                    continue
                image.values.append(value)
                image.seqs.append(seq)
                if j in extra:
                    se, limit, _ = extra[j]
                    if se is not None:
                        image.ses = _more(image.ses, se)
                    if limit is not None:
                        image.thresholds = _more(image.thresholds, limit)
            made.update(fresh)
        return made

    def order(self) -> list[int]:
        """The identities' indices in `_ordered`'s order: first run, then image and commit."""
        first = self.first_seq
        n = len(first)
        if all(first[i] < first[i + 1] for i in range(n - 1)):
            return list(range(n))  # first runs all apart: the order they came in
        idents = list(self.idents)
        return sorted(
            range(n), key=lambda i: (first[i], idents[i][0], idents[i][1] or "")
        )  # fmt: skip - _ordered's key


class _Groups(Mapping[Group, Mapping[Identity, _Image]]):
    """`groups[(series, point, metric)]`: the run identities of a point as `_Image`s, made on
    first read from its `_Column`; `ordered` makes only those a comparison reads."""

    def __init__(self, columns: dict[Group, _Column]) -> None:
        self.columns = columns
        self._all: dict[Group, dict[Identity, _Image]] = {}

    def __getitem__(self, key: Group) -> dict[Identity, _Image]:
        made = self._all.get(key)
        if made is None:
            column = self.columns[key]
            images = column.images(range(len(column.idents)))
            made = self._all[key] = {ident: images[i] for ident, i in column.idents.items()}
        return made

    def __iter__(self) -> Iterator[Group]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def ordered(self, key: Group) -> _Lazy:
        return _Lazy(self.columns[key])


class _Lazy(Sequence[_Image]):
    """A point's run identities in `_ordered`'s order, each made when first read (a comparison
    of the newest change reads the last few of them)."""

    def __init__(self, column: _Column) -> None:
        self.column = column
        self.order = column.order()

    def __len__(self) -> int:
        return len(self.order)

    @overload
    def __getitem__(self, at: int) -> _Image: ...
    @overload
    def __getitem__(self, at: slice) -> list[_Image]: ...
    def __getitem__(self, at: int | slice) -> _Image | list[_Image]:
        if isinstance(at, slice):
            wanted = self.order[at]
            made = self.column.images(wanted)
            return [made[i] for i in wanted]
        index = self.order[at]
        return self.column.images((index,))[index]


class _SeriesPoints(Mapping[str, Mapping[Identity, set[Group]]]):
    """`series_points[series][identity]`: the points the identity ran in the series, identities
    in the order of their first runs; each set made when first read."""

    def __init__(
        self,
        columns: dict[Group, _Column],
        keys: dict[str, list[Group]],
        order: dict[str, dict[Identity, None]],
    ) -> None:
        self._columns, self._keys, self._order = columns, keys, order

    def __getitem__(self, series: str) -> _PointsOf:
        if series not in self._order:
            raise KeyError(series)
        return _PointsOf(self._columns, self._keys[series], self._order[series])

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


class _PointsOf(Mapping[Identity, set[Group]]):
    def __init__(
        self, columns: dict[Group, _Column], keys: list[Group], order: dict[Identity, None]
    ) -> None:
        self._columns, self._keys, self._order = columns, keys, order
        self._sets: dict[Identity, set[Group]] = {}

    def __getitem__(self, ident: Identity) -> set[Group]:
        found = self._sets.get(ident)
        if found is None:
            if ident not in self._order:
                raise KeyError(ident)
            found = {k for k in self._keys if ident in self._columns[k].idents}
            self._sets[ident] = found
        return found

    def __iter__(self) -> Iterator[Identity]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


def _more(values: list[float] | tuple[()], value: float) -> list[float]:
    if isinstance(values, list):
        values.append(value)
        return values
    return [value]


def same_image_diffs(values: Sequence[float]) -> list[float]:
    """Relative differences of consecutive runs of one image (the noise a band is learned from)."""
    return [abs(b - a) / abs(a) for a, b in zip(values, values[1:], strict=False) if a]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


class _Bands:
    """Noise bands per group: its own pairs, its series', the metric's everywhere (the widest).

    Pairs are consecutive runs of one image (whatever engine commit ran on it): the spread of the
    same image measured again, as the dashboards' repeated runs show it."""

    def __init__(self, groups: Mapping[Group, Mapping[Identity, _Image]], kinds: Kinds) -> None:
        self.own: dict[Group, list[float]] = {}
        self.series: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.metric: dict[str, list[float]] = defaultdict(list)
        self.unsettled = unsettled(groups, kinds)
        self.unstable = unstable_series(groups, kinds)
        self.collapsed = collapsed_runs(groups, kinds)
        self._cache: dict[tuple[str, str], float | None] = {}
        self._of: dict[Group, tuple[float, str]] = {}
        for key in groups:
            if kinds[key][0] not in (PERF, ACCEPTANCE):
                continue
            if isinstance(groups, _Groups):
                runs = _column_runs(key[0], groups.columns[key], self.unsettled)
            else:
                runs = _image_runs(key[0], groups[key], self.unsettled)
            diffs = [d for values in runs for d in values]
            self.own[key] = diffs
            self.series[(key[0], key[2])] += diffs
            self.metric[key[2]] += diffs
        self.pooled = {m: _band(d, m) for m, d in self.metric.items() if len(d) >= MIN_POOLED}

    def _series_band(self, key: Group) -> float | None:
        """The series' band, computed once per (series, metric): it is shared by every point."""
        if key[::2] not in self._cache:
            diffs = self.series.get(key[::2], [])
            self._cache[key[::2]] = _band(diffs, key[2]) if len(diffs) >= MIN_PAIRS else None
        return self._cache[key[::2]]

    def of(self, key: Group) -> tuple[float, str]:
        """The widest of the bands the history supports: the point's own pairs, those of its
        series (each with their tail), the typical spread of the metric everywhere. Computed
        once per point: every run change of the point is judged against it."""
        known = self._of.get(key)
        if known is None:
            known = self._of[key] = self._widest(key)
        return known

    def _widest(self, key: Group) -> tuple[float, str]:
        found = []
        own = self.own.get(key, [])
        if len(own) >= MIN_PAIRS:
            found.append((_band(own, key[2]), f"{len(own)} same-image pairs of this point"))
        series = self._series_band(key)
        if series is not None:
            n = len(self.series[key[::2]])
            found.append((series, f"{n} same-image pairs of this series"))
        if key[2] in self.pooled:
            n = len(self.metric[key[2]])
            found.append((self.pooled[key[2]], f"{n} same-image pairs of this metric everywhere"))
        if found:
            return max(found)
        default = TAIL_DEFAULT_BAND if _tail(key[2]) else DEFAULT_BAND
        return default, f"default (fewer than {MIN_PAIRS} same-image pairs)"


def _image_runs(
    series: str, identities: Mapping[Identity, _Image], unsettled_: set[tuple[str, str]]
) -> Iterator[list[float]]:
    """Per image, the same-image differences of its runs in time order (identities merged)."""
    by_image: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for img in identities.values():
        if not unsettled_ or not settles_nothing(unsettled_, series, img.ref):
            by_image[img.ref] += zip(img.seqs, img.values, strict=True)
    for runs in by_image.values():
        if len(runs) > 1:
            yield same_image_diffs([v for _, v in sorted(runs, key=itemgetter(0))])


def _column_runs(
    series: str, column: _Column, unsettled_: set[tuple[str, str]]
) -> Iterator[list[float]]:
    """`_image_runs` read from the columns: the rows are in (seq, run) order; the identities'
    runs merged by seq keep, at equal seq, the order of the identities' first runs."""
    refs = [ident[0] for ident in column.idents]
    skip = {r for r in set(refs) if unsettled_ and settles_nothing(unsettled_, series, r)}
    by_image: dict[str, list[int]] = defaultdict(list)
    owner, seqs, values = column.owner, column.seqs, column.values
    for j, (i, v) in enumerate(zip(owner, values, strict=True)):
        if v is not None and refs[i] not in skip:
            by_image[refs[i]].append(j)
    for rows in by_image.values():
        if len(rows) < 2:
            continue
        if any(
            seqs[a] == seqs[b] and owner[a] > owner[b] for a, b in zip(rows, rows[1:], strict=False)
        ):
            rows.sort(key=lambda j: (seqs[j], owner[j]))
        yield same_image_diffs([values[j] for j in rows])  # type: ignore[misc]


def unsettled(
    groups: Mapping[Group, Mapping[Identity, _Image]], kinds: Kinds
) -> set[tuple[str, str]]:
    """(series, image) whose runs differ in kind, not by noise: speculative decoding accepted
    nothing in some runs of the image and worked in others. Their pairs teach no noise band."""
    out = set()
    for key in groups:
        if kinds[key][0] != ACCEPTANCE:
            continue
        images = groups[key]
        by_image: dict[str, list[bool]] = defaultdict(list)
        for img in images.values():
            by_image[img.ref] += [_nothing_accepted(key[2], v) for v in img.values]
        out |= {(key[0], ref) for ref, dead in by_image.items() if any(dead) and not all(dead)}
    return out


def unstable_series(groups: Mapping[Group, Mapping[Identity, _Image]], kinds: Kinds) -> set[str]:
    """Series whose acceptance collapsed in some runs of one (image, commit) and not in others:
    the same code, different outcomes."""
    out = set()
    for key in groups:
        if kinds[key][0] != ACCEPTANCE:
            continue
        for img in groups[key].values():
            dead = [_nothing_accepted(key[2], v) for v in img.values]
            if any(dead) and not all(dead):
                out.add(key[0])
    return out


def collapsed_runs(
    groups: Mapping[Group, Mapping[Identity, _Image]], kinds: Kinds
) -> dict[tuple[str, Identity], str]:
    """(series, identity) whose acceptance collapsed in some run, with a one-line note."""
    out: dict[tuple[str, Identity], str] = {}
    for key in groups:
        if kinds[key][0] != ACCEPTANCE:
            continue
        for ident, img in groups[key].items():
            dead = sum(_nothing_accepted(key[2], v) for v in img.values)
            if dead:
                out[(key[0], ident)] = f"acceptance collapsed in {dead} of {len(img.values)} runs"
    return out


def settles_nothing(unsettled_: set[tuple[str, str]], series: str, image: str) -> bool:
    """Whether `image` was unsettled in `series` or the series it extends (`X MTP` of `X MTP3`)."""
    return any(image == ref and series.startswith(name) for name, ref in unsettled_)


def _unstable(f: PointChange, bands: _Bands) -> PointChange:
    """A regression or failure of a run whose acceptance collapsed, in a series whose acceptance
    is unstable (collapsed in some runs of one identity only): instability, not a cause."""
    if f.kind not in (REGRESSION, FAILED_KIND, BELOW) or f.new_value is None:
        return f
    for name in (n for n in bands.unstable if f.series.startswith(n)):
        why = bands.collapsed.get((name, (f.new_image, f.new_commit)))
        if why:
            note = f"{why}; the series' acceptance is unstable (it collapsed in some runs of one "
            return replace(f, kind=UNSTABLE, note=note + "image and commit, not in others)")
    return f


def _band(diffs: Sequence[float], metric: str) -> float:
    floor = TAIL_MIN_BAND if _tail(metric) else MIN_BAND
    spread = 1.4826 * statistics.median(diffs)
    # the highest of n pairs underestimates the tail of a heavy-tailed noise: widened by 1/sqrt(n)
    high = _quantile(diffs, TAIL_QUANTILE) * (1 + 1 / math.sqrt(len(diffs)))
    return max(floor, K_SIGMA * spread, high)


def _tail(metric: str) -> bool:
    """A latency whose tail decides it (first token, high percentiles): heavier noise."""
    return metric == "ttft" or bool(_PERCENTILE.search(metric))


def _judge(
    key: Group,
    kind: tuple[str, str, str],
    old: _Image | None,
    new: _Image,
    bands: _Bands,
    recent: Sequence[float],
    *,
    keep: bool,
) -> list[PointChange]:
    """The findings of one run change; within noise and without a baseline only when `keep`
    (nothing is made for them otherwise: most changes of a large history are within noise)."""
    series, point, metric = key
    base = _Base(key, kind, old, new)
    new_value = new.median
    old_value = old.median if old else None
    out: list[PointChange] = []
    if new_value is None:
        why = new.notes[-1] if new.notes else "no result"
        return [_finding(base, FAILED_KIND, old_value, None, None, "", f"every run failed: {why}")]
    if kind[0] == ACCEPTANCE:
        dead = sum(_nothing_accepted(metric, v) for v in new.values)
        if dead:
            # A collapse is judged on its own: no baseline, band or accuracy can excuse it.
            kind_found = FAILED_KIND if _nothing_accepted(metric, new_value) else REGRESSION
            note = f"acceptance collapsed (nothing accepted) in {dead} of {len(new.values)} runs"
            change = (new_value - old_value) / old_value if old_value else None
            return [_finding(base, kind_found, old_value, new_value, None, "", note, change=change)]
    if kind[0] == ACCURACY and new.thresholds and new_value < min(new.thresholds):
        note = f"{new_value:.4g} below the threshold {min(new.thresholds):g}"
        out.append(_finding(base, BELOW, old_value, new_value, None, "its own threshold", note))
    if old_value is None:
        if keep:
            out.append(_finding(base, NO_BASELINE, None, new_value, None, "", "no earlier image"))
        return out
    change = (new_value - old_value) / old_value if old_value else None
    if kind[0] == ACCURACY and old is not None:
        verdict, band, source = _eval_verdict(old, new, old_value, new_value)
        note = ""
    else:
        band, source = bands.of(key)
        verdict, note = level_verdict(change, new_value, recent, band, kind[1])
    if kind[0] == ACCEPTANCE and _collapsed(metric, old_value, new_value):
        verdict, note = REGRESSION, "acceptance collapsed"
    if verdict == WITHIN and not keep:
        return out
    out.append(_finding(base, verdict, old_value, new_value, band, source, note, change=change))
    return out


class _Base:
    """What every finding of one run change says of the point and the two runs, made into a
    mapping only when a finding is made."""

    __slots__ = ("key", "kind", "old", "new")

    def __init__(
        self, key: Group, kind: tuple[str, str, str], old: _Image | None, new: _Image
    ) -> None:
        self.key, self.kind, self.old, self.new = key, kind, old, new

    def fields(self) -> dict[str, object]:
        (series, point, metric), kind, old, new = self.key, self.kind, self.old, self.new
        return {
            "series": series,
            "point": point,
            "metric": metric,
            "metric_kind": kind[0],
            "old_image": old.ref if old else None,
            "new_image": new.ref,
            "old_commit": old.commit if old else None,
            "new_commit": new.commit,
            "unit": kind[2],
            "runs_old": len(old.values) if old else 0,
            "runs_new": len(new.values),
            "new_run": new.run,
        }


def _finding(
    base: dict[str, object] | _Base,
    kind: str,
    old_value: float | None,
    new_value: float | None,
    band: float | None,
    source: str,
    note: str,
    *,
    change: float | None = None,
) -> PointChange:
    return PointChange(
        **(base.fields() if isinstance(base, _Base) else base),  # type: ignore[arg-type]
        kind=kind,
        old_value=old_value,
        new_value=new_value,
        change=change,
        band=band,
        band_source=source,
        note=note,
    )


def level_verdict(
    change: float | None, new_value: float, recent: Sequence[float], band: float, better: str
) -> tuple[str, str]:
    """The verdict on `change` (against the previous image), unless the previous image was out of
    line with the images before it: a change within the band of the median of the last
    `LEVEL_IMAGES` images is noise of one run, not of the new image."""
    verdict = _band_verdict(change, band, better)
    if verdict == WITHIN or len(recent) < 2:
        return verdict, ""
    level = statistics.median(recent)
    if level and _band_verdict((new_value - level) / level, band, better) == WITHIN:
        note = f"within the band of {level:.4g}, the median of the last {len(recent)} images"
        return WITHIN, note
    return verdict, ""


def _band_verdict(change: float | None, band: float, better: str) -> str:
    if change is None or abs(change) <= band:
        return WITHIN
    improved = change > 0 if better == HIGHER else change < 0
    return IMPROVEMENT if improved else REGRESSION


def _eval_verdict(
    old: _Image, new: _Image, old_value: float, new_value: float
) -> tuple[str, float | None, str]:
    se_old = statistics.median(old.ses) if old.ses else None
    se_new = statistics.median(new.ses) if new.ses else None
    if se_old is None or se_new is None:
        se_old = se_new = _binomial_fallback(old_value, new_value)
        source = "binomial standard error, n=1319 assumed (none recorded)"
    else:
        source = "standard errors of both scores"
    # The median of n runs has a smaller error; one run's error is the conservative bound.
    band = Z_EVAL * math.hypot(se_old, se_new)
    if abs(new_value - old_value) <= band:
        return WITHIN, band, source
    return (IMPROVEMENT if new_value > old_value else REGRESSION), band, source


def _binomial_fallback(a: float, b: float) -> float:
    p = min(max((a + b) / 2, 0.0), 1.0)
    return math.sqrt(p * (1 - p) / 1319)


def _nothing_accepted(metric: str, value: float) -> bool:
    return value <= COLLAPSED_LENGTH if metric == "accept_length" else value < NOTHING_ACCEPTED


def _collapsed(metric: str, old_value: float, new_value: float) -> bool:
    if metric == "accept_length":
        return new_value <= COLLAPSED_LENGTH < old_value
    return new_value < COLLAPSE_RATIO * old_value


def _image_of(
    groups: Mapping[Group, Mapping[Identity, _Image]], key: Group, ident: Identity
) -> _Image:
    """One identity's `_Image` at one point (from the columns: that one alone is made)."""
    if isinstance(groups, _Groups):
        column = groups.columns[key]
        at = column.idents[ident]
        return column.images((at,))[at]
    return groups[key][ident]


def _missing(
    groups: Mapping[Group, Mapping[Identity, _Image]],
    kinds: Kinds,
    series_points: Mapping[str, Mapping[Identity, set[Group]]],
    *,
    every: bool,
    wanted: set[str],
) -> list[PointChange]:
    """A point the previous run identity of a series had and the next, which ran it, has not."""
    out: list[PointChange] = []
    for series, by_image in sorted(series_points.items()):
        if wanted and series not in wanted:
            continue
        # `_fill` reads the rows in (seq, run) order: the identities are in the order of their
        # first runs already
        order = list(by_image)
        pairs = list(zip(order, order[1:], strict=False))
        for old, new in pairs if every else pairs[-1:]:
            if not by_image[old] & by_image[new]:
                continue  # no point in common: another sweep shape, not a point dropped
            ran = {k[2] for k in by_image[new]}  # a metric the new identity measured elsewhere
            # its first run: the earliest in (seq, run) order (never the set's hash order)
            first_new = min(
                (_image_of(groups, k, new) for k in by_image[new]),
                key=lambda i: (i.first_seq, i.run),
            )
            for key in sorted(by_image[old] - by_image[new]):
                if kinds[key][0] == OTHER or key[2] not in ran:
                    continue
                values = _image_of(groups, key, old).values
                base: dict[str, object] = {
                    "series": series,
                    "point": key[1],
                    "metric": key[2],
                    "metric_kind": kinds[key][0],
                    "old_image": old[0],
                    "new_image": new[0],
                    "old_commit": old[1],
                    "new_commit": new[1],
                    "unit": kinds[key][2],
                    "runs_old": len(values),
                    "runs_new": 0,
                    "new_run": first_new.run,
                }
                old_value = statistics.median(values) if values else None
                note = "missing: the new run reported this series but not this point"
                out.append(_finding(base, MISSING, old_value, None, None, "", note))
    return out


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One series and metric over time: the runs (image, engine commit, first run time) in order,
    each point's median per run (None where it has none) and its noise band."""

    series: str
    metric: str
    metric_kind: str
    unit: str
    better: str
    runs: tuple[tuple[str, str | None, int], ...]
    lines: dict[str, tuple[float | None, ...]]
    bands: dict[str, float | None]  # relative; None for accuracy (judged by standard errors)


@collector.paused()  # findings and charts of 100,000 rows: no cycle
def charts(
    samples: Iterable[Sample | Measurement] | Runs, *, series: Iterable[str] = ()
) -> list[Chart]:
    """A chart per (series, metric) of what is stored, bands learned from every row."""
    runs = samples if isinstance(samples, Runs) else Runs(samples)
    groups, kinds, bands = runs.groups, runs.kinds, runs.bands
    wanted = set(series)
    by_chart: dict[tuple[str, str], list[Group]] = defaultdict(list)
    for key in groups:
        if kinds[key][0] != OTHER and (not wanted or key[0] in wanted):
            by_chart[(key[0], key[2])].append(key)
    out = []
    for (name, metric), keys in sorted(by_chart.items()):
        idents = {i: img.first_seq for k in keys for i, img in groups[k].items()}
        for k in keys:
            for i, img in groups[k].items():
                idents[i] = min(idents[i], img.first_seq)
        order = sorted(idents, key=lambda i: (idents[i], i[0], i[1] or ""))
        lines = {}
        for k in sorted(keys):
            have = groups[k]
            lines[k[1]] = tuple(have[i].median if i in have else None for i in order)
        kind, better, unit = kinds[keys[0]]
        out.append(
            Chart(
                series=name,
                metric=metric,
                metric_kind=kind,
                unit=unit,
                better=better,
                runs=tuple((i[0], i[1], idents[i]) for i in order),
                lines=lines,
                bands={k[1]: None if kind == ACCURACY else bands.of(k)[0] for k in keys},
            )
        )
    return out
