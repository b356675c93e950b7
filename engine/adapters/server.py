"""Engine servers as processes: the launch request, acceptance-length values, health, shutdown.

A `Launch` is what the user asks for (model, TP, KV dtype, speculative method and K, draft
model, golden acceptance length); `launch()` validates it once (AL within [1, K+1], a draft model
where the method needs one). Each engine adapter turns it into a `ServerSpec` (exact argv, the
environment it adds, any config file it needs); this module starts that in its own process
group, polls the health endpoint over loopback HTTP, and shuts it down (SIGTERM to the group,
SIGKILL after a grace period). No shell is involved anywhere.
"""

from __future__ import annotations

import os
import signal
import subprocess  # not relpipe.core.process: engine/ runs in foreign images (stdlib only)
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from ..errors import EngineError
from ..files import write_atomic

MAX_ACCEPTANCE_LENGTH = Decimal(64)
MAX_SPECULATIVE_TOKENS = 63  # K + 1 <= MAX_ACCEPTANCE_LENGTH
# Speculative methods as InferenceX names them (ATOM's `--method` choices in arg_utils.py).
SPEC_METHODS = ("mtp", "eagle3", "dspark")
KV_DTYPES = ("bf16", "fp8")  # relpipe's engine-neutral KV names; each adapter spells them


@dataclass(frozen=True, kw_only=True)
class Speculative:
    """Speculative decoding: the method, K draft tokens per step, and a standalone draft model."""

    method: str
    tokens: int
    draft_model: str | None = None


@dataclass(frozen=True, kw_only=True)
class Launch:
    """One engine server as the user asks for it; build it with `launch()` (validated)."""

    model: str
    port: int = 8000
    host: str = "127.0.0.1"
    tensor_parallel: int = 1
    kv_dtype: str | None = None
    spec: Speculative | None = None
    acceptance: str | None = None  # golden AL as exact decimal text, validated against K
    served_model_name: str | None = None
    python: str = "python3"
    extra: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ServerSpec:
    """How to start one engine's OpenAI-compatible server."""

    engine: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    files: dict[str, str] = field(default_factory=dict)  # path -> text written before launch
    host: str = "127.0.0.1"
    port: int = 8000
    health_path: str = "/health"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def to_json(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "argv": list(self.argv),
            "env": dict(self.env),
            "files": dict(self.files),
            "base_url": self.base_url,
            "health_path": self.health_path,
        }


def parse_spec(text: str, draft_model: str | None = None) -> Speculative:
    """`METHOD:K` (e.g. `mtp:3`, `eagle3:3`) -> Speculative; EngineError naming what is wrong."""
    method, sep, count = text.partition(":")
    if not sep or method not in SPEC_METHODS:
        raise EngineError(
            f"--spec {text!r}: expected METHOD:K with METHOD one of {', '.join(SPEC_METHODS)}"
        )
    if not count.isdigit() or not 1 <= int(count) <= MAX_SPECULATIVE_TOKENS:
        raise EngineError(f"--spec {text!r}: K must be an integer in 1..{MAX_SPECULATIVE_TOKENS}")
    if method == "eagle3" and not draft_model:
        # ATOM raises on this (arg_utils.py) and vLLM refuses an eagle3 config without `model`.
        raise EngineError("--spec eagle3 needs --draft-model (the EAGLE3 draft checkpoint)")
    if method == "mtp" and draft_model:
        raise EngineError("--spec mtp takes no --draft-model (MTP heads ship in the target)")
    return Speculative(method=method, tokens=int(count), draft_model=draft_model)


def launch(
    model: str,
    *,
    port: int = 8000,
    host: str = "127.0.0.1",
    tensor_parallel: int = 1,
    kv_dtype: str | None = None,
    spec: Speculative | None = None,
    acceptance: object | None = None,
    served_model_name: str | None = None,
    python: str = "python3",
    extra: tuple[str, ...] = (),
) -> Launch:
    """Validate a launch request once, before any engine-specific spelling."""
    if not model or "\x00" in model:
        raise EngineError("--model must name a model path or id")
    if not 0 < port < 65536:
        raise EngineError(f"port {port} is not in 1..65535")
    if not host or any(ch.isspace() for ch in host):
        raise EngineError(f"host {host!r} is not a host name or address")
    if not 1 <= tensor_parallel <= 1024:
        raise EngineError(f"tensor parallel size {tensor_parallel} is not in 1..1024")
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise EngineError(f"--kv-dtype {kv_dtype!r}: use one of {', '.join(KV_DTYPES)}")
    al = None
    if acceptance is not None:
        if spec is None:
            raise EngineError("--al needs --spec METHOD:K (an acceptance length without K is moot)")
        al = acceptance_length(acceptance, spec.tokens)
    return Launch(
        model=model,
        port=port,
        host=host,
        tensor_parallel=tensor_parallel,
        kv_dtype=kv_dtype,
        spec=spec,
        acceptance=al,
        served_model_name=served_model_name,
        python=python,
        extra=tuple(extra),
    )


def spec(
    engine: str,
    request: Launch,
    argv: list[str],
    env: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
) -> ServerSpec:
    """The ServerSpec of `request` with the engine's argv (user `extra` flags appended last)."""
    return ServerSpec(
        engine=engine,
        argv=tuple(argv) + request.extra,
        env=dict(env or {}),
        files=dict(files or {}),
        host=request.host,
        port=request.port,
    )


def _decimal(value: object, tokens: int | None = None) -> Decimal:
    try:
        # str() first: a float such as 2.27 must become Decimal('2.27'), not its binary expansion.
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise EngineError(f"acceptance length {value!r} is not a number") from None
    # AL counts the target's own token plus accepted drafts: 1 <= AL <= K + 1 (ATOM's help text).
    top = MAX_ACCEPTANCE_LENGTH if tokens is None else Decimal(tokens + 1)
    if not number.is_finite() or not Decimal(1) <= number <= top:
        where = "" if tokens is None else f" (K = {tokens} speculative tokens)"
        raise EngineError(f"acceptance length {value!r} must be in [1, {top}]{where}")
    return number


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return text


def acceptance_length(value: object, tokens: int | None = None) -> str:
    """The golden acceptance length (AL: tokens per step, in [1, K+1]) as exact decimal text."""
    return _plain(_decimal(value, tokens))


def accepted_drafts(value: object, tokens: int | None = None) -> str:
    """AL - 1: the accepted draft tokens per step (TensorRT-LLM's forced count), exact."""
    return _plain(_decimal(value, tokens) - 1)


def start(server: ServerSpec, log_path: str) -> subprocess.Popen[bytes]:
    """Write the server's config files, start it in a new process group, output to `log_path`."""

    for path, text in server.files.items():
        write_atomic(path, text.encode("utf-8"))
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
    """SIGTERM the server's process group, SIGKILL it after `grace` s; return the exit code."""
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
