"""Run records: stage results keyed by their inputs, reused across runs, resumable,
tamper-evident."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.runrecord import RunRecord, StageRunner, atomic_write, stage_key


def _runner(tmp_path: Path, name: str = "run", offline: bool = False) -> StageRunner:
    return StageRunner(
        RunRecord(tmp_path / "runs" / name, cache=tmp_path / "cache"), offline=offline
    )


def test_same_inputs_are_a_cache_hit_and_other_inputs_are_not(tmp_path: Path) -> None:
    calls: list[str] = []

    def stage(tag: str) -> dict[str, str]:
        calls.append(tag)
        return {"status": "pass", "tag": tag}

    first = _runner(tmp_path)
    assert first.run("smoke", {"image": "sha256:a"}, lambda: stage("a")) == {
        "status": "pass",
        "tag": "a",
    }
    # A second run (another record, same shared cache) finds the result by its inputs' hash.
    second = _runner(tmp_path, "other")
    assert second.run("smoke", {"image": "sha256:a"}, lambda: stage("again")) == {
        "status": "pass",
        "tag": "a",
    }
    assert second.run("smoke", {"image": "sha256:b"}, lambda: stage("b"))["tag"] == "b"
    assert calls == ["a", "b"]
    assert second.hits == ["smoke"] and second.ran == ["smoke"]
    assert (tmp_path / "runs" / "other" / "stages").is_dir()


def test_killed_run_resumes_at_first_unfinished_stage(tmp_path: Path) -> None:
    ran: list[str] = []

    def pipeline(fail_at: str | None) -> None:
        runner = _runner(tmp_path)
        for name in ("probe", "smoke", "eval", "precision"):

            def fn(n: str = name) -> dict[str, str]:
                if n == fail_at:
                    raise KeyboardInterrupt  # the process dies inside this stage
                ran.append(n)
                return {"status": "ok"}

            runner.run(name, {"image": "sha256:x", "stage": name}, fn)

    with pytest.raises(KeyboardInterrupt):
        pipeline(fail_at="eval")
    assert ran == ["probe", "smoke"]
    pipeline(fail_at=None)
    assert ran == ["probe", "smoke", "eval", "precision"]
    events = RunRecord(tmp_path / "runs" / "run").events()
    assert [(e["stage"], e["what"]) for e in events if e["what"] != "start"][-4:] == [
        ("probe", "cached"),
        ("smoke", "cached"),
        ("eval", "done"),
        ("precision", "done"),
    ]


def test_offline_runner_names_the_missing_stage(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match=r"stage eval .*no result in the shard records"):
        _runner(tmp_path, offline=True).run("eval", {"batch": 4}, lambda: {"status": "pass"})


def test_tampered_result_is_rejected_with_one_line(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    runner.run("probe", {"image": "sha256:a"}, lambda: {"status": "ok"})
    path = next((tmp_path / "runs" / "run" / "stages").glob("probe-*.json"))
    doc = json.loads(path.read_text())
    doc["inputs"]["image"] = "sha256:b"  # result now claims other inputs than its key
    path.write_text(json.dumps(doc))
    with pytest.raises(PipelineError, match="stage key does not match its inputs"):
        _runner(tmp_path).run("probe", {"image": "sha256:a"}, lambda: {"status": "ok"})
    path.write_text("{not json")
    with pytest.raises(PipelineError, match="not valid JSON"):
        _runner(tmp_path).run("probe", {"image": "sha256:a"}, lambda: {"status": "ok"})


def test_stage_key_depends_on_every_input_and_not_on_order() -> None:
    assert stage_key("eval", {"a": 1, "b": 2}) == stage_key("eval", {"b": 2, "a": 1})
    assert stage_key("eval", {"a": 1}) != stage_key("eval", {"a": 2})
    assert stage_key("eval", {"a": 1}) != stage_key("smoke", {"a": 1})


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "d" / "report.json"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]
