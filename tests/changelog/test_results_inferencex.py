"""InferenceX's sweeps and eval rows pair as `utils/compare_results.py` pairs them (its own
`build_config_params`, run as the oracle), with the noise judgement relpipe adds."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import corpus
import pytest

from relpipe.changelog.results import inferencex, ingest, regressions

ORACLE = Path(__file__).resolve().parents[1] / "oracles" / "compare_pairs.py"


@pytest.fixture(scope="module")
def artifacts() -> Path:
    return corpus.results_dir() / "inferencex"


def _rows(artifacts: Path) -> list[dict]:
    sweeps = sorted(artifacts.glob("tp4_sweep_*/bmk_*/*.json")) + sorted(
        artifacts.glob("tp8_sweep_*/*.json")
    )
    rows = [json.loads(p.read_text()) for p in sweeps + sorted(artifacts.glob("agg_*.json"))]
    evals = artifacts / "InferenceX-app" / "packages" / "db" / "data" / "supplemental-evals.json"
    return rows + json.loads(evals.read_text())


def _partition(keys: list[str]) -> list[list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for index, key in enumerate(keys):
        groups[key].append(index)
    return sorted(groups.values())


def test_points_pair_exactly_as_compare_results_pairs_them(artifacts: Path) -> None:
    rows = _rows(artifacts)
    done = corpus.run_oracle(ORACLE, input=json.dumps(rows))
    assert done.returncode == 0, done.stderr[-500:]
    oracle = json.loads(done.stdout)
    theirs = _partition([json.dumps(o["key"], sort_keys=True) for o in oracle])
    ours = []
    for index, row in enumerate(rows):
        sample = next(inferencex.samples(row, source="t", run=str(index), seq=0))
        ours.append(f"{sample.series}|{sample.point}")
    assert _partition(ours) == theirs
    # compare_results.py leaves both AgentX sweeps out; TP4 and TP8 never share a point anyway
    agentic = [o for o in oracle if o["left_out"]]
    assert len(agentic) == 10
    assert not {o["key"]["prefill_tp"] for o in agentic[:5]} & {
        o["key"]["prefill_tp"] for o in agentic[5:10]
    }
    assert len(theirs) == 10 + 3 + 49


def test_repeated_eval_rows_are_judged_with_their_standard_errors(artifacts: Path) -> None:
    got = ingest.ingest([artifacts / "InferenceX-app"])
    found = regressions.compare(got.samples, all_points=True)
    kinds = sorted(f.kind for f in found if f.kind != regressions.NO_BASELINE)
    assert kinds == ["failed"] + ["within-noise"] * 17
    pairs = [f for f in found if f.kind == regressions.WITHIN]
    # every second measurement is newer and scored higher; none beyond 2.58 standard errors
    assert all(f.new_value > f.old_value and f.new_value - f.old_value < f.band for f in pairs)
    failed = next(f for f in found if f.kind == "failed")
    assert failed.series == "gpt-oss-120b-fp4-b200-trt-trt" and "score 0.0" in failed.note


def test_agentx_sweeps_have_no_baseline_in_each_other(artifacts: Path) -> None:
    got = ingest.ingest([artifacts / "tp4_sweep_29003473063", artifacts / "tp8_sweep_29337493492"])
    assert [r.source.rsplit("/", 1)[-1] for r in got.rejected] == ["changelog_metadata.json"]
    found = regressions.compare(got.samples, all_points=True)
    assert {f.kind for f in found} == {regressions.NO_BASELINE}
    assert len({(f.series, f.point) for f in found}) == 10
