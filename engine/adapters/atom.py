"""ATOM: the server command, and the image's own ops as overrides for the mono decode path.

`load_ops` imports `atom.model_ops.layernorm.rms_norm(x, weight, eps)` and
`atom.model_ops.activation.silu_and_mul(x)` from the image when asked (or when `auto` finds them),
so the smoke decode and decode-parity run the image's kernels, which is how a broken nightly
shows up. Importing torch-dependent code is deferred to `load_ops`; the server command needs none.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from relpipe.engine.adapters.server import ServerSpec, acceptance_length, spec
from relpipe.engine.errors import EngineError
from relpipe.engine.options import OPS_MODES

if TYPE_CHECKING:
    from relpipe.engine.decode import Ops

# (op name, module, attribute): the contract the image's ATOM package is checked against.
ATOM_OPS = (
    ("rms_norm", "atom.model_ops.layernorm", "rms_norm"),
    ("silu_and_mul", "atom.model_ops.activation", "silu_and_mul"),
)


def _find(module: str, attr: str) -> tuple[object | None, str | None]:
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        return None, f"{module}.{attr}: not importable ({exc})"
    except AttributeError:
        return None, f"{module}.{attr}: module has no {attr}"
    except Exception as exc:  # noqa: BLE001 - foreign package import may raise anything; reported
        return None, f"{module}.{attr}: import raised {type(exc).__name__}: {exc}"
    if not callable(fn):
        return None, f"{module}.{attr}: not callable"
    return fn, None


def load_ops(mode: str = "auto") -> tuple[Ops, list[str]]:
    """Op overrides for `mode` and notes on what was not used. `atom` with no ATOM op is an error."""
    from relpipe.engine.decode import Ops

    if mode not in OPS_MODES:
        raise EngineError(f"unknown --ops {mode!r}; use one of {', '.join(OPS_MODES)}")
    if mode == "engine":
        return Ops(), []
    found: dict[str, Any] = {}
    notes: list[str] = []
    for name, module, attr in ATOM_OPS:
        fn, why = _find(module, attr)
        if fn is not None:
            found[name] = fn
        else:
            notes.append(str(why))
    if mode == "atom" and not found:
        raise EngineError("--ops atom: the image exposes no ATOM op (" + "; ".join(notes) + ")")
    provider = {name: ("atom" if name in found else "engine") for name, _, _ in ATOM_OPS}
    ops = Ops(
        rms_norm=found.get("rms_norm"),
        silu_and_mul=found.get("silu_and_mul"),
        provider=provider,
    )
    return ops, notes


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
    """`python -m atom.entrypoints.openai_server` with ATOM's flag spelling (`--kv_cache_dtype`)."""
    argv = [
        python,
        "-m",
        "atom.entrypoints.openai_server",
        "--model",
        model,
        "--host",
        host,
        "--server-port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel),
    ]
    if kv_cache_dtype is not None:
        argv += ["--kv_cache_dtype", kv_cache_dtype]
    if acceptance is not None:
        argv += ["--spec-decode-acceptance-length", acceptance_length(acceptance)]
    return spec("atom", argv + list(extra), {}, host, port)
