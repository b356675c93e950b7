"""SGLang: `python3 -m sglang.launch_server` as InferenceX launches it.

Speculative decoding needs its own flags (`--speculative-algorithm`, `--speculative-num-steps K`,
`--speculative-eagle-topk 1`, `--speculative-num-draft-tokens K+1`); the simulated acceptance
(`SGLANG_SIMULATE_ACC_LEN` = AL with `match-expected` / `real-draft-token`) only acts on a
speculative server. SGLang has no plain `fp8` KV dtype: InferenceX passes `fp8_e4m3`
(benchmarks/single_node/agentic/*sglang_mtp.sh).
"""

from __future__ import annotations

from relpipe.engine.adapters.server import Launch, ServerSpec, spec
from relpipe.engine.errors import EngineError

KV_DTYPE = {"bf16": "bf16", "fp8": "fp8_e4m3"}
# InferenceX runs MTP heads as EAGLE (DeepSeek-V4, GLM-5.2) and EAGLE3 drafts as EAGLE3.
ALGORITHM = {"mtp": "EAGLE", "eagle3": "EAGLE3"}


def server(request: Launch) -> ServerSpec:
    argv = [
        request.python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        request.model,
        "--served-model-name",
        request.served_model_name or request.model,
        "--host",
        request.host,
        "--port",
        str(request.port),
        "--tp",
        str(request.tensor_parallel),
    ]
    if request.kv_dtype is not None:
        argv += ["--kv-cache-dtype", KV_DTYPE[request.kv_dtype]]
    env: dict[str, str] = {}
    if request.spec is not None:
        algorithm = ALGORITHM.get(request.spec.method)
        if algorithm is None:
            raise EngineError(f"sglang: no speculative algorithm for {request.spec.method!r}")
        argv += ["--speculative-algorithm", algorithm]
        if request.spec.draft_model:
            argv += ["--speculative-draft-model-path", request.spec.draft_model]
        k = request.spec.tokens
        argv += [
            "--speculative-num-steps",
            str(k),
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            str(k + 1),
        ]
        if request.acceptance is not None:
            env = {
                "SGLANG_SIMULATE_ACC_LEN": request.acceptance,
                "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
            }
    return spec("sglang", request, argv, env)
