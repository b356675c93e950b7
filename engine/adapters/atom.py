"""ATOM: the image's own ops for the mono path (its server command is declared in
engine/declarations/atom.json and launched by `engine.adapters.declared`).

Ops: ATOM's layers call aiter's kernels: `RMSNorm` reaches `rmsnorm2d_fwd(x2d, weight, eps)`
(imported into `atom.model_ops.layernorm`) and `SiluAndMul` calls `silu_and_mul(out, x)`, the
out-parameter form (imported into `atom.model_ops.activation`). The binding takes those very
names from ATOM's modules (so the smoke decode runs what ATOM runs) and adapts them to the mono
path's functional contract. In an image that has ATOM, a binding that fails is a checked FAIL
with its reason (`OpBindingError`), never a quiet fall-back to relpipe's kernels.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import EngineError
from ..options import OPS_MODES

if TYPE_CHECKING:
    import torch

    from ..decode import Ops


@dataclass(frozen=True, kw_only=True)
class OpBinding:
    """One ATOM op: where ATOM's layer finds the kernel, and how it is called."""

    name: str  # the mono path's op slot
    module: str
    attr: str
    params: tuple[str, ...]  # positional parameters as ATOM's layer passes them


# The contract checked against ATOM's sources (tests/engine/test_atom_contract.py).
ATOM_OPS = (
    OpBinding(
        name="rms_norm",
        module="atom.model_ops.layernorm",
        attr="rmsnorm2d_fwd",
        params=("x", "weight", "eps"),
    ),
    OpBinding(
        name="silu_and_mul",
        module="atom.model_ops.activation",
        attr="silu_and_mul",
        params=("out", "x"),
    ),
)


class OpBindingError(EngineError):
    """The image has ATOM but its ops could not be bound: a checked FAIL of the image (C3)."""

    exit_code = 1


def has_atom() -> bool:
    """Whether the image has an importable-looking `atom` package (found, not imported)."""
    try:
        return importlib.util.find_spec("atom") is not None
    except (ImportError, ValueError):
        return False


def _find(binding: OpBinding) -> tuple[Callable[..., Any] | None, str | None]:
    where = f"{binding.module}.{binding.attr}"
    try:
        fn = getattr(importlib.import_module(binding.module), binding.attr)
    except ImportError as exc:
        return None, f"{where}: not importable ({exc})"
    except AttributeError:
        return None, f"{where}: module has no {binding.attr}"
    except Exception as exc:  # noqa: BLE001 - foreign package import may raise anything; reported
        return None, f"{where}: import raised {type(exc).__name__}: {exc}"
    if not callable(fn):
        return None, f"{where}: not callable"
    return fn, None


def rms_norm_op(kernel: Callable[..., Any]) -> Callable[..., torch.Tensor]:
    """`rmsnorm2d_fwd(x2d, weight, eps)` as the mono path's `rms_norm(x, weight, eps)`."""

    def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1]).contiguous()
        out = kernel(flat, weight.to(flat.dtype).contiguous(), eps)
        # a wrong shape is left for the decoder's check to report as the op's defect
        same = hasattr(out, "shape") and tuple(out.shape) == tuple(flat.shape)
        return out.view(x.shape) if same else out

    return rms_norm


def silu_and_mul_op(kernel: Callable[..., Any]) -> Callable[..., torch.Tensor]:
    """aiter's out-parameter `silu_and_mul(out, x)` as the mono path's `silu_and_mul(x)`."""

    def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
        import torch

        x = x.contiguous()
        out = torch.empty(*x.shape[:-1], x.shape[-1] // 2, dtype=x.dtype, device=x.device)
        kernel(out, x)
        return out

    return silu_and_mul


ADAPT = {"rms_norm": rms_norm_op, "silu_and_mul": silu_and_mul_op}


def load_ops(mode: str = "auto") -> tuple[Ops, list[str]]:
    """Op overrides for `mode` and notes on what was not used.

    `engine`: relpipe's kernels. `atom`: both ATOM ops or OpBindingError. `auto`: ATOM's ops when
    the image has ATOM (a failed binding is then OpBindingError too), relpipe's kernels when not.
    """
    from ..decode import Ops  # deferred: loads torch (the engine extra)

    if mode not in OPS_MODES:
        raise EngineError(f"unknown --ops {mode!r}; use one of {', '.join(OPS_MODES)}")
    if mode == "engine":
        return Ops(), []
    if mode == "auto" and not has_atom():
        return Ops(), ["no atom package in the image: relpipe's kernels ran"]
    found: dict[str, Callable[..., Any]] = {}
    problems: list[str] = []
    for binding in ATOM_OPS:
        fn, why = _find(binding)
        if fn is None:
            problems.append(str(why))
        else:
            found[binding.name] = ADAPT[binding.name](fn)
    if problems:
        raise OpBindingError("ATOM op binding failed: " + "; ".join(problems))
    ops = Ops(
        rms_norm=found["rms_norm"],
        silu_and_mul=found["silu_and_mul"],
        provider={b.name: "atom" for b in ATOM_OPS},
    )
    return ops, [f"{b.name}: bound to {b.module}.{b.attr}({', '.join(b.params)})" for b in ATOM_OPS]
