"""The columns `regressions.Runs` groups rows into (one `_Column` per point, an object per run
identity only when one is read) give the same findings, missing runs and charts as the
straightforward shape (every identity an object at once, in plain dicts: `Runs(plain=True)`), on
random stores with what makes the rules differ: ties of run time, failed runs, collapsed
acceptance, evals with standard errors and thresholds, unrecorded commits, series that extend
others (`X MTP` of `X`)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from relpipe.changelog.results import regressions
from relpipe.changelog.results.records import FAILED, OK, Measurement

METRICS = (
    ("throughput", "perf", "higher", "tok/s"),
    ("ttft", "perf", "lower", "ms"),
    ("p99_itl", "perf", "lower", "ms"),
    ("accept_rate", "acceptance", "higher", "fraction"),
    ("accept_length", "acceptance", "higher", "tokens"),
    ("gsm8k", "accuracy", "higher", "score"),
    ("count", "other", "higher", ""),
)
SEEDS = range(120)


def _value(rng: random.Random, metric: str, kind: str) -> float:
    if metric == "accept_rate":
        return rng.choice([0.0, 0.005, 0.6, 0.7, 0.65])
    if metric == "accept_length":
        return rng.choice([1.0, 2.5, 3.0, 2.8])
    if kind == "accuracy":
        return rng.uniform(0.7, 0.95)
    return rng.choice([1000.0, 1010.0, 990.0, 500.0, 2000.0, 0.0, rng.uniform(800, 1200)])


def store(seed: int) -> list[Measurement]:
    rng = random.Random(seed)
    images = [f"r:nightly_{i}" for i in range(rng.randint(1, 5))]
    # every other store dense: one series, point and two metrics, many runs of each image
    metrics, series, points = (METRICS[::3], 0, 1) if seed % 2 else (METRICS, 2, 4)
    rows = []
    for _ in range(rng.randint(1, 300)):
        metric, kind, better, unit = rng.choice(metrics)
        status = FAILED if rng.random() < 0.05 else OK
        value = None if status == FAILED and rng.random() < 0.7 else _value(rng, metric, kind)
        rows.append(
            Measurement(
                f"s{rng.randint(0, series)}{rng.choice(['', ' MTP'])}",
                f"c={rng.randint(1, points)}",
                metric,
                kind,
                better,
                unit,
                rng.choice(images),
                rng.choice([None, "a" * 40, "b" * 40, "c" * 40]),
                f"run-{rng.randint(0, 40)}",
                rng.randint(0, 30),  # few distinct times: runs of one time in many identities
                status,
                value,
                rng.choice([None, 0.01]) if kind == "accuracy" else None,
                rng.choice([None, 0.8]) if kind == "accuracy" else None,
                rng.choice(["", "no completed requests"]),
            )
        )  # fmt: skip - one random row
    return rows


def _plain(values: list[object]) -> list[object]:
    return [dataclasses.asdict(v) for v in values]  # type: ignore[call-overload]


@pytest.mark.parametrize("seed", SEEDS)
def test_columns_agree_with_plain_shape(seed: int) -> None:
    rows = store(seed)
    fast, plain = regressions.Runs(rows), regressions.Runs(rows, plain=True)
    assert isinstance(fast.groups, regressions._Groups)
    assert isinstance(plain.groups, dict)
    assert fast.bands.own == plain.bands.own  # the same pairs, in the same order
    for every in (False, True):
        for all_points in (False, True):
            a = regressions.compare(fast, every=every, all_points=all_points)
            b = regressions.compare(plain, every=every, all_points=all_points)
            assert _plain(a) == _plain(b)
            assert _plain(regressions.missing_runs(a, fast)) == _plain(
                regressions.missing_runs(b, plain)
            )
    assert _plain(regressions.charts(fast)) == _plain(regressions.charts(plain))
    series = rows[0].series
    one = regressions.compare(regressions.Runs(rows), series=[series])
    assert _plain(one) == _plain(regressions.compare(plain, series=[series]))


def test_random_stores_reach_every_rule() -> None:
    """The random stores above exercise what they claim: every kind of finding, onsets."""
    kinds, onsets = set(), 0
    for seed in SEEDS:
        found = regressions.compare(regressions.Runs(store(seed)), every=True, all_points=True)
        kinds |= {f.kind for f in found}
        onsets += sum(f.onset_new is not None for f in found)
    assert set(regressions.FINDING_KINDS) | {regressions.WITHIN, regressions.NO_BASELINE} <= kinds
    assert onsets > 0
