"""`images.services` starts and stops real servers (Debian's docker-registry here) through
`core.process`: readiness polled, failures one line quoting the server's log, only our PIDs
stopped, and the `run`/`start`/`stop` command line as `nox` and `.ci/run` use it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from corpus import unavailable

from relpipe.core.heartbeat import heartbeat
from relpipe.images import services as svc

pytestmark = pytest.mark.services


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """No registry named by the environment: the module starts its own."""
    if not shutil.which("docker-registry"):
        unavailable("docker-registry is not installed (Debian package docker-registry)")
    monkeypatch.delenv(svc.REGISTRY_ENV, raising=False)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return stat.rpartition(b")")[2].split()[:1] == [b"Z"]  # exited, its parent gone


def test_a_registry_started_answers_and_stop_pid_ends_it(
    own_registry: None, tmp_path: Path
) -> None:
    addr, pid = svc.start_registry(tmp_path, name="mine")
    try:
        assert addr.startswith("127.0.0.1:") and svc.registry_alive(addr)
        assert (tmp_path / "mine.yml").is_file() and (tmp_path / "mine.log").is_file()
    finally:
        svc.stop_pid(pid)
    assert _gone(pid) and not svc.registry_alive(addr)


def test_a_server_that_dies_at_start_is_one_line_naming_its_log(
    own_registry: None, tmp_path: Path
) -> None:
    # A config the registry refuses: it exits at once and says why in its log.
    with pytest.raises(svc.ServiceError) as info:
        svc.start_registry(tmp_path, "storage:\n  nosuchdriver: {}\n", name="bad")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("docker-registry on 127.0.0.1:") and " exited with " in message
    assert "StorageDriver not registered: nosuchdriver" in message  # its panic, not the trace
    assert message.endswith(f"(log: {tmp_path / 'bad.log'})")


def test_running_reuses_a_named_registry_and_owns_only_what_it_started(
    registry: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(svc.REGISTRY_ENV, registry)
    with svc.running(tmp_path / "reuse", need_docker=False) as reused:
        assert reused.registry == registry and reused.owned_pids == []
    assert svc.registry_alive(registry)  # never stopped by us
    monkeypatch.delenv(svc.REGISTRY_ENV)
    with svc.running(tmp_path / "own", need_docker=False) as own:
        assert own.registry != registry and len(own.owned_pids) == 1
        (pid,) = own.owned_pids
        assert own.registry and svc.registry_alive(own.registry)
    assert _gone(pid) and own.owned_pids == []


def test_run_gives_the_command_the_services_and_returns_its_exit_code(
    own_registry: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    check = (
        "import os, sys, urllib.request; "
        "addr = os.environ['RELPIPE_REGISTRY']; "
        "print(addr); "
        "sys.exit(7 if urllib.request.urlopen(f'http://{addr}/v2/').status == 200 else 1)"
    )
    args = ["run", "--no-docker", "--state-dir", str(tmp_path), "--", sys.executable, "-c", check]
    assert svc.main(args) == 7
    addr = capfd.readouterr().out.strip()
    assert addr.startswith("127.0.0.1:") and not svc.registry_alive(addr)  # stopped after it
    missing = ["run", "--no-docker", "--state-dir", str(tmp_path), "--", "no-such-command-xyz"]
    assert svc.main(missing) == 2
    err = capfd.readouterr().err
    assert err.splitlines()[-1].startswith("relpipe services: cannot run no-such-command-xyz (")


def test_start_leaves_it_running_for_a_later_stop_from_another_process(
    own_registry: None, tmp_path: Path
) -> None:
    """`start` and `stop` are two processes: `stop` has only the PIDs `start` saved."""
    env = {k: v for k, v in os.environ.items() if k != svc.REGISTRY_ENV}
    command = [sys.executable, "-m", "relpipe.images.services"]
    state = ["--state-dir", str(tmp_path)]
    started = subprocess.run(
        [*command, "start", "--no-docker", *state], env=env, capture_output=True, text=True
    )
    assert started.returncode == 0, started.stderr
    (line,) = started.stdout.splitlines()
    addr = line.removeprefix(f"export {svc.REGISTRY_ENV}=")
    (pid,) = json.loads((tmp_path / svc.STATE_FILE).read_text())["owned_pids"]
    assert svc.registry_alive(addr)  # outlived the process that started it
    stopped = subprocess.run([*command, "stop", *state], env=env, capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stderr
    assert _gone(pid) and not (tmp_path / svc.STATE_FILE).exists()


def test_slurm_alive_answers_for_a_cluster_and_not_for_a_missing_one(
    slurm_conf: str, tmp_path: Path
) -> None:
    assert svc.slurm_alive(slurm_conf)
    assert not svc.slurm_alive(str(tmp_path / "no-such-slurm.conf"), timeout=10)


def test_a_failed_apt_install_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """apt-get runs through core.process: its refusal is one line (apt-get itself is replaced
    on PATH by one that refuses, so nothing is installed)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text(
        "#!/bin/sh\necho 'E: Unable to locate package nope-pkg' >&2\nexit 100\n"
    )
    (fake / "apt-get").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(svc._PACKAGES, "nope-tool-xyz", "nope-pkg")
    with pytest.raises(svc.ServiceError) as info:
        svc.ensure_binary("nope-tool-xyz")
    if os.geteuid() == 0 and Path("/etc/debian_version").exists():
        assert str(info.value) == (
            "cannot install nope-pkg: apt-get failed: E: Unable to locate package nope-pkg"
        )
    else:  # no apt allowed here: the instruction instead
        assert str(info.value).startswith("nope-tool-xyz not found: install the Debian package")


# A holder of the package manager's lock as apt and dpkg take it: an fcntl write lock.
HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "w")
fcntl.lockf(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _hold(lock: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _name(pid: int) -> str:
    return f"{Path(f'/proc/{pid}/comm').read_text().strip()} (pid {pid})"


def test_apt_waits_for_a_held_dpkg_lock_saying_who_holds_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 36: another apt-get holding the dpkg lock failed the demo at once. Now the install
    waits (saying so, naming the holder), then runs apt-get, which waits itself for a lock taken
    after that (DPkg::Lock::Timeout). apt-get is replaced on PATH: nothing is installed."""
    lock = tmp_path / "lock-frontend"
    lock.touch()
    assert svc.lock_holder(str(lock)) is None and svc.lock_holder(str(tmp_path / "none")) is None
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "calls"
    (fake / "apt-get").write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\nprintf "#!/bin/sh\\n" > {fake}/waited-tool\n'
        f"chmod +x {fake}/waited-tool\n"
    )
    (fake / "apt-get").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(svc._PACKAGES, "waited-tool", "waited-pkg")
    monkeypatch.setattr(svc, "APT_LOCKS", (str(lock),))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    if not Path("/etc/debian_version").exists():
        pytest.skip("apt installs only on Debian")
    holder = _hold(lock, 3)
    holder_name = _name(holder.pid)
    assert svc.lock_holder(str(lock)) == holder_name
    capfd.readouterr()
    started = time.monotonic()
    found = svc.ensure_binary("waited-tool")
    assert time.monotonic() - started >= 2  # apt-get ran only after the lock was released
    holder.wait()
    assert found == str(fake / "waited-tool")
    err = capfd.readouterr().err.splitlines()
    assert err[0] == "relpipe: installing waited-pkg with apt-get (for waited-tool) ..."
    assert err[1] == (
        f"relpipe: waiting for the package manager: {lock} is held by {holder_name} "
        f"(0 s of at most {svc.APT_LOCK_WAIT_S:g} s)"
    )
    assert err[-1].startswith("relpipe: installing waited-pkg with apt-get (for waited-tool): done")
    assert calls.read_text().splitlines() == [
        "-o DPkg::Lock::Timeout=300 update -qq",
        "-o DPkg::Lock::Timeout=300 install -y -qq waited-pkg",
    ]


def test_a_dpkg_lock_never_released_is_one_line_naming_its_holder(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.touch()
    holder = _hold(lock, 60)
    said: list[str] = []
    try:
        with pytest.raises(svc.ServiceError) as info:
            svc.wait_for_apt_locks([str(lock)], timeout=1.5, say=said.append, poll=0.1)
    finally:
        holder.kill()
        holder.wait()
    assert str(info.value) == (
        f"{lock} is still held by {_name_of_dead(said)} after 1.5 s: another package manager is "
        "running; let it finish (or stop it) and run again"
    )
    assert len(said) == 1 and f"(pid {holder.pid})" in said[0]  # said once, then failed


def _name_of_dead(said: list[str]) -> str:
    """The holder as the waiting line named it (the process is gone by the time we compare)."""
    return said[0].split(" is held by ", 1)[1].rsplit(" (", 1)[0]


def test_heartbeat_says_what_runs_every_few_seconds() -> None:
    said: list[str] = []
    with heartbeat("building x", every=0.2, say=said.append):
        time.sleep(0.75)
    assert said[0] == "building x ..."
    assert said[1].startswith("building x: still running (") and len(said) >= 4
    assert said[-1].startswith("building x: done (")
    with pytest.raises(KeyError), heartbeat("failing", every=5, say=said.append):
        raise KeyError("x")
    assert said[-1].startswith("failing: stopped (")
