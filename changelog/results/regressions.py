"""Per-point regressions against the history: every image change of every (series, point, metric).

An image's value at a point is the median of its measurements there. Two images are compared by
kind of metric:

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
* an image whose only results at a point failed, or that ran the series (at least one point the
  previous image ran too) and the metric at other points but not at this one, is `failed`.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from relpipe.changelog.results.records import (
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
FINDING_KINDS = (REGRESSION, IMPROVEMENT, FAILED_KIND, BELOW)


@dataclass(frozen=True, kw_only=True)
class PointChange:
    """One metric at one point between two images: a regression, an improvement, a failure or a
    score below its threshold (`kind`), with the noise band it was judged against."""

    series: str
    point: str
    metric: str
    kind: str
    metric_kind: str  # perf | accuracy | acceptance (records.KINDS)
    old_image: str | None
    new_image: str
    old_value: float | None
    new_value: float | None
    change: float | None  # relative (new - old) / old
    band: float | None  # relative for perf/acceptance; absolute score for accuracy (z x se)
    band_source: str
    note: str
    runs_old: int
    runs_new: int


@dataclass(kw_only=True, slots=True)
class _Image:
    ref: str
    first_seq: int
    values: list[float] = field(default_factory=list)
    ses: list[float] = field(default_factory=list)
    thresholds: list[float] = field(default_factory=list)
    failed: int = 0
    notes: list[str] = field(default_factory=list)


Group = tuple[str, str, str]


def compare(
    samples: Iterable[Sample | Measurement], *, every: bool = False, all_points: bool = False
) -> list[PointChange]:
    """Findings for the newest image change of every point (`every`: each image change in order).

    Only regression/improvement/failed/below-threshold unless `all_points` (then also the points
    within noise and those without a previous image), as the release notes' table needs."""
    groups, kinds, series_points = _group(samples)
    bands = _Bands(groups, kinds)
    out: list[PointChange] = []
    for key in sorted(groups):
        if kinds[key][0] == OTHER:
            continue
        images = sorted(groups[key].values(), key=lambda i: (i.first_seq, i.ref))
        levels = [statistics.median(i.values) if i.values else None for i in images]
        start = 1 if every else max(1, len(images) - 1)
        if len(images) < 2 and all_points and images:
            out += _judge(key, kinds[key], None, images[-1], bands, [])
        for at in range(start, len(images)):
            recent = [v for v in levels[max(0, at - LEVEL_IMAGES) : at] if v is not None]
            out += _judge(key, kinds[key], images[at - 1], images[at], bands, recent)
    out += _missing(groups, kinds, series_points, every=every)
    return [f for f in out if all_points or f.kind in FINDING_KINDS]


def for_image(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> list[PointChange] | None:
    """Every point of `series` for the image named by any of `images` (its digest ref, its tag
    ref) against the image before it; None when the history holds nothing of that image."""
    upto = _up_to(rows, series=series, images=images)
    return None if upto is None else compare(upto, all_points=True)


def trend(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """Per (point, metric): each image's median value, oldest first, up to the named image."""
    upto = _up_to(rows, series=series, images=images) or []
    groups, kinds, _ = _group(upto)
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for key in sorted(groups):
        if kinds[key][0] == OTHER:
            continue
        ordered = sorted(groups[key].values(), key=lambda i: (i.first_seq, i.ref))
        out[(key[1], key[2])] = [(i.ref, statistics.median(i.values)) for i in ordered if i.values]
    return out


def _up_to(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> list[Measurement] | None:
    """The series' measurements as of the named image's first run: images first measured after
    it are left out (the question is what changed when it came); its refs merged into one."""
    mine = [m if isinstance(m, Measurement) else measurement(m) for m in rows]
    mine = [m for m in mine if m.series == series]
    ours = [m for m in mine if m.image in images]
    if not ours:
        return None
    ref = ours[0].image
    first = min(m.seq for m in ours)
    later = {m.image for m in mine if m.image != ref and m.seq > first}
    earlier = {m.image for m in mine if m.image != ref and m.seq <= first}
    return [
        m._replace(image=ref) if m.image in images else m
        for m in mine
        if m.image in images or m.image in earlier or m.image not in later
    ]


def _group(
    samples: Iterable[Sample | Measurement],
) -> tuple[
    dict[Group, dict[str, _Image]], dict[Group, tuple[str, str]], dict[str, dict[str, set[Group]]]
]:
    groups: dict[Group, dict[str, _Image]] = defaultdict(dict)
    kinds: dict[Group, tuple[str, str]] = {}
    series_points: dict[str, dict[str, set[Group]]] = defaultdict(lambda: defaultdict(set))
    rows = [m if isinstance(m, Measurement) else measurement(m) for m in samples]
    # Python's order, not the database's: PostgreSQL may collate `run` differently from SQLite.
    rows.sort(key=itemgetter(7, 6))  # (seq, run)
    # Fields unpacked, not read by name: 100,000 rows are read per comparison.
    for series, point, metric, kind, better, ref, _, seq, status, value, se, limit, note in rows:
        if status != OK and status != FAILED:
            continue  # ambiguous samples are never measurements
        key = (series, point, metric)
        images = groups[key]
        image = images.get(ref)
        if image is None:
            if key not in kinds:
                kinds[key] = (kind, better)
            image = images[ref] = _Image(ref=ref, first_seq=seq)
            series_points[series][ref].add(key)
        if status == FAILED or value is None:
            image.failed += 1
            image.notes.append(note)
            continue
        image.values.append(value)
        if se is not None:
            image.ses.append(se)
        if limit is not None:
            image.thresholds.append(limit)
    return groups, kinds, series_points


def same_image_diffs(values: Sequence[float]) -> list[float]:
    """Relative differences of consecutive runs of one image (the noise a band is learned from)."""
    return [abs(b - a) / abs(a) for a, b in zip(values, values[1:], strict=False) if a]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


class _Bands:
    """Noise bands per group: its own pairs, its series', the metric's everywhere (the widest)."""

    def __init__(
        self, groups: dict[Group, dict[str, _Image]], kinds: dict[Group, tuple[str, str]]
    ) -> None:
        self.own: dict[Group, list[float]] = {}
        self.series: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.metric: dict[str, list[float]] = defaultdict(list)
        self.unsettled = unsettled(groups, kinds)
        self._cache: dict[tuple[str, str], float | None] = {}
        for key, images in groups.items():
            if kinds[key][0] not in (PERF, ACCEPTANCE):
                continue
            diffs = [
                d
                for img in images.values()
                if not settles_nothing(self.unsettled, key[0], img.ref)
                for d in same_image_diffs(img.values)
            ]
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
        series (each with their tail), the typical spread of the metric everywhere."""
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


def unsettled(
    groups: dict[Group, dict[str, _Image]], kinds: dict[Group, tuple[str, str]]
) -> set[tuple[str, str]]:
    """(series, image) whose runs differ in kind, not by noise: speculative decoding accepted
    nothing in some runs and worked in others. Their same-image pairs teach no noise band."""
    out = set()
    for key, images in groups.items():
        if kinds[key][0] != ACCEPTANCE:
            continue
        for img in images.values():
            dead = [_nothing_accepted(key[2], v) for v in img.values]
            if any(dead) and not all(dead):
                out.add((key[0], img.ref))
    return out


def settles_nothing(unsettled: set[tuple[str, str]], series: str, image: str) -> bool:
    """Whether `image` was unsettled in `series` or the series it extends (`X MTP` of `X MTP3`)."""
    return any(image == ref and series.startswith(name) for name, ref in unsettled)


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
    kind: tuple[str, str],
    old: _Image | None,
    new: _Image,
    bands: _Bands,
    recent: Sequence[float],
) -> list[PointChange]:
    series, point, metric = key
    base: dict[str, object] = {
        "series": series,
        "point": point,
        "metric": metric,
        "metric_kind": kind[0],
        "old_image": old.ref if old else None,
        "new_image": new.ref,
        "runs_old": len(old.values) if old else 0,
        "runs_new": len(new.values),
    }
    new_value = statistics.median(new.values) if new.values else None
    old_value = statistics.median(old.values) if old and old.values else None
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
    out.append(_finding(base, verdict, old_value, new_value, band, source, note, change=change))
    return out


def _finding(
    base: dict[str, object],
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
        **base,  # type: ignore[arg-type]
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


def _missing(
    groups: dict[Group, dict[str, _Image]],
    kinds: dict[Group, tuple[str, str]],
    series_points: dict[str, dict[str, set[Group]]],
    *,
    every: bool,
) -> list[PointChange]:
    """A point the previous image of a series had and the next image, which ran it, has not."""
    out: list[PointChange] = []
    for series, by_image in sorted(series_points.items()):
        order = sorted(
            by_image, key=lambda ref: min(groups[k][ref].first_seq for k in by_image[ref])
        )
        pairs = list(zip(order, order[1:], strict=False))
        for old, new in pairs if every else pairs[-1:]:
            if not by_image[old] & by_image[new]:
                continue  # no point in common: another sweep shape, not a point dropped
            ran = {k[2] for k in by_image[new]}  # a metric the new image measured elsewhere
            for key in sorted(by_image[old] - by_image[new]):
                if kinds[key][0] == OTHER or key[2] not in ran:
                    continue
                values = groups[key][old].values
                base: dict[str, object] = {
                    "series": series,
                    "point": key[1],
                    "metric": key[2],
                    "metric_kind": kinds[key][0],
                    "old_image": old,
                    "new_image": new,
                    "runs_old": len(values),
                    "runs_new": 0,
                }
                old_value = statistics.median(values) if values else None
                note = "missing: the new image ran this series but not this point"
                out.append(_finding(base, FAILED_KIND, old_value, None, None, "", note))
    return out
