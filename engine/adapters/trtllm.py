"""TensorRT-LLM: `trtllm-serve`, forcing the accepted draft count (AL - 1) through the environment."""

from __future__ import annotations

from collections.abc import Sequence

from relpipe.engine.adapters.server import ServerSpec, accepted_drafts, spec
from relpipe.engine.errors import EngineError


def server(
    model: str,
    port: int,
    *,
    host: str = "127.0.0.1",
    kv_cache_dtype: str | None = None,
    tensor_parallel: int = 1,
    acceptance: object | None = None,
    extra: Sequence[str] = (),
) -> ServerSpec:
    """argv of trtllm-serve; TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS counts accepted *draft*
    tokens, so a golden AL (which includes the target's own token) becomes AL - 1."""
    if kv_cache_dtype is not None:
        # trtllm-serve takes the KV dtype from its --extra_llm_api_options YAML, not a flag.
        raise EngineError(
            "trtllm: set kv_cache_dtype in the --extra_llm_api_options file passed via extra"
        )
    argv = [
        "trtllm-serve",
        model,
        "--host",
        host,
        "--port",
        str(port),
        "--tp_size",
        str(tensor_parallel),
    ]
    env: dict[str, str] = {}
    if acceptance is not None:
        env = {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": accepted_drafts(acceptance)}
    return spec("trtllm", argv + list(extra), env, host, port)
