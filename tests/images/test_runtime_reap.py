"""relpipe.images.runtime ownership against a real dockerd: every container names its owner,
creating process and purpose, and `reap_stale` removes only the containers of dead processes of
one owner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from support import source_root

from relpipe.images.build import FixtureImage, build_fixtures
from relpipe.images.errors import ContainerError
from relpipe.images.ownership import (
    KIND_LABEL,
    OWNER_LABEL,
    PID_LABEL,
    PID_START_LABEL,
    RUN_LABEL,
    process_alive,
    process_start,
)
from relpipe.images.runtime import Runtime

pytestmark = pytest.mark.services
ROOT = Path(__file__).resolve().parents[2]

# A child process that creates (through Runtime.run) one sleeping container, then blocks in wait.
CHILD = """
import sys
from pathlib import Path
from relpipe.images.runtime import Runtime
host, owner, ref, out = sys.argv[1:5]
rt = Runtime.from_env(docker_host=host, gpu="none", owner=owner)
rt.run(ref, ["python3", "-c", "import time; time.sleep(300)"], out_dir=Path(out), timeout_s=300)
"""


@pytest.fixture(scope="module")
def nightly(registry: str, fixture_cache: Path) -> FixtureImage:
    repo = f"relpipe-test-reap/atom-{uuid.uuid4().hex[:8]}"
    return build_fixtures(registry, repo, count=1, cache_dir=fixture_cache)[-1]


def _owned(runtime: Runtime, owner: str) -> list[Any]:
    return list(
        # sparse: no per-container inspect, which races with containers removed meanwhile
        runtime.client.containers.list(
            all=True, filters={"label": f"{OWNER_LABEL}={owner}"}, sparse=True
        )
    )


def _spawn(
    docker_host: str, owner: str, nightly: FixtureImage, out: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """A child whose container runs; returns (the child, the container id)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, docker_host, owner, nightly.reference, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(source_root())},
    )
    probe = Runtime.from_env(docker_host=docker_host, gpu="none")
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            found = [
                c
                for c in _owned(probe, owner)
                if (c.attrs.get("Labels") or {}).get(PID_LABEL) == str(child.pid)
                and c.status == "running"
            ]
            if found:
                return child, str(found[0].id)
            assert child.poll() is None, f"child exited with {child.returncode}"
            time.sleep(0.2)
    finally:
        probe.client.close()
    child.kill()
    pytest.fail(f"the child for {owner} created no container in 120 s")


def _killed(child: subprocess.Popen[bytes]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(30)


def test_process_liveness_knows_this_process_a_dead_one_and_a_reused_pid() -> None:
    me = os.getpid()
    assert process_alive(me) and process_alive(me, process_start(me))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not process_alive(dead.pid)
    started = process_start(me)
    assert started is not None
    # The same pid with another start time is a later process that reused the number.
    assert not process_alive(me, str(int(started) + 1))


def test_a_killed_process_container_is_reaped_live_and_foreign_ones_are_not(
    docker_host: str, nightly: FixtureImage, runtime: Runtime, tmp_path: Path
) -> None:
    run_id = f"reap-{uuid.uuid4().hex[:8]}"
    other = f"reap-other-{uuid.uuid4().hex[:8]}"
    children: list[subprocess.Popen[bytes]] = []
    try:
        dead, dead_box = _spawn(docker_host, run_id, nightly, tmp_path / "a")
        children.append(dead)
        live, live_box = _spawn(docker_host, run_id, nightly, tmp_path / "b")
        children.append(live)
        foreign, foreign_box = _spawn(docker_host, other, nightly, tmp_path / "c")
        children.append(foreign)
        labels = runtime.client.containers.get(dead_box).labels
        assert labels[OWNER_LABEL] == run_id and labels[KIND_LABEL] == "engine"
        assert labels[PID_LABEL] == str(dead.pid) and labels[RUN_LABEL] == "1"
        assert labels[PID_START_LABEL] == process_start(dead.pid)

        _killed(dead)
        _killed(foreign)
        # The killed client never removed its container: it is still there, still running.
        assert runtime.client.containers.get(dead_box).status == "running"

        assert runtime.reap_stale(run_id) == [dead_box]
        assert {c.id for c in _owned(runtime, run_id)} == {live_box}  # the live one is kept
        assert {c.id for c in _owned(runtime, other)} == {foreign_box}  # other owners too
        assert runtime.reap_stale(run_id) == []  # nothing left to reap: idempotent

        assert runtime.reap_stale(other) == [foreign_box]
        assert _owned(runtime, other) == []
        with pytest.raises(ContainerError, match="needs an owner"):
            runtime.reap_stale("")
    finally:
        for child in children:
            if child.poll() is None:
                _killed(child)
        for owner in (run_id, other):
            for box in _owned(runtime, owner):
                box.remove(force=True)


def test_extract_containers_carry_the_owner_and_kind(
    docker_host: str, nightly: FixtureImage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docker.models.containers import ContainerCollection

    owner = f"reap-extract-{uuid.uuid4().hex[:8]}"
    runtime = Runtime.from_env(docker_host=docker_host, gpu="none", owner=owner)
    seen: list[dict[str, str]] = []
    create = ContainerCollection.create

    def recording_create(self: ContainerCollection, *args: Any, **options: Any) -> Any:
        seen.append(dict(options.get("labels") or {}))
        return create(self, *args, **options)

    # client.containers is a fresh collection on every access: record at the class.
    monkeypatch.setattr(ContainerCollection, "create", recording_create)
    try:
        runtime.extract_path(nightly.reference, "/opt/rocm/.info/version", tmp_path / "v")
    finally:
        runtime.client.close()
    assert len(seen) == 1
    assert seen[0][KIND_LABEL] == "extract" and seen[0][OWNER_LABEL] == owner
    assert seen[0][PID_LABEL] == str(os.getpid()) and seen[0][RUN_LABEL] == "1"
