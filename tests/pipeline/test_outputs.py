"""Typed stage outputs at the run-record boundary: exact round trips, keyword-only records, and
recorded JSON of another shape or schema refused with one line, never misread."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import assert_keyword_only

from relpipe.changelog.configs.semdiff import (
    ConcurrencyChange,
    EnvChange,
    FieldChange,
    ImageChange,
    VersionChange,
)
from relpipe.changelog.entry import Entry
from relpipe.core import jsoncodec
from relpipe.core.reference import Reference
from relpipe.images.runtime import Runtime
from relpipe.images.services import Services
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.outputs import (
    ConfigScope,
    EvalOutput,
    PrecisionOutput,
    ProbeOutput,
    ReleaseChecks,
    Resolved,
    SmokeOutput,
    ValidatorOutput,
    run_stage,
)
from relpipe.pipeline.plan import Options, Plan
from relpipe.pipeline.release import Request
from relpipe.pipeline.runrecord import SCHEMA, RunRecord, StageRunner
from relpipe.pipeline.verdict import Outcome

KINDS: dict[str, Any] = {
    "image": Resolved,
    "baseline": Resolved,
    "probe": ProbeOutput,
    "smoke": SmokeOutput,
    "precision": PrecisionOutput,
    "config": ConfigScope,
    "golden": ValidatorOutput,
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_to_json_inverts_from_json_exactly(
    name: str, outcome_json: Any, precision_json: Any
) -> None:
    # The fixture's JSON of one output, completed the way a stage writes it (every field).
    data = outcome_json()[name]
    typed = jsoncodec.from_json(KINDS[name], precision_json(data) if name == "precision" else data)
    recorded = jsoncodec.to_json(typed)
    again = jsoncodec.from_json(KINDS[name], json.loads(json.dumps(recorded)))
    assert again == typed and jsoncodec.to_json(again) == recorded


def test_eval_and_release_checks_round_trip(outcome_json: Any) -> None:
    for ev in outcome_json()["evals"]:
        assert jsoncodec.to_json(jsoncodec.from_json(EvalOutput, ev)) == {
            "reason": "",
            "seconds": 0.0,
            **ev,
        }
    checks = {
        "changelog": {"status": "ok", "problems": ["x:1: bad"], "evidence": {"entries": 3}},
        "notes": {"status": "ok", "problems": [], "evidence": {"languages": "en + zh"}},
        "golden": {"status": "n/a", "reason": "no golden_al_distribution/"},
    }
    assert jsoncodec.to_json(jsoncodec.from_json(ReleaseChecks, checks)) == checks


# Records whose fields are easy to swap unnoticed (four strings in a row, eleven optional outputs).
KEYWORD_ONLY = (
    Options,
    Request,
    EvalOutput,
    Entry,
    Reference,
    Outcome,
    FieldChange,
    ImageChange,
    ConcurrencyChange,
    EnvChange,
    VersionChange,
    Runtime,
    Services,
)


@pytest.mark.parametrize("record", KEYWORD_ONLY, ids=lambda r: r.__name__)
def test_records_are_keyword_only(record: type) -> None:
    assert_keyword_only(record)


def test_records_are_refused_positionally_and_frozen() -> None:
    with pytest.raises(TypeError):
        Options(("decode-parity",))  # type: ignore[misc]
    with pytest.raises(TypeError):
        Request("key", "rocm/atom-dev:nightly_202610070333")  # type: ignore[misc]
    with pytest.raises(TypeError):
        EvalOutput("pass", "decode-parity", 1, "token_agreement")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Reference("docker.io", "library/ubuntu")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Entry(("k",), ("x",), "https://github.com/o/r/pull/1")  # type: ignore[misc]
    options = Options(max_batch=2)
    assert jsoncodec.from_json(Options, jsoncodec.to_json(options)) == options
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_batch = 3  # type: ignore[misc]


def test_a_cached_output_of_another_shape_is_refused_in_one_line(tmp_path: Path) -> None:
    record = RunRecord(tmp_path / "run")
    inputs = {"image": "sha256:" + "ab" * 32}
    # A stage result whose key matches its inputs but whose output lacks a field (hand-edited,
    # or written by a stage that changed shape without a format bump).
    StageRunner(record).run("smoke", inputs, lambda: {"status": "pass", "tokens": "many"})
    with pytest.raises(PipelineError) as err:
        run_stage(StageRunner(record), SmokeOutput, "smoke", inputs, _boom, "smoke")
    assert "\n" not in str(err.value)
    assert "recorded smoke output is malformed (tokens: expected an integer, got a string" in str(
        err.value
    )
    StageRunner(record).run("eval", inputs, lambda: {"status": "pass", "suite": "x"})
    with pytest.raises(
        PipelineError, match=r"recorded eval output is malformed \(batch: missing\)"
    ):
        run_stage(StageRunner(record), EvalOutput, "eval", inputs, _boom, "eval")


def _boom() -> SmokeOutput:
    raise AssertionError("a cached stage must not run again")


def test_plan_round_trips_and_a_malformed_plan_is_refused(outcome_json: Any, plan_of: Any) -> None:
    plan = plan_of(outcome_json())
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan and again.run_id == plan.run_id
    assert [p.batch for p in again.points] == [1, 4]
    broken = {**plan.to_json(), "image": {"ref": "x"}}
    with pytest.raises(PipelineError, match="malformed qualification plan"):
        Plan.from_json(broken)


def test_relpipe_report_refuses_a_run_record_of_another_schema(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"schema": SCHEMA + 1, "kind": "qualify"}))
    done = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "report", str(run)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"schema-{SCHEMA}" in lines[0] and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_malformed_engine_result_is_a_recorded_failure_not_a_crash() -> None:
    # The container's JSON is untrusted: a score that is not a number fails C4, it does not raise.
    from relpipe.core.status import FAIL, NA
    from relpipe.pipeline import containers
    from relpipe.pipeline.verdict import Outcome, check_evals

    inputs = {"suite": "decode-parity", "batch": 2, "metric": "token_agreement"}
    raw = {**inputs, "status": "pass", "score": "0.99", "threshold": 0.95, "samples": 8}
    ev = containers._eval_output(raw, inputs)
    assert ev.status == NA and ev.reason.startswith("malformed decode-parity result")
    assert jsoncodec.to_json(ev)["status"] == "error"  # the word records have always held
    c4 = check_evals(Outcome(evals=(dataclasses.replace(ev, point="p"),)))
    assert c4.status == FAIL and "malformed decode-parity result" in c4.reason
