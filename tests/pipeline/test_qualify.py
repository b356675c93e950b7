"""Qualification end to end: real fixture nightlies in the loopback registry, run by real dockerd.

One good nightly series is qualified once (killed during its eval stage, then resumed); the other
tests read that run: cache hit, byte-identical re-render, sharded == unsharded, release and its
pull request, the same plan as a Slurm array job and as the nightly GitHub workflow. Nightlies that
must fail are tests/pipeline/test_qualify_fails_closed.py. Engine settings are the smallest that
still decode (two tokens, short prompts, one eval batch) because the Triton kernels run in the CPU
interpreter here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import github_api
import pytest
import qualify_support as qs
from corpus import unavailable
from qualify_support import KEY, QUICK, REPOSITORY, Env
from support import git

from relpipe.images import services as svc

pytestmark = [pytest.mark.services, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, kw_only=True)
class Qualified:
    run_dir: Path
    report: dict[str, Any]
    resumed: list[dict[str, Any]]  # events of the resumed run
    output: str
    orphans: list[str]  # containers the killed attempt left behind
    left: list[str]  # those of them still there after the resumed run


@pytest.fixture(scope="module")
def qualified(env: Env, docker_host: str) -> Iterator[Qualified]:
    """Qualify the newest good nightly: kill the first attempt in its eval stage, then resume."""
    args = ["qualify", env.newest, "--config-key", KEY, "--state", str(env.state), *QUICK]
    proc = subprocess.Popen(
        [sys.executable, "-m", "relpipe.pipeline", *args],
        cwd=env.repo,
        env=env.vars,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 400
    run_dir = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            runs = list((env.state / "runs").glob("*/events.jsonl"))
            if runs and any(
                e["stage"] == "eval" and e["what"] == "start" for e in qs.events(runs[0].parent)
            ):
                run_dir = runs[0].parent
                break
            time.sleep(0.5)
        assert run_dir is not None, f"eval stage never started (exit {proc.poll()})"
        # Kill the client only once the eval's container exists and runs (polled, not assumed).
        while time.monotonic() < deadline and not qs.containers_of(
            docker_host, run_dir.name, running=True
        ):
            assert proc.poll() is None, f"qualify exited ({proc.poll()}) before its eval ran"
            time.sleep(0.1)
        assert qs.containers_of(docker_host, run_dir.name, running=True), "no eval container ran"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # The killed client could not remove its container: the resumed run must reap it.
        orphans = qs.containers_of(docker_host, run_dir.name)
        before = len(qs.events(run_dir))
        done = env.relpipe(*args)
        left = [c for c in qs.containers_of(docker_host, run_dir.name) if c in orphans]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        qs.remove_containers(docker_host, Path(env.vars["TMPDIR"]))  # whatever happened above
    assert done.returncode == 0, done.stdout + done.stderr
    yield Qualified(
        run_dir=run_dir,
        report=json.loads((run_dir / "report.json").read_text()),
        resumed=qs.events(run_dir)[before:],
        output=done.stdout,
        orphans=orphans,
        left=left,
    )


def test_good_nightly_warns_on_the_precision_commit_and_resumes_after_a_kill(
    qualified: Qualified,
) -> None:
    statuses = qs.statuses(qualified.report)
    assert statuses == {
        "C1": "PASS",
        "C2": "PASS",
        "C3": "PASS",
        "C4": "PASS",
        "C5": "WARN",
        "C6": "N/A",
        "C7": "N/A",
        "C8": "N/A",
        "C9": "PASS",
        "C10": "PASS",
        "C11": "N/A",  # the history holds no performance results of the key
        "C12": "N/A",  # ... and no earlier image: this is the key's first qualification
    }
    c5 = next(c for c in qualified.report["verdict"]["checks"] if c["id"] == "C5")
    assert "fix(layernorm): accumulate rms_norm variance in fp32" in c5["reason"]
    assert "(#2479)" in c5["reason"]
    # The resumed run took probe and smoke from the record and ran only the eval.
    what = {(e["stage"], e["what"]) for e in qualified.resumed}
    assert {("pull", "cached"), ("probe", "cached"), ("smoke", "cached"), ("eval", "done")} <= what
    assert ("smoke", "start") not in what and ("probe", "start") not in what
    assert "verdict: WARN" in qualified.output
    # The killed attempt's eval container (labelled with the run id) was reaped by the resume.
    assert qualified.orphans and qualified.left == []


def test_requalifying_the_same_digest_is_a_cache_hit(env: Env, qualified: Qualified) -> None:
    before = {
        name: (qualified.run_dir / name).read_bytes()
        for name in ("report.json", "report.md", "report.html")
    }
    # How fast a cache hit is, is the bench's question (bench_pipeline); here: nothing re-ran.
    again = env.relpipe(
        "qualify", env.newest, "--config-key", KEY, "--state", str(env.state), *QUICK, "--json"
    )
    assert again.returncode == 0, again.stderr
    assert "(cached)" in again.stderr and "s)" not in again.stderr.replace("(cached)", "")
    assert json.loads(again.stdout)["run"] == qualified.run_dir.name
    # `relpipe report RUN` re-renders from the record alone, byte for byte.
    rendered = env.relpipe("report", str(qualified.run_dir))
    assert rendered.returncode == 0, rendered.stderr
    assert {name: (qualified.run_dir / name).read_bytes() for name in before} == before


def test_nightly_picks_the_newest_tag_and_reuses_the_run(env: Env, qualified: Qualified) -> None:
    done = env.relpipe(
        "nightly",
        REPOSITORY,
        "--config-key",
        KEY,
        "--state",
        str(env.state),
        *QUICK,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert f"newest nightly: {env.newest}" in done.stderr
    assert (
        json.loads(done.stdout)["run"] == qualified.run_dir.name
    )  # same inputs, same run, all cached
    missing = env.relpipe("nightly", REPOSITORY, "--pattern", "release_%Y%m%d", *QUICK)
    assert missing.returncode == 2 and "matches 'release_%Y%m%d'" in missing.stderr


def test_three_parallel_shards_merge_to_the_unsharded_verdict(
    env: Env, qualified: Qualified, tmp_path: Path
) -> None:
    state = tmp_path / "state"  # no shared cache: every shard does its own work
    plan_dir = tmp_path / "plan"
    planned = env.relpipe(
        "qualify",
        env.newest,
        "--config-key",
        KEY,
        "--state",
        str(state),
        *QUICK,
        "--plan",
        "--shards",
        "3",
        "--out",
        str(plan_dir),
    )
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout) == {
        "include": [{"shard": "1/3"}, {"shard": "2/3"}, {"shard": "3/3"}]
    }
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "relpipe.pipeline",
                "qualify",
                "--from-plan",
                str(plan_dir),
                "--shard",
                f"{i}/3",
                "--out",
                str(tmp_path / f"shard-{i}"),
                "--repo",
                str(env.repo),
                "--json",
            ],
            cwd=env.repo,
            env=env.vars,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2, 3)
    ]
    for i, proc in enumerate(procs, start=1):
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        shard_doc = json.loads(out)  # --json: exactly one document, the shard's record
        assert shard_doc["shard"] == f"{i}/3"
        assert shard_doc["record"] == str(tmp_path / f"shard-{i}")
    shard_stages = [
        sorted(p.name.split("-")[0] for p in (tmp_path / f"shard-{i}" / "stages").glob("*.json"))
        for i in (1, 2, 3)
    ]
    assert (
        all(shard_stages) and sum(len(s) for s in shard_stages) == 7
    )  # pull, probe x2, smoke, golden, precision, eval
    merged = env.relpipe(
        "merge",
        str(plan_dir),
        *[str(tmp_path / f"shard-{i}") for i in (1, 2, 3)],
        "--out",
        str(tmp_path / "merged"),
        "--json",
    )
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["verdict"] == qualified.report["verdict"]
    # A merge missing a shard fails closed, naming the stage.
    partial = env.relpipe(
        "merge", str(plan_dir), str(tmp_path / "shard-1"), "--out", str(tmp_path / "partial")
    )
    assert partial.returncode == 2 and "no result in the shard records" in partial.stderr


def test_release_dry_run_then_release_pins_appends_and_writes_notes(
    env: Env, qualified: Qualified
) -> None:
    files = ["configs/amd-master.yaml", "perf-changelog.yaml", "images.lock.yaml"]
    before = {f: (env.repo / f).read_bytes() for f in files}
    common = [
        "release",
        "--config-key",
        KEY,
        "--image",
        env.newest,
        "--state",
        str(env.state),
        *QUICK,
        "--pr-number",
        "101",
        "--repo-url",
        "https://github.com/example-org/benchmark-repo",
    ]
    dry = env.relpipe(*common, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert {f: (env.repo / f).read_bytes() for f in files} == before
    tag = env.nightlies[-1].tag
    assert f"+  image: {REPOSITORY}:{tag}" in dry.stdout
    assert "release verdict: WARN (dry run, nothing written)" in dry.stdout
    # --json prints exactly one document (json.loads refuses trailing data): report + release.
    dry_json = env.relpipe(*common, "--dry-run", "--json")
    assert dry_json.returncode == 0, dry_json.stderr
    document = json.loads(dry_json.stdout)
    assert document["verdict"]["overall"] == "WARN" and document["release"]["written"] is False
    assert f"+  image: {REPOSITORY}:{tag}" in document["release"]["diff"]
    assert {f: (env.repo / f).read_bytes() for f in files} == before
    done = env.relpipe(*common)
    assert done.returncode == 0, done.stdout + done.stderr
    config = (env.repo / "configs/amd-master.yaml").read_text()
    assert f"image: {REPOSITORY}:{tag}" in config
    # Bytes came from the loopback mirror; no recorded name says so (issue 11.4).
    diff = subprocess.run(
        ["git", "-C", str(env.repo), "diff"], check=True, capture_output=True, text=True
    ).stdout
    assert "image: " in diff and "127.0.0.1" not in diff and env.registry not in diff
    changelog = (env.repo / "perf-changelog.yaml").read_bytes()
    assert changelog.startswith(before["perf-changelog.yaml"])
    assert b"https://github.com/example-org/benchmark-repo/pull/101" in changelog
    assert env.nightlies[-1].digest.encode() in changelog
    lock = (env.repo / "images.lock.yaml").read_text()
    assert env.nightlies[-1].digest in lock and env.nightlies[-1].engine_version in lock
    # The repository's own hook accepts the change (git base = the committed file).
    hook = subprocess.run(
        [
            sys.executable,
            "-m",
            "relpipe.validate.gate.cli",
            "--worktree",
            "--repo-url",
            "https://github.com/example-org/benchmark-repo",
            "--pr-number",
            "101",
        ],
        cwd=env.repo,
        env=env.vars,
        capture_output=True,
        text=True,
    )
    assert hook.returncode == 0, hook.stdout + hook.stderr
    report = json.loads(next((env.state / "releases").glob("*/report.json")).read_text())
    assert qs.statuses(report)["C7"] == "PASS" and qs.statuses(report)["C8"] == "PASS"
    notes = next((env.state / "releases").glob("*/notes.md")).read_text()
    assert "## 中文" in notes and tag in notes
    # The release record re-renders from the record and the stage cache alone, byte for byte.
    release_dir = next((env.state / "releases").glob("*/report.json")).parent
    before = {
        n: (release_dir / n).read_bytes() for n in ("report.json", "report.md", "report.html")
    }
    again = env.relpipe("report", str(release_dir))
    assert again.returncode == 0 and "verdict: WARN" in again.stdout, again.stderr
    assert {n: (release_dir / n).read_bytes() for n in before} == before


def test_the_release_opens_its_pr_and_every_request_passes_githubs_contract(
    env: Env, qualified: Qualified, api: github_api.GitHubDouble, tmp_path: Path
) -> None:
    """After the release above: `relpipe pr open` on the real release record and working tree,
    against Prism serving GitHub's OpenAPI description (the `api` fixture fails the test on any
    request the contract rejects) and a bare remote."""
    if not list((env.state / "releases").glob("*/notes.md")):
        unavailable("needs the release of test_release_dry_run_then_release_pins_appends_...")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(env.repo, "remote", "add", "origin", str(remote))
    try:
        git(env.repo, "push", "-q", "origin", "HEAD:refs/heads/main")
        repo = "example-org/benchmark-repo"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "relpipe.pipeline",
                "pr",
                "open",
                "--config-key",
                KEY,
                "--github-repo",
                repo,
                "--api-url",
                api.url,
                "--state",
                str(env.state),
            ],
            cwd=env.repo,
            env={
                **env.vars,
                "GITHUB_TOKEN": "ghp_acceptance",
                "GIT_AUTHOR_NAME": "Jane",
                "GIT_AUTHOR_EMAIL": "jane@example.invalid",
                "GIT_COMMITTER_NAME": "Jane",
                "GIT_COMMITTER_EMAIL": "jane@example.invalid",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"opened PR #1: https://github.com/{repo}/pull/1" in done.stdout
        pull = api.pulls[1]
        notes = next((env.state / "releases").glob("*/notes.md")).read_text()
        assert pull["title"] == notes.splitlines()[0][2:]
        assert "## Validation: WARN" in pull["body"] and "## 中文" in pull["body"]
        head = f"refs/heads/relpipe/bump/{KEY}"
        changed = git(
            env.repo,
            "diff",
            "--name-only",
            "HEAD",
            git(env.repo, "ls-remote", str(remote), head).split()[0],
        )
        assert sorted(changed.split()) == sorted(
            ["configs/amd-master.yaml", "images.lock.yaml", "perf-changelog.yaml"]
        )
    finally:
        git(env.repo, "remote", "remove", "origin")


def test_gsm8k_runs_inside_the_image_and_fails_closed_below_threshold(
    env: Env, qualified: Qualified, tmp_path: Path
) -> None:
    dataset = tmp_path / "gsm8k.jsonl"
    rows = [
        {
            "question": f"Tom has {a} apples and buys {b} more. How many apples does he have?",
            "answer": f"{a} + {b} = {a + b}\n#### {a + b}",
        }
        for a, b in ((2, 3), (10, 7))
    ]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = env.relpipe(
        "qualify",
        env.newest,
        "--config-key",
        KEY,
        "--state",
        str(env.state),
        *QUICK,
        "--suite",
        "decode-parity",
        "--suite",
        "gsm8k",
        "--dataset",
        str(dataset),
        "--n-shot",
        "0",
        "--eval-limit",
        "2",
        "--json",
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    gsm = [e for e in report["evals"] if e["suite"] == "gsm8k"]
    # The tiny reference model cannot do arithmetic: both problems scored, accuracy below
    # minimaxm3's 0.92.
    assert gsm and all(
        e["samples"] == 2 and e["threshold"] == 0.92 and e["score"] < 0.92 for e in gsm
    )
    c4 = next(c for c in report["verdict"]["checks"] if c["id"] == "C4")
    assert c4["status"] == "FAIL" and "gsm8k@" in c4["reason"]
    # Adding a suite does not invalidate the decode-parity result already recorded.
    assert "eval decode-parity batch 1: pass (cached)" in result.stderr


# -- Slurm: the same plan as a real array job on a one-node cluster (services --slurm) -------------


def test_slurm_array_job_cancelled_resubmitted_and_merged_equals_the_unsharded_run(
    env: Env, qualified: Qualified, slurm_conf: str, tmp_path: Path
) -> None:
    plan_dir = tmp_path / "plan"
    repo = qs.pristine(env, tmp_path / "repo")  # as the unsharded run saw it
    qs.plan(env, plan_dir, env.newest, 4, "--repo", str(repo))
    jobs = tmp_path / "jobs"
    dry = qs.submit(env, slurm_conf, plan_dir, jobs, repo, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "#SBATCH --array=1-4" in dry.stdout and '--shard "$shard/4"' in dry.stdout
    assert not (jobs / "slurm.json").exists()  # a dry run submits nothing
    # The script the cluster runs is clean shell (shellcheck is in .ci/apt-packages.txt).
    script = tmp_path / "job.sbatch"
    script.write_text(dry.stdout)
    try:
        shellcheck = svc.ensure_binary("shellcheck")  # apt when root on Debian, as for services
    except svc.ServiceError as exc:
        unavailable(str(exc))
        raise
    checked = subprocess.run(
        [shellcheck, "-s", "bash", str(script)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout

    submitted = qs.submit(env, slurm_conf, plan_dir, jobs, repo, "--json")
    assert submitted.returncode == 0, submitted.stderr
    first = json.loads(submitted.stdout)
    assert first["tasks"] == [1, 2, 3, 4]
    # Cancel the job once some stage has finished in a shard that has more stages to do.
    deadline = time.monotonic() + 300
    while not any(
        e["what"] == "done" for e in qs.events(jobs / "shard-1")
    ):  # shard 1 holds the image unit: pull, probe, smoke
        assert time.monotonic() < deadline, "shard 1 never finished a stage"
        time.sleep(0.5)
    subprocess.run(
        ["scancel", first["job_id"]], env={**env.vars, "SLURM_CONF": slurm_conf}, check=True
    )
    ended = qs.wait_ended(env, slurm_conf, jobs, 120)
    qs.remove_containers(env.vars["DOCKER_HOST"], Path(env.vars["TMPDIR"]))
    unfinished = [s["shard"] for s in ended if not s["done"]]
    assert 1 in unfinished and all(
        s["slurm"] == "CANCELLED" for s in ended if s["shard"] in unfinished
    ), ended
    done_before = {e["label"] for e in qs.events(jobs / "shard-1") if e["what"] == "done"}

    again = qs.submit(env, slurm_conf, plan_dir, jobs, repo, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["tasks"] == unfinished  # finished shards are not re-run
    final = qs.wait_ended(env, slurm_conf, jobs, 400)
    assert all(s["done"] and s["slurm"] == "COMPLETED" for s in final), final
    # The re-submitted shard resumed: what it had finished came from its record.
    cached = {e["label"] for e in qs.events(jobs / "shard-1") if e["what"] == "cached"}
    assert done_before and done_before <= cached

    merged = qs.slurm(
        env, slurm_conf, "merge", str(jobs), "--out", str(tmp_path / "merged"), "--json"
    )
    assert merged.returncode == 0, merged.stderr
    verdict = json.dumps(json.loads(merged.stdout)["verdict"], sort_keys=True).encode()
    assert verdict == json.dumps(qualified.report["verdict"], sort_keys=True).encode()


# -- the nightly GitHub workflow, its run: steps executed as a runner gives them ----------------


def test_nightly_workflow_plan_matrix_merge_steps_give_the_unsharded_verdict(
    env: Env, qualified: Qualified, tmp_path: Path
) -> None:
    from workflow_runner import run_workflow

    workflow = ROOT / ".github" / "workflows" / "nightly-qualification.yml"
    run = run_workflow(
        workflow,
        tmp_path,
        vars={
            "RELPIPE_IMAGE_REPOSITORY": REPOSITORY,  # canonical; the loopback mirror serves it
            "RELPIPE_CONFIG_KEY": KEY,
            "RELPIPE_SHARDS": "2",
            "RELPIPE_QUALIFY_ARGS": " ".join(QUICK),
        },
        env={**env.vars, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.vars['PATH']}"},
        checkouts={"benchmark": qs.pristine(env, tmp_path / "repo")},  # as the unsharded run saw it
        # The pull-request job (release + PR) runs in test_pr_workflow.py, against Prism.
        given={"pull-request": {"result": "skipped", "outputs": {}}},
    )
    assert run.jobs["merge"]["outputs"]["verdict"] == qualified.report["verdict"]["overall"]
    ran = [(s.job, s.name) for s in run.steps if s.status == "ran"]
    assert ("plan", "Check relpipe still reads the benchmark repository as it does") in ran
    assert ("plan", "Pin the newest nightly and plan the shards") in ran
    assert [name for job, name in ran if job == "qualify"].count("Qualify the shard") == 2
    assert ("merge", "Merge the shards into one verdict") in ran
    # Only the install steps were left to the test's own environment.
    skipped = {s.name for s in run.steps if s.status == "skipped"}
    assert skipped == {"Install relpipe"}
    assert json.loads(run.jobs["plan"]["outputs"]["matrix"]) == {
        "include": [{"shard": "1/2"}, {"shard": "2/2"}]
    }
    merged = json.loads((tmp_path / "merge-0" / "merged" / "report.json").read_text())
    assert merged["verdict"] == qualified.report["verdict"]
    assert "verdict" in run.summaries["merge-0"].lower()
