"""Qualification that must fail closed: a broken and a hanging nightly (FAIL, and the release
refuses them), a Slurm task killed at its time limit (its points FAIL, never go missing), and a
submission asking for a GPU gres no node has (refused before anything is written). Real fixture
nightlies in the loopback registry, run by real dockerd, on the one-node Slurm cluster; the
engine settings are tests/qualify_support.py's QUICK.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import qualify_support as qs
from qualify_support import KEY, QUICK, Env

from relpipe.images.build import build_fixtures

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.mark.parametrize("variant,check", [("broken", "C3"), ("hang", "C3")])
def test_bad_nightly_fails_closed_and_release_refuses(env: Env, variant: str, check: str) -> None:
    repository = f"relpipe-test-pipeline/atom-{variant}"
    bad = build_fixtures(env.registry, repository, 4, variant, cache_dir=env.fixture_cache)[-1]
    timeout = "20" if variant == "hang" else "180"
    quick = [*QUICK[:-1], timeout]
    result = env.relpipe(
        "qualify", bad.tagged, "--config-key", KEY, "--state", str(env.state), *quick, "--json"
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"]["overall"] == "FAIL"
    statuses = qs.statuses(report)
    assert statuses[check] == "FAIL" and statuses["C4"] == "FAIL"
    if variant == "hang":
        assert any(
            w in report["smoke"]["reason"] for w in ("timeout", "watchdog", "hung", "killed")
        )
    before = (env.repo / "perf-changelog.yaml").read_bytes()
    refused = env.relpipe(
        "release", "--config-key", KEY, "--image", bad.tagged, "--state", str(env.state), *quick
    )
    assert refused.returncode == 1
    assert "release refused" in refused.stderr and f"{check} " in refused.stderr
    assert (env.repo / "perf-changelog.yaml").read_bytes() == before


# -- Slurm ---------------------------------------------------------------------------------------


def test_slurm_task_killed_at_its_time_limit_fails_its_points(
    env: Env, slurm_conf: str, tmp_path: Path
) -> None:
    repository = "relpipe-test-pipeline/atom-slurm-hang"
    hang = build_fixtures(env.registry, repository, 2, "hang", cache_dir=env.fixture_cache)[-1]
    plan_dir = tmp_path / "plan"
    qs.plan(env, plan_dir, hang.tagged, 1, "--timeout", "600")  # outlives Slurm's 1-minute limit
    jobs = tmp_path / "jobs"
    submitted = qs.submit(env, slurm_conf, plan_dir, jobs, env.repo, "--time", "1")
    assert submitted.returncode == 0, submitted.stderr
    try:
        ended = qs.wait_ended(env, slurm_conf, jobs, 300)
    finally:
        qs.remove_containers(env.vars["DOCKER_HOST"], Path(env.vars["TMPDIR"]))
    assert [(s["slurm"], s["exit_code"]) for s in ended] == [("TIMEOUT", None)]
    early = qs.slurm(env, slurm_conf, "merge", str(jobs), "--out", str(tmp_path / "m"), "--json")
    assert early.returncode == 1, early.stderr  # FAIL, not an error: the points are accounted for
    report = json.loads(early.stdout)
    assert report["verdict"]["overall"] == "FAIL"
    c3 = next(c for c in report["verdict"]["checks"] if c["id"] == "C3")
    assert c3["status"] == "FAIL" and "killed at its time limit" in c3["reason"]
    assert report["evals"] and all(
        e["status"] == "fail" and "killed at its time limit" in e["reason"] for e in report["evals"]
    )


def test_slurm_submit_refuses_a_gpu_gres_no_node_has(
    env: Env, slurm_conf: str, tmp_path: Path
) -> None:
    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    (plan_dir / "matrix.json").write_text('{"include": [{"shard": "1/1"}]}')
    refused = qs.slurm(
        env, slurm_conf, "submit", str(plan_dir), "--partition", "relpipe", "--gres", "gpu:1"
    )
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "has the GPU gres gpu:1" in refused.stderr
    assert not (plan_dir / "slurm" / "slurm.json").exists()
