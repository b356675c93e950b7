"""Start, reuse and stop the real services relpipe talks to: an OCI registry and dockerd.

Both are real programs from Debian (``docker-registry``, ``docker.io``), bound to loopback only.
The same code serves ``nox -s tests``, ``nox -s demo`` and ``.ci/run``:

* a service the environment already names is reused (``RELPIPE_REGISTRY=127.0.0.1:PORT``,
  ``DOCKER_HOST=unix:///...``) and never stopped by us;
* otherwise it is started with its state under ``state_dir`` (a temp dir by default, or a
  persistent folder so that a second demo run finds its images again) and stopped by PID;
* missing binaries are installed with apt only when running as root on Debian; otherwise the
  error is a one-line instruction. apt-get waits (bounded, saying so every 10 s) for the package
  manager's locks another apt or dpkg holds, and fails in one line naming the holder;
* every long step (an install, a server starting) prints a progress line at least every 10 s.

dockerd always runs with ``--bridge=none --iptables=false --ip6tables=false``: containers get no
network at all, and nothing here ever touches an address outside 127.0.0.0/8.

Every program starts through ``relpipe.core.process``: the servers as ``Daemon`` (own session,
output appended to ``<name>.log`` in the state folder, readiness polled, a failure one line quoting
that log), stopped by PID with ``process.stop``; apt-get, ``sinfo``, ``initdb`` and ``pg_ctl`` with
timeouts that kill.

``start_postgres`` / ``stop_postgres`` run a throwaway PostgreSQL cluster (Debian's
``postgresql``: ``initdb``, ``pg_ctl``) on 127.0.0.1 for the results-history tests; a URL in
``RELPIPE_HISTORY_PG`` names a running server instead.

With ``--slurm`` (or ``need_slurm=True``) a one-node Slurm cluster joins them: ``munged`` with its
own key and socket, ``slurmctld`` and ``slurmd`` (Debian's ``munge`` and ``slurm-wlm``) with a
``slurm.conf`` under the state folder, the node on 127.0.0.1; ``SLURM_CONF`` names it for the
client commands (``sbatch``, ``squeue``, ``scontrol``, ``scancel``) and is reused when already set.

Command line::

    python -m relpipe.images.services run [--state-dir DIR] [--no-docker] [--slurm] -- CMD ARGS...
    python -m relpipe.images.services start --state-dir DIR   # prints `export` lines; leaves
                                                              # them running
    python -m relpipe.images.services stop --state-dir DIR
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import http.client
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import jsonload, process
from ..core.heartbeat import EVERY_S, heartbeat

REGISTRY_ENV = "RELPIPE_REGISTRY"
DOCKER_ENV = "DOCKER_HOST"
SLURM_ENV = "SLURM_CONF"
SLURM_PARTITION = "relpipe"  # the one partition of the test cluster
SLURM_CPUS = 4  # declared (config_overrides): four array tasks run at once on a 2-core machine
STATE_FILE = "services.json"
START_TIMEOUT_S = 60.0
APT_TIMEOUT_S = 1800.0  # apt-get update + install of one package on a slow mirror
# The locks apt and dpkg take (fcntl write locks; dpkg's frontend lock first, as apt takes them).
APT_LOCKS = (
    "/var/lib/dpkg/lock-frontend",
    "/var/lib/dpkg/lock",
    "/var/lib/apt/lists/lock",
    "/var/cache/apt/archives/lock",
)
APT_LOCK_WAIT_S = 300.0  # an unattended upgrade finishes in minutes; longer is a stuck holder
PG_TIMEOUT_S = 300.0  # initdb, pg_ctl stop (pg_ctl start waits START_TIMEOUT_S itself)


class ServiceError(RuntimeError):
    """A service could not be found, installed or started; the message says what to do."""


@dataclass(kw_only=True)
class Services:
    """Addresses of running services and the PIDs we own (only those are ever stopped)."""

    registry: str | None = None  # "127.0.0.1:PORT"
    docker_host: str | None = None  # "unix:///path/docker.sock"
    slurm_conf: str | None = None  # "/path/slurm.conf"
    owned_pids: list[int] = field(default_factory=list)
    state_dir: str | None = None

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.registry:
            out[REGISTRY_ENV] = self.registry
        if self.docker_host:
            out[DOCKER_ENV] = self.docker_host
        if self.slurm_conf:
            out[SLURM_ENV] = self.slurm_conf
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


def _daemon(
    argv: Sequence[str],
    log: Path,
    ready: Callable[[], bool],
    what: str,
    env: dict[str, str] | None = None,
) -> int:
    """Start one server (`core.process.Daemon`), wait until `ready()`; its PID."""
    try:
        with heartbeat(f"relpipe: starting {what}"):
            daemon = process.Daemon(argv, log=log, env=env, what=what)
            daemon.wait_ready(ready, START_TIMEOUT_S)
    except process.ProcessError as exc:
        raise ServiceError(str(exc)) from None
    return daemon.pid


# -- installation -----------------------------------------------------------------------------

_PACKAGES = {
    "docker-registry": "docker-registry",
    "dockerd": "docker.io",
    "munged": "munge",
    "slurmctld": "slurm-wlm",
    "slurmd": "slurm-wlm",
    "shellcheck": "shellcheck",  # the tests check the sbatch script relpipe writes
    "chromium": "chromium",  # the tests render report.html in headless chromium
}


def lock_holder(path: str) -> str | None:
    """Who holds the fcntl write lock on `path` (as apt and dpkg lock): `"apt-get (pid 123)"`,
    or None when it is free or absent. Asked with F_GETLK: nothing is locked by asking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # no such lock file: no package manager has run, nothing to wait for
    try:
        query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError as exc:
        if exc.errno in (errno.EBADF, errno.EINVAL):
            return None
        raise
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack("hhqqi", answer)
    if kind == fcntl.F_UNLCK:
        return None
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            name = handle.read().strip()
    except OSError:
        name = "a process"
    return f"{name} (pid {pid})"


def wait_for_apt_locks(
    locks: Sequence[str] | None = None,
    timeout: float = APT_LOCK_WAIT_S,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    poll: float = 0.5,
) -> None:
    """Return once no package manager holds `locks` (default `APT_LOCKS`); say so every 10 s
    while waiting, and after `timeout` seconds fail in one line naming the holder."""
    locks = APT_LOCKS if locks is None else locks
    started = time.monotonic()
    said_at = -EVERY_S
    while True:
        held = next(((p, who) for p in locks if (who := lock_holder(p)) is not None), None)
        if held is None:
            return
        waited = time.monotonic() - started
        path, who = held
        if waited >= timeout:
            raise ServiceError(
                f"{path} is still held by {who} after {timeout:g} s: another package manager "
                f"is running; let it finish (or stop it) and run again"
            )
        if waited - said_at >= EVERY_S:
            say(
                f"relpipe: waiting for the package manager: {path} is held by {who} "
                f"({waited:.0f} s of at most {timeout:g} s)"
            )
            said_at = waited
        time.sleep(poll)


def ensure_binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    package = _PACKAGES[name]
    can_apt = os.geteuid() == 0 and shutil.which("apt-get") and Path("/etc/debian_version").exists()
    if not can_apt:
        raise ServiceError(
            f"{name} not found: install the Debian package '{package}' "
            f"(sudo apt-get install -y {package}) or name a running one in the environment "
            f"({REGISTRY_ENV}, {DOCKER_ENV}, {SLURM_ENV})"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        with heartbeat(f"relpipe: installing {package} with apt-get (for {name})"):
            for args in (["update", "-qq"], ["install", "-y", "-qq", package]):
                wait_for_apt_locks()
                # A lock taken between the wait and apt-get's start is waited for by apt itself.
                lock_wait = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S:.0f}"]
                process.run(["apt-get", *lock_wait, *args], env=env, timeout=APT_TIMEOUT_S)
    except process.ProcessError as exc:
        raise ServiceError(f"cannot install {package}: {exc}") from None
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
    scheme_ok = (
        (lambda: registry_alive(addr)) if "tls:" not in extra_config else (lambda: _port_open(addr))
    )
    argv = [binary, "serve", str(config)]
    return addr, _daemon(argv, state / f"{name}.log", scheme_ok, f"docker-registry on {addr}")


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
    host = f"unix://{sock}"
    return host, _daemon(args, log, lambda: docker_alive(host), "dockerd")


def slurm_alive(conf: str, timeout: float = 10.0) -> bool:
    """True when the cluster of `conf` answers and its node takes jobs (idle, mix or alloc)."""
    try:
        done = process.run(
            ["sinfo", "--noheader", "--responding", "--format=%t"],
            env=dict(os.environ, SLURM_CONF=conf),
            timeout=timeout,
            check=False,
        )
    except process.ProcessError:
        return False
    states = done.stdout.decode("utf-8", "replace").split()
    return done.returncode == 0 and any(s.rstrip("*~#") in ("idle", "mix", "alloc") for s in states)


def slurm_config(root: Path, node: str, ctld_port: int, slurmd_port: int, socket_path: Path) -> str:
    """slurm.conf of a one-node cluster on 127.0.0.1 with all its state under `root`."""
    return "\n".join(
        [
            "ClusterName=relpipe",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={socket_path}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "ReturnToService=2",
            # The node declares more CPUs than the machine has, on purpose (see SLURM_CPUS).
            "SlurmdParameters=config_overrides",
            "MinJobAge=3600",  # finished tasks stay visible to `scontrol show job` for an hour
            "KillWait=5",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={SLURM_CPUS} RealMemory=4000 State=UNKNOWN",
            f"PartitionName={SLURM_PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def start_slurm(state: Path) -> tuple[str, list[int]]:
    """Start munged, slurmctld and slurmd for a one-node cluster; returns (slurm.conf, pids)."""
    if os.geteuid() != 0:
        raise ServiceError("slurmd needs root: run as root, or set SLURM_CONF to a running cluster")
    binaries = {name: ensure_binary(name) for name in ("munged", "slurmctld", "slurmd")}
    # munge's socket path is limited like docker's: keep the runtime folder short.
    root = Path(tempfile.mkdtemp(prefix="rp-slurm-"))
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(mode=0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = root / "munge" / "munge.sock"
    node = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(slurm_config(root, node, _free_port(), _free_port(), sock))
    state.mkdir(parents=True, exist_ok=True)
    (state / "slurm-runtime").write_text(f"{root}\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    pids: list[int] = []
    commands = [
        (
            "munged",
            [
                binaries["munged"],
                "--foreground",
                "--force",
                f"--socket={sock}",
                f"--key-file={key}",
                f"--log-file={root / 'munged.log'}",
                f"--pid-file={root / 'munge' / 'munged.pid'}",
                f"--seed-file={root / 'munge' / 'seed'}",
            ],
            lambda: sock.exists(),
        ),
        ("slurmctld", [binaries["slurmctld"], "-D", "-i"], lambda: _port_open_conf(conf, "ctld")),
        ("slurmd", [binaries["slurmd"], "-D", "-N", node], lambda: slurm_alive(str(conf), 2.0)),
    ]
    try:
        for name, argv, ready in commands:
            pids.append(_daemon(argv, state / f"{name}.log", ready, name, env))
    except BaseException:
        for pid in reversed(pids):
            process.stop(pid)
        raise
    return str(conf), pids


def _port_open_conf(conf: Path, which: str) -> bool:
    for line in conf.read_text().splitlines():
        if which == "ctld" and line.startswith("SlurmctldPort="):
            return _port_open(f"127.0.0.1:{line.split('=', 1)[1]}")
    return False


def _pg_bin(name: str) -> str:
    """A PostgreSQL server program (Debian keeps them off PATH, under /usr/lib/postgresql/N/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda p: p.parts[-3])
    if not found and shutil.which(name) is None:
        _PACKAGES.setdefault("pg_ctl", "postgresql")
        ensure_binary("pg_ctl")  # installs Debian's postgresql when allowed, else says how
        found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else shutil.which(name) or name


def _as_owner(argv: list[str]) -> list[str]:
    # initdb refuses root: as root the cluster belongs to `nobody`
    return ["runuser", "-u", "nobody", "--", *argv] if os.geteuid() == 0 else argv


def start_postgres(state: Path) -> tuple[str, Path]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (initdb + pg_ctl): its URL and data folder.

    `state` must be traversable by `nobody` when running as root (a 0o711 folder under /tmp)."""
    data = state / "pgdata"
    data.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(data, "nobody")
        data.chmod(0o700)
    port = _free_port()
    log = data / "log"
    init = [_pg_bin("initdb"), "-D", str(data), "-U", "relpipe", "--auth=trust", "-E", "UTF8"]
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c fsync=off"
    start_cmd = [_pg_bin("pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts]
    start_cmd += ["-w", "-t", str(int(START_TIMEOUT_S)), "start"]
    # pg_ctl waits -t seconds itself; the margin is for its own start-up.
    for argv, timeout in ((init, PG_TIMEOUT_S), (start_cmd, START_TIMEOUT_S + 30)):
        try:
            done = process.run(_as_owner(argv), timeout=timeout, check=False)
        except process.ProcessError as exc:
            raise ServiceError(f"{exc} (log: {log})") from None
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [b""]
            raise ServiceError(
                f"{Path(argv[0]).name} failed: {process.one_line(said[0])} (log: {log})"
            )
    return f"postgresql://relpipe@127.0.0.1:{port}/postgres", data


def stop_postgres(data: Path) -> None:
    """Stop the cluster `start_postgres` started (pg_ctl stop, fast mode)."""
    stop_cmd = [_pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
    with contextlib.suppress(process.ProcessError):  # best effort, like the PIDs: never raises
        process.run(_as_owner(stop_cmd), timeout=PG_TIMEOUT_S, check=False)


def stop_pid(pid: int, grace: float = 20.0) -> None:
    """Stop one process we started (SIGTERM, then SIGKILL after `grace`), e.g. an extra registry."""
    process.stop(pid, grace)


def start(
    state_dir: Path | None = None,
    need_registry: bool = True,
    need_docker: bool = True,
    need_slurm: bool = False,
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
        if need_slurm:
            named = os.environ.get(SLURM_ENV)
            if named:
                if not slurm_alive(named):
                    raise ServiceError(f"{SLURM_ENV}={named}: the cluster does not answer `sinfo`")
                services.slurm_conf = named
            else:
                services.slurm_conf, pids = start_slurm(state)
                services.owned_pids += pids
    except BaseException:
        stop(services)
        raise
    return services


def stop(services: Services) -> None:
    for pid in reversed(services.owned_pids):
        process.stop(pid)
    services.owned_pids.clear()


@contextlib.contextmanager
def running(
    state_dir: Path | None = None,
    need_registry: bool = True,
    need_docker: bool = True,
    need_slurm: bool = False,
) -> Iterator[Services]:
    services = start(state_dir, need_registry, need_docker, need_slurm)
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
        p.add_argument("--slurm", action="store_true", help="also a one-node Slurm cluster")
    run_p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    try:
        if args.command == "stop":
            if args.state_dir is None:
                parser.error("stop needs --state-dir")
            saved = jsonload.loads((args.state_dir / STATE_FILE).read_text())
            stop(Services(**saved))
            (args.state_dir / STATE_FILE).unlink()
            return 0
        services = start(args.state_dir, not args.no_registry, not args.no_docker, args.slurm)
    except (ServiceError, OSError, process.ProcessError) as exc:
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
        return process.call(cmd, env=env)  # the user's command: no timeout but their own
    except process.ProcessError as exc:
        print(f"relpipe services: {exc}", file=sys.stderr)
        return 2
    finally:
        stop(services)


if __name__ == "__main__":
    sys.exit(main())
