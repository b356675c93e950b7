"""Per-point regressions against the history: every image change of every (series, point, metric).

An image's value at a point is the median of its measurements there. Two images are compared by
kind of metric:

* perf (throughput, latency) and acceptance: the change is judged against a noise band learned from
  repeated runs of the *same* image at that point: `K_SIGMA` times the robust spread (1.4826 x
  median absolute relative difference of consecutive same-image runs, which estimates the spread of
  a difference of two runs), widened to the 99th percentile of those differences where the noise is
  heavier-tailed than a normal distribution (ATOM's dashboards are). Fallback when the point has
  fewer than `MIN_PAIRS` same-image pairs:
  the pairs of the same metric over the whole series, then of the metric everywhere, then
  `DEFAULT_BAND` (25 %: wider than ATOM's fixed 5 %/10 % rule, which fires on noise). The band
  never goes below `MIN_BAND`.
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
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from operator import attrgetter

from relpipe.changelog.history.records import (
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
class Finding:
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

    def to_json(self) -> dict[str, object]:
        return asdict(self)


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
) -> list[Finding]:
    """Findings for the newest image change of every point (`every`: each image change in order).

    Only regression/improvement/failed/below-threshold unless `all_points` (then also the points
    within noise and those without a previous image), as the release notes' table needs."""
    groups, kinds, series_points = _group(samples)
    bands = _Bands(groups, kinds)
    out: list[Finding] = []
    for key in sorted(groups):
        if kinds[key][0] == OTHER:
            continue
        images = sorted(groups[key].values(), key=lambda i: (i.first_seq, i.ref))
        pairs = list(zip(images, images[1:], strict=False))
        if not every:
            pairs = pairs[-1:]
        if not pairs and all_points and images:
            out += _judge(key, kinds[key], None, images[-1], bands)
        for old, new in pairs:
            out += _judge(key, kinds[key], old, new, bands)
    out += _missing(groups, kinds, series_points, every=every)
    return [f for f in out if all_points or f.kind in FINDING_KINDS]


def for_image(
    rows: Iterable[Sample | Measurement], *, series: str, images: Sequence[str]
) -> list[Finding] | None:
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
    rows.sort(key=attrgetter("seq", "run"))
    for m in rows:
        if m.status not in (OK, FAILED):
            continue  # ambiguous samples are never measurements
        key = (m.series, m.point, m.metric)
        if key not in kinds:
            kinds[key] = (m.kind, m.better)
        images = groups[key]
        image = images.get(m.image)
        if image is None:
            image = images[m.image] = _Image(ref=m.image, first_seq=m.seq)
            series_points[m.series][m.image].add(key)
        if m.status == FAILED or m.value is None:
            image.failed += 1
            image.notes.append(m.note)
            continue
        image.values.append(m.value)
        if m.se is not None:
            image.ses.append(m.se)
        if m.threshold is not None:
            image.thresholds.append(m.threshold)
    return groups, kinds, series_points


def same_image_diffs(values: Sequence[float]) -> list[float]:
    """Relative differences of consecutive runs of one image (the noise a band is learned from)."""
    return [abs(b - a) / abs(a) for a, b in zip(values, values[1:], strict=False) if a]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


class _Bands:
    """Noise bands per group, with the series-wide and metric-wide fallbacks precomputed."""

    def __init__(
        self, groups: dict[Group, dict[str, _Image]], kinds: dict[Group, tuple[str, str]]
    ) -> None:
        self.own: dict[Group, list[float]] = {}
        self.series: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.metric: dict[str, list[float]] = defaultdict(list)
        for key, images in groups.items():
            if kinds[key][0] not in (PERF, ACCEPTANCE):
                continue
            diffs = [d for img in images.values() for d in same_image_diffs(img.values)]
            self.own[key] = diffs
            self.series[(key[0], key[2])] += diffs
            self.metric[key[2]] += diffs

    def of(self, key: Group) -> tuple[float, str]:
        for diffs, where in (
            (self.own.get(key, []), "this point"),
            (self.series.get((key[0], key[2]), []), "this series"),
            (self.metric.get(key[2], []), "this metric"),
        ):
            if len(diffs) >= MIN_PAIRS:
                spread = 1.4826 * statistics.median(diffs)
                band = max(MIN_BAND, K_SIGMA * spread, _quantile(diffs, TAIL_QUANTILE))
                return band, f"{len(diffs)} same-image pairs of {where}"
        return DEFAULT_BAND, f"default (fewer than {MIN_PAIRS} same-image pairs)"


def _judge(
    key: Group, kind: tuple[str, str], old: _Image | None, new: _Image, bands: _Bands
) -> list[Finding]:
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
    out: list[Finding] = []
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
    else:
        band, source = bands.of(key)
        verdict = _band_verdict(change, band, kind[1])
    note = ""
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
) -> Finding:
    return Finding(
        **base,  # type: ignore[arg-type]
        kind=kind,
        old_value=old_value,
        new_value=new_value,
        change=change,
        band=band,
        band_source=source,
        note=note,
    )


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
) -> list[Finding]:
    """A point the previous image of a series had and the next image, which ran it, has not."""
    out: list[Finding] = []
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
