"""vLLM: `vllm serve` as InferenceX launches it, synthetic rejection sampling pinned to the AL.

The `--speculative-config` JSON carries the method, K, the draft `model` (EAGLE3 and DSpark drafts
are separate checkpoints; vLLM refuses an eagle3 config without one) and, when a golden AL is
given, `rejection_sample_method: synthetic` with `synthetic_acceptance_length` (InferenceX's
agentic vLLM scripts, e.g. benchmarks/single_node/agentic/minimaxm3_fp8_mi300x_mtp.sh).
"""

from __future__ import annotations

import json

from relpipe.engine.adapters.server import Launch, ServerSpec, spec

KV_DTYPE = {"bf16": "auto", "fp8": "fp8"}  # vLLM's --kv-cache-dtype spelling


def speculative_config(request: Launch) -> str | None:
    """The --speculative-config JSON text (AL written from its exact decimal text)."""
    if request.spec is None:
        return None
    config: dict[str, object] = {"method": request.spec.method}
    if request.spec.draft_model:
        config["model"] = request.spec.draft_model
    config["num_speculative_tokens"] = request.spec.tokens
    if request.acceptance is None:
        return json.dumps(config)
    config["rejection_sample_method"] = "synthetic"
    config["synthetic_acceptance_length"] = "@AL@"
    # a JSON number from the exact decimal text: no float round trip (2.27 stays 2.27)
    return json.dumps(config).replace('"@AL@"', request.acceptance)


def server(request: Launch) -> ServerSpec:
    argv = [
        "vllm",
        "serve",
        request.model,
        "--served-model-name",
        request.served_model_name or request.model,
        "--host",
        request.host,
        "--port",
        str(request.port),
        "--tensor-parallel-size",
        str(request.tensor_parallel),
    ]
    if request.kv_dtype is not None:
        argv += ["--kv-cache-dtype", KV_DTYPE[request.kv_dtype]]
    config = speculative_config(request)
    if config is not None:
        argv += ["--speculative-config", config]
    return spec("vllm", request, argv)
