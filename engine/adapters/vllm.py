"""vLLM: `vllm serve` with synthetic rejection sampling pinned to a golden acceptance length."""

from __future__ import annotations

import json
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
    spec_method: str = "eagle3",
    num_speculative_tokens: int = 3,
    extra: Sequence[str] = (),
) -> ServerSpec:
    """argv of `vllm serve`; with `acceptance`, a --speculative-config using synthetic rejection
    sampling whose `synthetic_acceptance_length` is the golden AL (tokens per step)."""
    argv = [
        "vllm",
        "serve",
        model,
        "--host",
        host,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel),
    ]
    if kv_cache_dtype is not None:
        argv += ["--kv-cache-dtype", kv_cache_dtype]
    if acceptance is not None:
        config = {
            "method": spec_method,
            "num_speculative_tokens": num_speculative_tokens,
            "rejection_sample_method": "synthetic",
            # a JSON number written from the exact decimal text (no float round trip)
            "synthetic_acceptance_length": "@AL@",
        }
        text = json.dumps(config, sort_keys=True).replace('"@AL@"', acceptance_length(acceptance))
        argv += ["--speculative-config", text]
    return spec("vllm", argv + list(extra), {}, host, port)
