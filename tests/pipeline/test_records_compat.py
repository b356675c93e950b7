"""Records written before `core.jsoncodec` load with it and are written back unchanged.

`data/records-41abcc1.json` was written by relpipe's main at 41abcc1, whose records each had a
hand-written `to_json`: the stage outputs of the PASS-shaped outcome of conftest.py (completed with
every optional field: facts with a GPU, per-dtype agreement, an upstream check, a failed baseline
probe, release checks of every shape), a stage result, a plan, a history record, a Slurm job
record and the report.json rendered from them. Files on disk (stage caches, run records, report
JSON) keep loading, and a re-render of an old record stays byte-identical.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from relpipe.core import jsoncodec
from relpipe.pipeline import outputs as out
from relpipe.pipeline.comparison import HistoryOutput
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.plan import Plan
from relpipe.pipeline.report import ReportData, render_json
from relpipe.pipeline.runrecord import StageResult, pretty_json, stage_key
from relpipe.pipeline.slurm import SlurmJob
from relpipe.pipeline.verdict import Outcome, evaluate

OLD: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "records-41abcc1.json").read_text(encoding="utf-8")
)
KINDS: dict[str, type] = {
    "image": out.Resolved,
    "baseline": out.Resolved,
    "probe": out.ProbeOutput,
    "baseline_probe": out.ProbeOutput,
    "smoke": out.SmokeOutput,
    "precision": out.PrecisionOutput,
    "config": out.ConfigScope,
    "golden": out.ValidatorOutput,
    "release-checks": out.ReleaseChecks,
}


def _read(name: str) -> Any:
    return out.parse(KINDS[name], OLD["outputs"][name], f"{name} output")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_stage_output_written_before_loads_and_is_written_back_unchanged(name: str) -> None:
    assert jsoncodec.to_json(_read(name)) == OLD["outputs"][name]


def test_old_evals_and_a_file_row_without_touched_by_load() -> None:
    for old in OLD["outputs"]["evals"]:
        assert jsoncodec.to_json(out.parse(out.EvalOutput, old, "eval output")) == old
    precision = json.loads(json.dumps(OLD["outputs"]["precision"]))
    row = precision["files"][0]
    del row["touched_by"]  # reports before `touched_by` named every touching commit in `commits`
    report = out.parse(out.PrecisionOutput, precision, "precision output").report
    assert report is not None and report.files[0].touched_by == tuple(row["commits"])
    assert jsoncodec.to_json(report)["files"][0]["touched_by"] == row["commits"]


def test_an_old_stage_result_keeps_its_shape_and_a_stale_key_is_refused() -> None:
    old = OLD["stage_result"]
    with pytest.raises(PipelineError, match="stage key does not match its inputs"):
        StageResult.from_json(old, where="smoke-0000.json")  # relpipe's version is an input
    current = {**old, "key": stage_key(old["stage"], old["inputs"])}
    result = StageResult.from_json(current, where="smoke.json")
    assert json.loads(pretty_json(result.to_json())) == current
    assert result.output == OLD["outputs"]["smoke"]


def test_an_old_plan_history_and_slurm_job_load_and_are_written_back_unchanged() -> None:
    plan = Plan.from_json(OLD["plan"], "/tmp/ws")
    assert plan.workspace == "/tmp/ws" and plan.options.kv_dtypes == ("bf16",)
    written = json.loads(pretty_json(plan.to_json()))
    assert {**written, "relpipe": OLD["plan"]["relpipe"]} == OLD["plan"]
    history = jsoncodec.from_json(HistoryOutput, OLD["history"], where="history.json")
    assert jsoncodec.to_json(history) == OLD["history"]
    job = jsoncodec.from_json(SlurmJob, OLD["slurm_job"], where="slurm.json")
    assert job.plan == Path("/jobs/plan") and jsoncodec.to_json(job) == OLD["slurm_job"]


def test_an_old_report_json_is_rendered_again_byte_for_byte() -> None:
    old = json.loads(OLD["report_json"])
    history = jsoncodec.from_json(HistoryOutput, OLD["history"], where="history.json")
    outcome = Outcome(
        image=_read("image"),
        baseline=replace(_read("baseline"), facts=_read("baseline_probe").facts),
        probe=_read("probe"),
        smoke=_read("smoke"),
        evals=tuple(out.parse(out.EvalOutput, e, "eval output") for e in OLD["outputs"]["evals"]),
        precision=_read("precision"),
        config=_read("config"),
        golden=_read("golden"),
        history=history,
    )
    data = ReportData(
        run_id=old["run"],
        title=old["title"],
        inputs=old["inputs"],
        outcome=outcome,
        verdict=evaluate(outcome),
    )
    assert render_json(data).decode() == OLD["report_json"]
