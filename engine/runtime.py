"""Process environment of the engine payload: Triton cache placement and lazy torch/triton import.

The payload runs inside foreign images whose root filesystem is read-only (only /tmp is writable)
and which may have no torch at all, so torch and triton are imported here, on demand, with a
one-line error instead of a traceback.
"""

from __future__ import annotations

import os
import tempfile
from types import ModuleType

from .errors import EngineError


def prepare_environment() -> None:
    """Point Triton's cache under the temp dir unless the caller chose one (the code dir is
    read-only).
    """
    if not os.environ.get("TRITON_CACHE_DIR"):
        os.environ["TRITON_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "relpipe-triton-cache")


def require_torch() -> ModuleType:
    """Import torch or raise an EngineError (exit 2) that says so."""
    prepare_environment()
    try:
        import torch
    except ImportError as exc:
        raise EngineError(
            f"torch is not importable in this environment ({exc}); smoke and evals need it"
        ) from exc
    return torch


def require_triton() -> ModuleType:
    """Import triton (after torch) or raise an EngineError (exit 2) that says so."""
    require_torch()
    try:
        import triton
    except ImportError as exc:
        raise EngineError(
            f"triton is not importable in this environment ({exc}); the mono path needs it"
        ) from exc
    return triton


def interpreting() -> bool:
    """True when Triton kernels run in the CPU interpreter
    (TRITON_INTERPRET=1 before decoration).
    """
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


def default_device() -> str:
    """'cuda' when a GPU is visible to torch and kernels are compiled, else 'cpu'."""
    torch = require_torch()
    if not interpreting() and torch.cuda.is_available():
        return "cuda"
    return "cpu"
