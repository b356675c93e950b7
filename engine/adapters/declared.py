"""An engine's server command from its declaration's `launch` section (docs/engine.md).

`launch.argv` is a list of items: a string (`"--port"`, or a `{variable}` of the request), or a
group `{"if": [variables], "argv": [...], "env": {...}}` that applies when every variable named
is set; inside a group's argv, `{"json": [entries]}` writes one JSON object argument (vLLM's
`--speculative-config`), each entry `{"key", "text" | "number", "if"}`: a number is written from
its exact decimal text, never through a float (2.27 stays 2.27). `launch.kv-dtype` spells
relpipe's KV names (bf16, fp8) the engine's way; `launch.methods`, when present, spells the
speculative methods and refuses the others.

Variables: python, model, served_model_name (default: the model), host, port, tensor_parallel,
kv_dtype, method, draft_model, tokens (K), draft_tokens (K + 1), acceptance (the golden AL).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .. import declaration
from ..errors import EngineError
from .server import Launch, ServerSpec, spec

_VARIABLE = re.compile(r"\{([a-z_]+)\}")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def variables(name: str, launch: dict[str, Any], request: Launch) -> dict[str, str | None]:
    """The request's values as the engine spells them."""
    kv = None
    if request.kv_dtype is not None:
        kv = launch.get("kv-dtype", {}).get(request.kv_dtype)
        if kv is None:
            raise EngineError(f"{name}: no KV cache dtype for {request.kv_dtype!r}")
    method = tokens = draft_tokens = None
    if request.spec is not None:
        method = request.spec.method
        if "methods" in launch:
            method = launch["methods"].get(method)
            if method is None:
                raise EngineError(f"{name}: no speculative algorithm for {request.spec.method!r}")
        tokens, draft_tokens = str(request.spec.tokens), str(request.spec.tokens + 1)
    return {
        "python": request.python,
        "model": request.model,
        "served_model_name": request.served_model_name or request.model,
        "host": request.host,
        "port": str(request.port),
        "tensor_parallel": str(request.tensor_parallel),
        "kv_dtype": kv,
        "method": method,
        "draft_model": request.spec.draft_model if request.spec else None,
        "tokens": tokens,
        "draft_tokens": draft_tokens,
        "acceptance": request.acceptance,
    }


def _fill(name: str, template: str, values: dict[str, str | None]) -> str:
    def one(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            raise EngineError(f"engine declaration {name}: launch uses {m.group(0)}, not set here")
        return value

    return _VARIABLE.sub(one, template)


def _applies(item: dict[str, Any], values: dict[str, str | None]) -> bool:
    return all(values.get(v) is not None for v in item.get("if", ()))


def _json(name: str, entries: list[dict[str, Any]], values: dict[str, str | None]) -> str:
    parts = []
    for entry in entries:
        if not _applies(entry, values):
            continue
        if "number" in entry:
            text = _fill(name, entry["number"], values)
            if not _NUMBER.fullmatch(text):
                raise EngineError(f"{name}: {entry['key']} {text!r} is not a number")
        else:
            text = json.dumps(_fill(name, entry["text"], values))
        parts.append(f"{json.dumps(entry['key'])}: {text}")
    return "{" + ", ".join(parts) + "}"


def _argv(
    name: str, items: list[Any], values: dict[str, str | None], env: dict[str, str]
) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(_fill(name, item, values))
        elif isinstance(item, dict) and "json" in item:
            out.append(_json(name, item["json"], values))
        elif isinstance(item, dict):
            if _applies(item, values):
                out += _argv(name, item.get("argv", []), values, env)
                env.update({k: _fill(name, v, values) for k, v in item.get("env", {}).items()})
        else:
            raise EngineError(f"engine declaration {name}: launch item {item!r} is not understood")
    return out


def server(name: str, request: Launch) -> ServerSpec:
    """The ServerSpec of `request` for the declared engine `name`."""
    launch = declaration.section(name, "launch")
    values = variables(name, launch, request)
    env: dict[str, str] = {}
    argv = _argv(name, launch.get("argv", []), values, env)
    return spec(name, request, argv, env)
