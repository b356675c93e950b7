"""relpipe's own engine: `python -m relpipe.engine serve` launched like the real engines.

It stands in for an engine in fixture images and tests of the server-mode smoke: the same
`Launch` (model folder, port, served name, KV dtype), the same health check and OpenAI API.
It has no speculative decoding, so a `--spec` is refused rather than ignored.
"""

from __future__ import annotations

from ..errors import EngineError
from .server import Launch, ServerSpec, spec


def server(request: Launch) -> ServerSpec:
    if request.spec is not None:
        raise EngineError("relpipe serve has no speculative decoding; drop --spec")
    if request.tensor_parallel != 1:
        raise EngineError("relpipe serve runs on one device; use --tp 1")
    argv = [
        request.python,
        "-m",
        "relpipe.engine",
        "serve",
        "--model-dir",
        request.model,
        "--model-name",
        request.served_model_name or request.model,
        "--host",
        request.host,
        "--port",
        str(request.port),
    ]
    if request.kv_dtype is not None:
        argv += ["--kv-dtype", request.kv_dtype]
    return spec("relpipe", request, argv)
