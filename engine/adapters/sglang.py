"""SGLang: `python -m sglang.launch_server` with the simulated-acceptance environment."""

from __future__ import annotations

from collections.abc import Sequence

from relpipe.engine.adapters.server import ServerSpec, acceptance_length, spec


def server(
    model: str,
    port: int,
    *,
    host: str = "127.0.0.1",
    kv_cache_dtype: str | None = None,
    tensor_parallel: int = 1,
    acceptance: object | None = None,
    python: str = "python3",
    extra: Sequence[str] = (),
) -> ServerSpec:
    """argv of sglang.launch_server; with `acceptance`, SGLANG_SIMULATE_ACC_* make every verify
    step accept the golden AL using the real draft tokens (match-expected)."""
    argv = [
        python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--host",
        host,
        "--port",
        str(port),
        "--tp",
        str(tensor_parallel),
    ]
    if kv_cache_dtype is not None:
        argv += ["--kv-cache-dtype", kv_cache_dtype]
    env: dict[str, str] = {}
    if acceptance is not None:
        env = {
            "SGLANG_SIMULATE_ACC_LEN": acceptance_length(acceptance),
            "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
            "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
        }
    return spec("sglang", argv + list(extra), env, host, port)
