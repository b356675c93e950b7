"""What the qualification tests share (tests/pipeline/test_qualify*.py): the quick engine settings,
the fixture nightlies and benchmark repository they run on (`make_env`; the `env` fixture of
tests/pipeline/conftest.py), the containers a killed client leaves behind, and the
`relpipe slurm` command line on the one-node cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relpipe.images.build import FixtureImage, build_fixtures
from relpipe.pipeline.demo import EXAMPLE, mirror_env, prepare_workdir

REPOSITORY = "relpipe-test-pipeline/atom-dev"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
QUICK = [
    "--max-batch",
    "1",
    "--max-new",
    "2",
    "--prompt-bytes",
    "8",
    "--kv-dtypes",
    "fp32",
    "--timeout",
    "180",
]


@dataclass(frozen=True, kw_only=True)
class Env:
    """Where a module's qualification tests run: its nightlies, benchmark repository and state."""

    registry: str  # host:port of the loopback registry, a mirror of docker.io
    vars: dict[str, str]  # the environment of every relpipe run (`run_env`)
    repo: Path  # the benchmark repository (a git working tree)
    state: Path  # relpipe's --state: run records and the stage cache
    nightlies: list[FixtureImage]  # oldest first
    fixture_cache: Path  # the session's layer cache (tests/conftest.py), shared by xdist workers

    @property
    def newest(self) -> str:
        # Canonical (docker.io) name: the loopback registry serves it as a mirror.
        return f"{REPOSITORY}:{self.nightlies[-1].tag}"

    def relpipe(
        self, *args: str, cwd: Path | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "relpipe.pipeline", *args],
            cwd=cwd or self.repo,
            env=self.vars,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def containers_of(docker_host: str, run_id: str, *, running: bool = False) -> list[str]:
    """Ids of the containers labelled with the run id as their owner (only running ones)."""
    import docker

    client = docker.DockerClient(base_url=docker_host)
    try:
        filters = {"label": f"org.relpipe.owner={run_id}"}
        if running:
            filters["status"] = "running"
        owned = client.containers.list(all=not running, filters=filters, sparse=True)
        return sorted(str(c.id) for c in owned)
    finally:
        client.close()


def remove_containers(docker_host: str, tmp_root: Path) -> None:
    """Containers orphaned by the killed client (it could not remove them): remove ours only.

    Ours are those whose output folder lies under this test's TMPDIR; the image digest alone
    would also match the same fixture run by another xdist worker or test session on this dockerd.
    """
    import docker

    root = str(tmp_root.resolve()) + os.sep
    client = docker.DockerClient(base_url=docker_host)
    try:
        # sparse: the listing's own Mounts, no per-container inspect racing with removals
        listed = client.containers.list(
            all=True, filters={"label": "org.relpipe.run=1"}, sparse=True
        )
        for container in listed:
            sources = [str(m.get("Source", "")) for m in container.attrs.get("Mounts") or []]
            if any(source.startswith(root) for source in sources):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True)
    finally:
        client.close()


def make_env(
    registry: str,
    docker_host: str,
    fixture_cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Env:
    """Four good fixture nightlies in the registry, and a benchmark repository that names them."""
    nightlies = build_fixtures(registry, REPOSITORY, 4, "good", cache_dir=fixture_cache)
    base = tmp_path_factory.mktemp("pipeline")
    # Each client's container output folders live in its TMPDIR: what identifies this module's
    # containers.
    variables = run_env(registry, docker_host, base / "tmp")
    repo = prepare_workdir(EXAMPLE, base / "repo", registry, REPOSITORY, mirror=True)
    return Env(
        registry=registry,
        vars=variables,
        repo=repo,
        state=base / "state",
        nightlies=nightlies,
        fixture_cache=fixture_cache,
    )


def run_env(registry: str, docker_host: str, tmp: Path) -> dict[str, str]:
    """The environment a `relpipe` run gets in these tests: the loopback registry as docker.io's
    mirror, this dockerd, the Triton interpreter, no user state, and `tmp` (made) as TMPDIR."""
    tmp.mkdir()
    return dict(
        os.environ,
        RELPIPE_REGISTRY=registry,
        DOCKER_HOST=docker_host,
        TRITON_INTERPRET="1",
        RELPIPE_STATE="",
        TMPDIR=str(tmp),
        **mirror_env(registry),
    )


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["verdict"]["checks"]}


def slurm(env: Env, slurm_conf: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "slurm", *args],
        cwd=env.repo,
        env={**env.vars, "SLURM_CONF": slurm_conf},
        capture_output=True,
        text=True,
        timeout=600,
    )


def submit(
    env: Env, slurm_conf: str, plan_dir: Path, jobs: Path, repo: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return slurm(
        env,
        slurm_conf,
        "submit",
        str(plan_dir),
        "--partition",
        "relpipe",
        "--jobs",
        str(jobs),
        "--repo",
        str(repo),
        *extra,
    )


def pristine(env: Env, dest: Path) -> Path:
    """The benchmark repository as the qualified run saw it (the release test changes env.repo)."""
    subprocess.run(["git", "clone", "-q", str(env.repo), str(dest)], check=True)
    roots = subprocess.run(
        ["git", "-C", str(dest), "rev-list", "--max-parents=0", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", roots.stdout.split()[0]], check=True)
    return dest


def plan(env: Env, plan_dir: Path, ref: str, shards: int, *extra: str) -> None:
    planned = env.relpipe(
        "qualify",
        ref,
        "--config-key",
        KEY,
        "--state",
        str(plan_dir.parent / "state"),
        *QUICK,
        *extra,
        "--plan",
        "--shards",
        str(shards),
        "--out",
        str(plan_dir),
    )
    assert planned.returncode == 0, planned.stderr


def wait_ended(env: Env, slurm_conf: str, jobs: Path, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        done = slurm(env, slurm_conf, "status", str(jobs), "--json")
        assert done.returncode == 0, done.stderr
        shards: list[dict[str, Any]] = json.loads(done.stdout)["shards"]
        active = [s for s in shards if s["slurm"] in ("PENDING", "RUNNING", "COMPLETING")]
        if not active:
            return shards
        assert time.monotonic() < deadline, f"Slurm tasks still active: {active}"
        time.sleep(1)
