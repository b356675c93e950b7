"""Start, reuse and stop the real services relpipe talks to: an OCI registry and dockerd.

Both are real programs from Debian (``docker-registry``, ``docker.io``), bound to loopback only.
The same code serves ``nox -s tests``, ``nox -s demo`` and ``.ci/run``:

* a service the environment already names is reused (``RELPIPE_REGISTRY=127.0.0.1:PORT``,
  ``DOCKER_HOST=unix:///...``) and never stopped by us;
* otherwise it is started with its state under ``state_dir`` (a temp dir by default, or a
  persistent folder so that a second demo run finds its images again) and stopped by PID;
* missing binaries are installed with apt only when running as root on Debian; otherwise the
  error is a one-line instruction.

dockerd always runs with ``--bridge=none --iptables=false --ip6tables=false``: containers get no
network at all, and nothing here ever touches an address outside 127.0.0.0/8.

Command line::

    python -m relpipe.images.services run [--state-dir DIR] [--no-docker] -- CMD ARGS...
    python -m relpipe.images.services start --state-dir DIR   # prints `export` lines, leaves them running
    python -m relpipe.images.services stop --state-dir DIR
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REGISTRY_ENV = "RELPIPE_REGISTRY"
DOCKER_ENV = "DOCKER_HOST"
STATE_FILE = "services.json"
START_TIMEOUT_S = 60.0


class ServiceError(RuntimeError):
    """A service could not be found, installed or started; the message says what to do."""


@dataclass
class Services:
    """Addresses of running services and the PIDs we own (only those are ever stopped)."""

    registry: str | None = None  # "127.0.0.1:PORT"
    docker_host: str | None = None  # "unix:///path/docker.sock"
    owned_pids: list[int] = field(default_factory=list)
    state_dir: str | None = None

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.registry:
            out[REGISTRY_ENV] = self.registry
        if self.docker_host:
            out[DOCKER_ENV] = self.docker_host
        return out


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


# -- probes -----------------------------------------------------------------------------------


def registry_alive(addr: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{addr}/v2/", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except urllib.error.HTTPError as exc:
        return exc.code == 401  # an auth-protected registry is alive too
    except OSError:
        return False


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def docker_alive(docker_host: str, timeout: float = 2.0) -> bool:
    if not docker_host.startswith("unix://"):
        return False
    conn = _UnixHTTPConnection(docker_host[len("unix://") :], timeout)
    try:
        conn.request("GET", "/_ping")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _wait(check: object, what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            raise ServiceError(
                f"{what} exited with {proc.returncode}: {' '.join(tail)} (log: {log})"
            )
        time.sleep(0.1)
    _stop_pid(proc.pid)
    raise ServiceError(f"{what} did not become ready in {START_TIMEOUT_S:.0f}s (log: {log})")


# -- installation -----------------------------------------------------------------------------

_PACKAGES = {"docker-registry": "docker-registry", "dockerd": "docker.io"}


def ensure_binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    package = _PACKAGES[name]
    can_apt = os.geteuid() == 0 and shutil.which("apt-get") and Path("/etc/debian_version").exists()
    if not can_apt:
        raise ServiceError(
            f"{name} not found: install the Debian package '{package}' "
            f"(sudo apt-get install -y {package}) or set {REGISTRY_ENV}/{DOCKER_ENV} to a running one"
        )
    print(f"relpipe: installing {package} with apt-get", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True, env=env)
    found = shutil.which(name)
    if not found:
        raise ServiceError(f"apt-get installed {package} but {name} is still not on PATH")
    return found


# -- starting ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def registry_config(root: Path, addr: str, extra: str = "") -> str:
    """The distribution registry's YAML config: filesystem storage, loopback only, deletes on."""
    return (
        "version: 0.1\n"
        "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
        "storage:\n"
        f"  filesystem:\n    rootdirectory: {root}\n"
        "  delete:\n    enabled: true\n"
        f"http:\n  addr: {addr}\n"
        f"{extra}"
    )


def start_registry(state: Path, extra_config: str = "", name: str = "registry") -> tuple[str, int]:
    """Start a registry on 127.0.0.1 with storage under ``state``; returns (addr, pid)."""
    binary = ensure_binary("docker-registry")
    state.mkdir(parents=True, exist_ok=True)
    addr = f"127.0.0.1:{_free_port()}"
    config = state / f"{name}.yml"
    config.write_text(registry_config(state / f"{name}-storage", addr, extra_config))
    log = state / f"{name}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [binary, "serve", str(config)], stdout=out, stderr=out, start_new_session=True
        )
    scheme_ok = (
        (lambda: registry_alive(addr)) if "tls:" not in extra_config else (lambda: _port_open(addr))
    )
    _wait(scheme_ok, f"docker-registry on {addr}", proc, log)
    return addr, proc.pid


def _port_open(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
        return True
    return False


def start_dockerd(state: Path) -> tuple[str, int]:
    """Start a rootful dockerd with its own roots and socket and no networking; (host, pid)."""
    if os.geteuid() != 0:
        raise ServiceError(
            "dockerd needs root: run as root, or start docker yourself and set DOCKER_HOST"
        )
    binary = ensure_binary("dockerd")
    # Unix socket paths are limited to 108 bytes, and containerd nests deep under exec-root,
    # so the runtime folders live under a short path keyed by the state dir.
    short = Path(tempfile.gettempdir()) / f"rp-{abs(hash(str(state.resolve()))) % 10**8}"
    short.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    sock = short / "docker.sock"
    log = state / "dockerd.log"
    args = [
        binary,
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        f"--data-root={state / 'docker-data'}",
        f"--exec-root={short / 'exec'}",
        f"--pidfile={short / 'docker.pid'}",
        f"--host=unix://{sock}",
        "--storage-driver=overlay2",
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=out, start_new_session=True)
    host = f"unix://{sock}"
    _wait(lambda: docker_alive(host), "dockerd", proc, log)
    return host, proc.pid


def _stop_pid(pid: int, grace: float = 20.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (started by `start`): poll existence
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            done = 0
        if done == pid:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop_pid(pid: int, grace: float = 20.0) -> None:
    """Stop one process we started (SIGTERM, then SIGKILL after `grace`), e.g. an extra registry."""
    _stop_pid(pid, grace)


def start(
    state_dir: Path | None = None, need_registry: bool = True, need_docker: bool = True
) -> Services:
    """Reuse what the environment names, start the rest."""
    state = Path(state_dir) if state_dir else Path(tempfile.mkdtemp(prefix="relpipe-services-"))
    services = Services(state_dir=str(state))

    def reuse_or_start(
        env: str,
        alive: Callable[[str], bool],
        probe: str,
        start_one: Callable[[Path], tuple[str, int]],
    ) -> str:
        named = os.environ.get(env)
        if named:
            if not alive(named):
                raise ServiceError(f"{env}={named} does not answer {probe}")
            return named
        address, pid = start_one(state)
        services.owned_pids.append(pid)
        return address

    try:
        if need_registry:
            services.registry = reuse_or_start(
                REGISTRY_ENV, registry_alive, "on /v2/", start_registry
            )
        if need_docker:
            services.docker_host = reuse_or_start(DOCKER_ENV, docker_alive, "/_ping", start_dockerd)
    except BaseException:
        stop(services)
        raise
    return services


def stop(services: Services) -> None:
    for pid in reversed(services.owned_pids):
        _stop_pid(pid)
    services.owned_pids.clear()


@contextlib.contextmanager
def running(
    state_dir: Path | None = None, need_registry: bool = True, need_docker: bool = True
) -> Iterator[Services]:
    services = start(state_dir, need_registry, need_docker)
    try:
        yield services
    finally:
        stop(services)


# -- command line -----------------------------------------------------------------------------


def _save(services: Services, state: Path) -> None:
    (state / STATE_FILE).write_text(json.dumps(services.__dict__, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m relpipe.images.services", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="start services, run CMD with their env, stop them")
    start_p = sub.add_parser("start", help="start services and leave them running")
    stop_p = sub.add_parser("stop", help="stop services started by `start`")
    for p in (run_p, start_p, stop_p):
        p.add_argument("--state-dir", type=Path, default=None)
    for p in (run_p, start_p):
        p.add_argument("--no-docker", action="store_true", help="start only the registry")
        p.add_argument("--no-registry", action="store_true", help="start only dockerd")
    run_p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    try:
        if args.command == "stop":
            if args.state_dir is None:
                parser.error("stop needs --state-dir")
            saved = json.loads((args.state_dir / STATE_FILE).read_text())
            stop(Services(**saved))
            (args.state_dir / STATE_FILE).unlink()
            return 0
        services = start(args.state_dir, not args.no_registry, not args.no_docker)
    except (ServiceError, OSError, subprocess.CalledProcessError) as exc:
        print(f"relpipe services: {exc}", file=sys.stderr)
        return 2

    if args.command == "start":
        assert services.state_dir is not None
        _save(services, Path(services.state_dir))
        for key, value in services.env().items():
            print(f"export {key}={value}")
        return 0

    cmd = [c for c in args.cmd if c != "--"] if args.cmd[:1] == ["--"] else list(args.cmd)
    if not cmd:
        stop(services)
        parser.error("run needs a command after --")
    try:
        env = dict(os.environ, **services.env())
        print(
            f"relpipe services: {' '.join(f'{k}={v}' for k, v in services.env().items())}",
            file=sys.stderr,
        )
        return subprocess.call(cmd, env=env)
    finally:
        stop(services)


if __name__ == "__main__":
    sys.exit(main())
