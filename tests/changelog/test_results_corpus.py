"""The results history on real result files: ATOM's dashboards and InferenceX's artifacts, with
InferenceX's own `utils/process_result.py` as the oracle of the agg rows."""

from __future__ import annotations

import bisect
import json
import os
import shutil
import statistics
from collections import Counter
from pathlib import Path

import corpus
import pytest

from relpipe.changelog.results import inferencex, ingest, regressions
from relpipe.changelog.results.records import AMBIGUOUS, FAILED, OK, PERF, measurement

LEVEL = regressions.LEVEL_IMAGES


@pytest.fixture(scope="module")
def results() -> Path:
    return corpus.results_dir()


def test_dashboard_duplicates_are_ambiguous_never_measurements(results: Path) -> None:
    got = ingest.ingest([results / "atom-dashboards" / "benchmark-dashboard.js"])
    statuses = Counter((s.status, s.note) for s in got.samples)
    assert statuses == {(OK, ""): 3812, (AMBIGUOUS, "name appears 2 times in one run"): 288}
    assert got.rejected == []


def test_may_dashboard_latest_tags_zeros_and_digests(results: Path) -> None:
    samples = ingest.ingest(
        [results / "atom-dashboards" / "benchmark-dashboard-2026-05-23.js"]
    ).samples
    bare = [s for s in samples if s.image.ref == "rocm/atom-dev:latest"]
    assert len(bare) == 1998 and {s.status for s in bare} == {AMBIGUOUS}
    pinned = [s for s in samples if s.image.digest]
    assert len(pinned) == 1754 and all(s.image.tag is None for s in pinned)  # `latest@sha256:`
    failed = [s for s in samples if s.status == FAILED]
    assert len(failed) == 15 and {s.value for s in failed} == {0.0}
    # a zero acceptance is a collapse (the run reports 1.0 tokens/forward), kept as a measurement
    zero_accept = [s for s in samples if s.metric == "acceptance_rate" and s.value == 0]
    assert zero_accept and {s.status for s in zero_accept} == {OK}


def _replay_flag_rate(samples: list) -> tuple[int, int]:
    """Entry by entry: each run of an image already measured at a point is judged against the
    median of that image's earlier runs, with the band and the recent images learned only from
    the entries before it (what `regressions` knew then). Returns (pairs, flagged)."""
    rows = sorted(map(measurement, samples), key=lambda m: (m.seq, m.run))
    seqs = [m.seq for m in rows]
    pairs = flagged = 0
    for seq in sorted(set(seqs)):
        start, end = bisect.bisect_left(seqs, seq), bisect.bisect_right(seqs, seq)
        groups, kinds, _ = regressions._group(rows[:start])
        bands = regressions._Bands(groups, kinds)
        for m in rows[start:end]:
            key = (m.series, m.point, m.metric)
            runs = [i for i in groups.get(key, {}).values() if i.ref == m.image and i.values]
            if m.status != OK or kinds.get(key, ("",))[0] != PERF or not runs:
                continue
            if regressions.settles_nothing(bands.unsettled, m.series, m.image):
                continue  # runs of this image differ in kind (acceptance collapsed in some)
            ref = statistics.median(v for i in runs for v in i.values)
            first = min(i.first_seq for i in runs)
            earlier = sorted(
                (i for i in groups[key].values() if i.first_seq < first and i.values),
                key=lambda i: (i.first_seq, i.ref),
            )
            recent = [statistics.median(i.values) for i in earlier[1 - LEVEL :]] + [ref]
            band, _ = bands.of(key)
            verdict, _ = regressions.level_verdict(
                (m.value - ref) / ref, m.value, recent, band, kinds[key][1]
            )
            pairs += 1
            flagged += verdict == regressions.REGRESSION
    return pairs, flagged


@pytest.mark.parametrize(
    ("name", "at_least"),
    [
        ("benchmark-dashboard.js", 500),
        ("benchmark-dashboard-2026-05-23.js", 1400),
        ("atomesh-mocker-dashboard.js", 400),
    ],
)
def test_replayed_same_image_pairs_are_rarely_regressions(
    results: Path, name: str, at_least: int
) -> None:
    samples = ingest.ingest([results / "atom-dashboards" / name]).samples
    pairs, flagged = _replay_flag_rate(samples)
    assert pairs >= at_least
    assert flagged <= 0.01 * pairs, f"{flagged} of {pairs} same-image pairs flagged"


GOOD, BAD = "6619cc7d33e3bb1f5a8f2f9966b2c4cb3a20e494", "0bb75144e859529514ce2b0d7243944fca44ec95"
MAY_NIGHTLY = "rocm/atom-dev:nightly_202605181640"


def test_may_collapse_is_found_at_its_onset_between_two_runs_of_one_image(results: Path) -> None:
    samples = ingest.ingest(
        [results / "atom-dashboards" / "benchmark-dashboard-2026-05-23.js"]
    ).samples
    found = regressions.compare(samples, every=True)
    # Qwen3.5-397B-FP8 MTP: acceptance 0.847 on nightly_202605181640 at ATOM 6619cc7d, nothing
    # accepted on the same image at 0bb75144 and ever after (GSM8K stays at 0.82-0.85)
    onset = [
        f
        for f in found
        if f.series == "ATOM::Qwen3.5-397B-A17B-FP8 MTP" and f.metric == "acceptance_rate"
    ]
    assert [(f.kind, f.old_image, f.old_commit, f.new_image, f.new_commit) for f in onset][0] == (
        "failed",
        MAY_NIGHTLY,
        GOOD,
        MAY_NIGHTLY,
        BAD,
    )
    assert (onset[0].old_value, onset[0].new_value) == (0.847, 0.0)
    # one finding at the onset, one for the newest run (still collapsed, named with the onset)
    assert len(onset) == 2 and onset[1].good_bad == ((MAY_NIGHTLY, GOOD), (MAY_NIGHTLY, BAD))
    assert "collapsed since rocm/atom-dev:nightly_202605181640@0bb75144e859" in onset[1].note
    # the MXFP4 twin collapsed between the same two commits (its first bad run on a digest ref)
    mxfp4 = next(
        f
        for f in found
        if f.series == "ATOM::Qwen3.5-397B-A17B-MXFP4 MTP" and f.metric == "acceptance_rate"
    )
    assert (mxfp4.old_commit, mxfp4.new_commit, mxfp4.old_value) == (GOOD, BAD, 0.3298)
    below = {(f.series, f.new_image) for f in found if f.kind == "below-threshold"}
    assert (
        "ATOM-vLLM::Qwen3.5-397B-A17B-FP8 TP8",
        "rocm/atom-dev:vllm-v0.19.0-nightly_20260520",
    ) in below


def test_august_dspark_instability_is_unstable_acceptance_not_a_regression(results: Path) -> None:
    samples = ingest.ingest([results / "atom-dashboards" / "benchmark-dashboard.js"]).samples
    for every in (True, False):
        found = regressions.compare(samples, every=every)
        dspark = [f for f in found if f.series == "ATOM::DeepSeek-V4-Pro DSpark"]
        assert dspark and {f.kind for f in dspark} == {regressions.UNSTABLE}
    notes = {(f.metric, f.new_commit[:8], f.note.split(";")[0]) for f in dspark}
    assert notes == {
        ("accept_length", "2b61f987", "acceptance collapsed in 1 of 1 runs"),
        ("acceptance_rate", "2b61f987", "acceptance collapsed in 1 of 1 runs"),
        ("accuracy", "2b61f987", "acceptance collapsed in 1 of 1 runs"),
    }
    # the instability itself: nightly_202608071513 at 514ed7c8 collapsed in 1 of its 3 runs
    everything = regressions.compare(samples, every=True)
    assert any(
        f.new_commit and f.new_commit.startswith("514ed7c8") and "1 of 3 runs" in f.note
        for f in everything
        if f.series == "ATOM::DeepSeek-V4-Pro DSpark"
    )


def test_failed_inferencex_point_is_recorded_failed(results: Path) -> None:
    got = ingest.ingest([results / "inferencex" / "local-results" / "minimax-eagle3-conc64"])
    assert [(s.status, s.point) for s in got.samples] == [(FAILED, "c=64"), (AMBIGUOUS, "c=64")]
    assert got.rejected == []


RAW_NAMES = [
    "kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355-gbt350-odcdh5-wbb3",
    "kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355-gbt350-odcdh5-wbb3",
    "kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc64_MI355-gbt350-odcdh5-wbb3",
]


@pytest.mark.parametrize("name", RAW_NAMES)
def test_agg_row_matches_inferencex_process_result(
    results: Path, tmp_path: Path, name: str
) -> None:
    raw = json.loads((results / "inferencex" / f"{name}.json").read_text())
    agg = json.loads((results / "inferencex" / f"agg_{name}.json").read_text())
    shutil.copy(results / "inferencex" / f"{name}.json", tmp_path / f"{name}.json")
    env = {
        "RUNNER_TYPE": agg["hw"],
        "FRAMEWORK": agg["framework"],
        "PRECISION": agg["precision"],
        "SPEC_DECODING": agg["spec_decoding"],
        "RESULT_FILENAME": name,
        "ISL": str(agg["isl"]),
        "OSL": str(agg["osl"]),
        "DISAGG": str(agg["disagg"]).lower(),
        "MODEL_PREFIX": agg["infmax_model_prefix"],
        "IMAGE": agg["image"],
        "TP": str(agg["tp"]),
        "EP_SIZE": str(agg["ep"]),
        "DP_ATTENTION": agg["dp_attention"],
        "GPU_METRICS_CSV": str(tmp_path / "none.csv"),
    }  # fmt: skip - the environment InferenceX's workflow gives process_result.py
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        done = corpus.run_oracle("process_result.py", cwd=tmp_path)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    oracle = json.loads((tmp_path / f"agg_{name}.json").read_text())
    assert done.returncode == 0, done.stderr[-500:]
    mine = inferencex.compute_agg(raw, agg)
    for key, value in mine.items():
        assert (
            oracle[key] == pytest.approx(value, rel=1e-12)
            if isinstance(value, float)
            else oracle[key] == value
        ), key
    assert ingest.ingest([results / "inferencex" / f"{name}.json"]).notes == []  # agrees with agg_
