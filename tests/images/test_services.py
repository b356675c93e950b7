"""`images.services` starts and stops real servers (Debian's docker-registry here) through
`core.process`: readiness polled, failures one line quoting the server's log, only our PIDs
stopped, and the `run`/`start`/`stop` command line as `nox` and `.ci/run` use it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import unavailable

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
