"""The nightly workflow's pull-request job, its `run:` steps executed as a runner gives them.

The earlier jobs are given (plan, qualify, merge with a verdict); the benchmark checkout is a clone
whose working tree holds a staged release (the release step itself is `relpipe release`, tested
in test_qualify.py, and skipped here with the install step). The job must open the PR against
Prism + the bare remote on WARN, link it in the job summary, update the same PR on the next
night, and not run at all on FAIL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import github_api
from pr_support import KEY, REPO, TOKEN, stage_release
from support import git
from workflow_runner import run_workflow

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly-qualification.yml"
JOB = "pull-request"


def night(world: Path, api: github_api.GitHubDouble, root: Path, verdict: str):  # type: ignore[no-untyped-def]
    given = {
        "plan": {"result": "success", "outputs": {"matrix": '{"include": []}'}},
        "qualify": {"result": "success", "outputs": {}},
        "merge": {"result": "success", "outputs": {"verdict": verdict}},
    }
    (root / "artifacts" / "plan").mkdir(parents=True)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return run_workflow(
        WORKFLOW,
        root,
        vars={
            "RELPIPE_CONFIG_KEY": KEY,
            "RELPIPE_BENCHMARK_REPO": REPO,
            "RELPIPE_GITHUB_API_URL": api.url,
            "RELPIPE_PR_LABELS": "full-sweep-enabled all-evals",
        },
        env={**os.environ, "PATH": path},
        secrets={"RELPIPE_PR_TOKEN": TOKEN},
        checkouts={"benchmark": world},
        skip=("install", "release"),
        given=given,
    )


def test_the_pull_request_job_opens_then_updates_the_pr_and_links_it(
    world: Path, api: github_api.GitHubDouble, tmp_path: Path
) -> None:
    stage_release(world, "nightly_202610070333")
    run = night(world, api, tmp_path / "night1", "WARN")
    ran = [s.name for s in run.steps if s.job == JOB and s.status == "ran"]
    assert ran == ["Open or update the bump pull request"]
    link = f"https://github.com/{REPO}/pull/1"
    assert f"[#1]({link}) (opened)" in run.summaries[f"{JOB}-0"]
    assert [lb["name"] for lb in api.pulls[1]["labels"]] == ["full-sweep-enabled", "all-evals"]
    assert all(s.headers.get("authorization") == f"Bearer {TOKEN}" for s in api.seen)
    # The next night: a newer release of the same key updates the same PR.
    git(world, "checkout", "-q", "--", ".")
    stage_release(world, "nightly_202610090101")
    run = night(world, api, tmp_path / "night2", "PASS")
    assert f"[#1]({link}) (updated)" in run.summaries[f"{JOB}-0"]
    assert (
        len(api.pulls) == 1
        and "nightly_202610090101" in api.pulls[1]["title"] + api.pulls[1]["body"]
    )


def test_a_failed_verdict_opens_nothing(
    world: Path, api: github_api.GitHubDouble, tmp_path: Path
) -> None:
    stage_release(world, "nightly_202610070333")
    run = night(world, api, tmp_path / "night", "FAIL")
    assert run.jobs[JOB]["result"] == "skipped"
    assert api.seen == [] and git(world, "ls-remote", "origin").count("refs/heads/") == 1
