"""Engine servers as processes: the launch record, acceptance-length values, health and shutdown.

Each engine adapter returns a `ServerSpec` (exact argv and the environment it adds); this module
starts it in its own process group, polls its health endpoint over loopback HTTP, and shuts it
down (SIGTERM to the group, SIGKILL after a grace period). No shell is involved anywhere.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from relpipe.engine.errors import EngineError

MAX_ACCEPTANCE_LENGTH = Decimal(64)


@dataclass(frozen=True)
class ServerSpec:
    """How to start one engine's OpenAI-compatible server."""

    engine: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    host: str = "127.0.0.1"
    port: int = 8000
    health_path: str = "/health"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def spec(engine: str, argv: list[str], env: dict[str, str], host: str, port: int) -> ServerSpec:
    """Validate and build a ServerSpec (ports and hosts are user input)."""
    if not 0 < port < 65536:
        raise EngineError(f"{engine}: port {port} is not in 1..65535")
    if not host or any(ch.isspace() for ch in host):
        raise EngineError(f"{engine}: host {host!r} is not a host name or address")
    return ServerSpec(engine=engine, argv=tuple(argv), env=dict(env), host=host, port=port)


def _decimal(value: object) -> Decimal:
    try:
        # str() first: a float such as 2.27 must become Decimal('2.27'), not its binary expansion.
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise EngineError(f"acceptance length {value!r} is not a number") from None
    if not number.is_finite() or not Decimal(1) <= number <= MAX_ACCEPTANCE_LENGTH:
        raise EngineError(
            f"acceptance length {value!r} must be between 1 and {MAX_ACCEPTANCE_LENGTH}"
        )
    return number


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return text


def acceptance_length(value: object) -> str:
    """The golden acceptance length (AL: tokens per step, >= 1) as an exact decimal string."""
    return _plain(_decimal(value))


def accepted_drafts(value: object) -> str:
    """AL - 1: the accepted draft tokens per step (TensorRT-LLM's forced count), exact."""
    return _plain(_decimal(value) - 1)


def launch(server: ServerSpec, log_path: str) -> subprocess.Popen[bytes]:
    """Start the server in a new process group, output to `log_path`."""
    env = dict(os.environ, **server.env)
    with open(log_path, "ab") as log:
        try:
            return subprocess.Popen(
                list(server.argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise EngineError(
                f"{server.engine}: cannot start {server.argv[0]!r} ({exc.strerror})"
            ) from exc


def healthy(server: ServerSpec, timeout: float = 2.0) -> bool:
    """True when GET health_path answers 200."""
    try:
        with urllib.request.urlopen(server.base_url + server.health_path, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_healthy(
    server: ServerSpec, proc: subprocess.Popen[bytes] | None, timeout: float, interval: float = 0.2
) -> None:
    """Poll health until it answers 200; EngineError when the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise EngineError(
                f"{server.engine}: server exited with code {proc.returncode} before it was healthy"
            )
        if healthy(server):
            return
        time.sleep(interval)
    raise EngineError(
        f"{server.engine}: not healthy at {server.base_url}{server.health_path} after {timeout:g}s"
    )


def shutdown(proc: subprocess.Popen[bytes], grace: float = 10.0) -> int:
    """SIGTERM the server's process group, SIGKILL it after `grace` seconds; return the exit code."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    return proc.returncode
