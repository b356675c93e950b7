"""TensorRT-LLM: `mpirun -n 1 ... trtllm-serve MODEL --config FILE` as InferenceX launches it.

KV dtype and speculative decoding live in the `--config` YAML (`kv_cache_config.dtype`,
`speculative_config.decoding_type/max_draft_len/speculative_model`), written by this adapter.
The golden AL is forced through `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`, which counts
accepted *draft* tokens: AL - 1. The one-model path reads it as a float (fractions are honoured
per iteration); the two-model path declares it an `int`, so a fractional AL - 1 is refused there
rather than silently truncated.
"""

from __future__ import annotations

import json

from ..errors import EngineError
from .server import Launch, ServerSpec, accepted_drafts, spec

CONFIG_PATH = "/tmp/relpipe-trtllm-config.yaml"
KV_DTYPE = {"bf16": "auto", "fp8": "fp8"}
DECODING_TYPE = {"mtp": "MTP", "eagle3": "Eagle3"}
FORCE_ENV = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"


def _yaml_scalar(value: object) -> str:
    # JSON strings and numbers are valid YAML scalars: no quoting rules of our own.
    return json.dumps(value)


def config_text(request: Launch, two_model: bool = False) -> str:
    """The --config YAML (block style, only keys relpipe sets)."""
    lines: list[str] = []
    if request.kv_dtype is not None:
        lines += ["kv_cache_config:", f"    dtype: {_yaml_scalar(KV_DTYPE[request.kv_dtype])}"]
    if request.spec is not None:
        decoding = DECODING_TYPE.get(request.spec.method)
        if decoding is None:
            raise EngineError(f"trtllm: no decoding_type for {request.spec.method!r}")
        lines += [
            "speculative_config:",
            f"    decoding_type: {decoding}",
            f"    max_draft_len: {request.spec.tokens}",
        ]
        if request.spec.draft_model:
            lines.append(f"    speculative_model: {_yaml_scalar(request.spec.draft_model)}")
        if request.spec.method == "eagle3":
            lines.append(f"    eagle3_one_model: {'false' if two_model else 'true'}")
    return "\n".join(lines) + ("\n" if lines else "")


def forced_accepted(request: Launch, two_model: bool = False) -> str | None:
    """TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS for the request's AL (None without one)."""
    if request.acceptance is None or request.spec is None:
        return None
    drafts = accepted_drafts(request.acceptance, request.spec.tokens)
    if two_model and "." in drafts:
        raise EngineError(
            f"trtllm two-model path reads {FORCE_ENV} as an integer; AL - 1 = {drafts} would be"
            " truncated (use the one-model path or an integral AL)"
        )
    return drafts


def server(request: Launch, two_model: bool = False, config_path: str = CONFIG_PATH) -> ServerSpec:
    text = config_text(request, two_model)
    argv = [
        "mpirun",
        "-n",
        "1",
        "--oversubscribe",
        "--allow-run-as-root",
        "trtllm-serve",
        request.model,
        "--tp_size",
        str(request.tensor_parallel),
        "--host",
        request.host,
        "--port",
        str(request.port),
    ]
    files: dict[str, str] = {}
    if text:
        argv += ["--config", config_path]
        files[config_path] = text
    forced = forced_accepted(request, two_model)
    env = {FORCE_ENV: forced} if forced is not None else {}
    return spec("trtllm", request, argv, env, files)
