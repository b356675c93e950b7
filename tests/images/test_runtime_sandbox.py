"""The container sandbox against a real dockerd (issue 17.7, 17.9): who a container runs as, what an
image's declared VOLUMEs become, the output cap enforced while a hostile container writes, and
containers of an interrupted `relpipe images probe` reaped by the next command.

Hostile images are the fixture nightly with one change committed on top (a VOLUME, a label),
pushed to the loopback registry and run by digest, as every image is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support import source_root

from relpipe.images.build import FixtureImage, build_fixtures
from relpipe.images.errors import ContainerError
from relpipe.images.ownership import OWNER_LABEL, PID_LABEL
from relpipe.images.results import OUT_DIR, Limits
from relpipe.images.runtime import ALLOW_ROOT_ENV, NEEDS_ROOT_LABEL, UNPRIVILEGED, Runtime

pytestmark = pytest.mark.services
ROOT = Path(__file__).resolve().parents[2]
WHOAMI = f"import os; open('{OUT_DIR}/id', 'w').write(f'{{os.getuid()}}:{{os.getgid()}}')"


@pytest.fixture(scope="module")
def nightly(registry: str, fixture_cache: Path) -> FixtureImage:
    repo = f"relpipe-test-sandbox/atom-{uuid.uuid4().hex[:8]}"
    return build_fixtures(registry, repo, count=1, cache_dir=fixture_cache)[-1]


def _derived(runtime: Runtime, registry: str, base: FixtureImage, changes: list[str]) -> str:
    """The nightly with Dockerfile `changes` committed on top, pushed; returns name@digest."""
    client = runtime.client
    box = client.containers.create(base.reference, command=["true"], network_mode="none")
    try:
        image = box.commit(changes=changes)
    finally:
        box.remove(force=True)
    name = f"{registry}/relpipe-test-sandbox/derived-{uuid.uuid4().hex[:8]}"
    image.tag(name, "x")
    for line in client.images.push(name, "x", stream=True, decode=True):
        assert "error" not in line, line
    digests = client.images.get(f"{name}:x").attrs["RepoDigests"]
    return next(d for d in digests if d.startswith(name))


def _volumes(runtime: Runtime) -> set[str]:
    return {v.name for v in runtime.client.volumes.list()}


def test_a_container_never_runs_as_root_by_default(
    runtime: Runtime, nightly: FixtureImage, tmp_path: Path
) -> None:
    run = runtime.run(nightly.reference, ["python3", "-c", WHOAMI], out_dir=tmp_path, timeout_s=120)
    assert run.passed, (run.error, run.logs)
    uid, gid = (int(x) for x in (tmp_path / "id").read_text().split(":"))
    assert uid != 0 and gid != 0
    expected = UNPRIVILEGED if os.getuid() == 0 else (os.getuid(), os.getgid())
    assert (uid, gid) == expected


def test_an_image_that_needs_root_runs_as_root_only_when_allowed(
    runtime: Runtime, docker_host: str, registry: str, nightly: FixtureImage, tmp_path: Path
) -> None:
    ref = _derived(runtime, registry, nightly, [f"LABEL {NEEDS_ROOT_LABEL}=true"])
    with pytest.raises(ContainerError, match=ALLOW_ROOT_ENV) as err:
        runtime.run(ref, ["python3", "-c", WHOAMI], out_dir=tmp_path / "a", timeout_s=120)
    assert "\n" not in str(err.value)
    allowed = Runtime.from_env(docker_host=docker_host, gpu="none", allow_root=True)
    try:
        run = allowed.run(ref, ["python3", "-c", WHOAMI], out_dir=tmp_path / "b", timeout_s=120)
    finally:
        allowed.client.close()
    assert run.passed, (run.error, run.logs)
    assert (tmp_path / "b" / "id").read_text() == "0:0"


def test_declared_volumes_are_bounded_tmpfs_and_no_volume_outlives_the_run(
    runtime: Runtime, registry: str, nightly: FixtureImage, tmp_path: Path
) -> None:
    ref = _derived(runtime, registry, nightly, ["VOLUME /data", "VOLUME /cache"])
    before = _volumes(runtime)
    small = replace(runtime, limits=Limits(volume_size="4m"))
    code = (
        "import json, os\n"
        "mounts = {l.split()[1]: l.split()[2] for l in open('/proc/mounts')}\n"
        "written = 0\n"
        "try:\n"
        "    with open('/data/fill', 'wb') as f:\n"
        "        for _ in range(64):\n"
        "            f.write(b'x' * (1 << 20)); f.flush(); written += 1 << 20\n"
        "except OSError as e:\n"
        "    err = e.errno\n"
        "else:\n"
        "    err = None\n"
        "doc = {'mounts': mounts, 'written': written, 'errno': err}\n"
        f"json.dump(doc, open('{OUT_DIR}/v', 'w'))\n"
    )
    run = small.run(ref, ["python3", "-c", code], out_dir=tmp_path, timeout_s=120)
    assert run.passed, (run.error, run.logs)
    seen: dict[str, Any] = json.loads((tmp_path / "v").read_text())
    assert seen["mounts"]["/data"] == "tmpfs" and seen["mounts"]["/cache"] == "tmpfs"
    assert seen["written"] <= 4 << 20 and seen["errno"] == 28  # ENOSPC at the tmpfs bound
    # Neither the run nor a copy out of the image (a created container) leaves a volume behind.
    runtime.extract_path(ref, "/app/ATOM/.git", tmp_path / "git")
    assert _volumes(runtime) == before


def test_the_output_cap_is_enforced_while_the_container_runs(
    runtime: Runtime, nightly: FixtureImage, tmp_path: Path
) -> None:
    """A container writing its output folder without end is killed once it passes the cap, not at
    its timeout. The folder is measured every `out_dir_poll_s` (0.2 s), so a writer overshoots by
    what it writes in one interval: this one writes 200 MiB/s (a page-cache writer on an idle
    disk can write all 512 MiB inside one interval, which says nothing about the cap). It stops at
    512 MiB so that a broken cap cannot fill the disk."""
    cap = 8 << 20
    capped = replace(runtime, limits=Limits(out_dir_bytes=cap))
    code = (
        "import time\n"
        f"with open('{OUT_DIR}/flood', 'wb') as f:\n"
        "    for _ in range(512):\n"
        "        f.write(b'x' * (1 << 20)); f.flush(); time.sleep(0.005)\n"
        "time.sleep(600)\n"
    )
    t0 = time.monotonic()
    run = capped.run(nightly.reference, ["python3", "-c", code], out_dir=tmp_path, timeout_s=90)
    took = time.monotonic() - t0
    size = (tmp_path / "flood").stat().st_size
    print(f"\noutput cap {cap >> 20} MiB: killed after {took:.1f} s at {size / cap:.1f}x the cap")
    assert run.error is not None and "killed while running" in run.error
    assert not run.timed_out and took < 45
    assert size < 512 << 20


PROBE_CHILD = """
import sys
from relpipe.pipeline.cli import main
sys.exit(main(["images", "probe", sys.argv[1], "--timeout", "300"]))
"""


def test_a_killed_probe_leaves_a_container_the_next_command_reaps(
    runtime: Runtime, docker_host: str, registry: str, nightly: FixtureImage
) -> None:
    env = {**os.environ, "PYTHONPATH": str(source_root()), "DOCKER_HOST": docker_host}
    ref = f"{registry}/{nightly.repository}:{nightly.tag}"
    child = subprocess.Popen([sys.executable, "-c", PROBE_CHILD, ref], cwd=ROOT, env=env)
    box = None
    try:
        deadline = time.monotonic() + 120
        while box is None and time.monotonic() < deadline and child.poll() is None:
            for c in runtime.client.containers.list(
                all=True, filters={"label": f"{PID_LABEL}={child.pid}"}, sparse=True
            ):
                box = c.id
            time.sleep(0.05)
        assert box is not None, f"the probe made no container (exit {child.poll()})"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        left = runtime.client.containers.get(box)
        assert left.labels[OWNER_LABEL] == "relpipe"  # left behind by the killed command
        # The next command's runtime (diff, probe and qualify all start with from_env) reaps it.
        Runtime.from_env(docker_host=docker_host, gpu="none").client.close()
        assert not runtime.client.containers.list(all=True, filters={"id": box}, sparse=True)
    finally:
        if child.poll() is None:
            child.kill()
        if box is not None:
            for c in runtime.client.containers.list(all=True, filters={"id": box}, sparse=True):
                c.remove(force=True)
