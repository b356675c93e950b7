"""Fixtures of the engine tests: the CLI as a real subprocess, fake `atom` packages, Triton mode.

Kernels run in the Triton interpreter on CPU: TRITON_INTERPRET must be set before the kernels
are decorated (the first import of engine.kernels), so it is set here, at collection time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from support import source_root

ROOT = Path(__file__).resolve().parents[2]

if not os.environ.get("TRITON_INTERPRET") and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
# In-process decodes of the tiny model: one intra-op thread (as `options.device` does for the CLI).
torch.set_num_threads(1)

# Fast CLI decodes: 2 prompts of 4 bytes, 4 new tokens (7 interpreter steps).
TINY_DECODE = ["--prompts", "2", "--prompt-bytes", "4", "--max-new", "4"]


@dataclass(frozen=True)
class CliResult:
    code: int
    doc: dict[str, Any]
    stderr: str


def run_cli(
    args: list[str],
    tmp: Path,
    extra_path: list[Path] | None = None,
    timeout: float = 300,
    python: str = sys.executable,
) -> CliResult:
    """`python -m relpipe.engine ARGS --out FILE` as a subprocess: exit code and result doc."""
    out = tmp / f"result-{len(list(tmp.glob('result-*.json')))}.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*(extra_path or []), source_root()])
    env.setdefault("TRITON_INTERPRET", "1")
    env["TRITON_CACHE_DIR"] = str(tmp / "triton-cache")
    proc = subprocess.run(
        [python, "-m", "relpipe.engine", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp,
    )
    doc = json.loads(out.read_text()) if out.exists() else {}
    return CliResult(proc.returncode, doc, proc.stderr)


@pytest.fixture
def tiny_decode() -> list[str]:
    """Decode options small enough for the interpreter: 2 prompts of 4 bytes, 4 new tokens."""
    return list(TINY_DECODE)


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    def call(
        *args: str,
        extra_path: list[Path] | None = None,
        timeout: float = 300,
        python: str = sys.executable,
    ) -> CliResult:
        return run_cli(list(args), tmp_path, extra_path, timeout, python)

    return call


# The fake ATOM exposes what real ATOM's model_ops modules hold (aiter's kernels imported there):
# layernorm.rmsnorm2d_fwd(x2d, weight, eps) -> y and activation.silu_and_mul(out, x) -> None.
_GOOD_NORM = """
def rmsnorm2d_fwd(x, weight, eps):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()
"""
_WRONG_SHAPE_NORM = """
def rmsnorm2d_fwd(x, weight, eps):
    return x[..., :-1]  # an off-by-one in the kernel's column count
"""
_BROKEN_NORM = """
def rmsnorm2d_fwd(x, weight, eps):
    # the regression: the norm weight is dropped
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
"""
_SPINNING_NORM = """
import triton
import triton.language as tl


@triton.jit
def _wait(flag_ptr):
    # a fence that waits for a flag nobody sets: spins for ever (a Python loop when interpreted)
    v = tl.load(flag_ptr)
    while v == 0:
        v = tl.load(flag_ptr)


def rmsnorm2d_fwd(x, weight, eps):
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    _wait[(1,)](flag)
    return x
"""
_GOOD_ACT = """
def silu_and_mul(out, x):
    gate, up = x.float().chunk(2, dim=-1)
    out.copy_(torch.nn.functional.silu(gate) * up)
"""
_FUNCTIONAL_ACT = """
def silu_and_mul(x):  # the signature relpipe used to assume: not aiter's
    gate, up = x.float().chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up
"""

VARIANTS = {
    "good": (_GOOD_NORM, _GOOD_ACT),
    "broken": (_BROKEN_NORM, _GOOD_ACT),
    "spinning": (_SPINNING_NORM, _GOOD_ACT),
    "wrong-shape": (_WRONG_SHAPE_NORM, _GOOD_ACT),
    "functional-act": (_GOOD_NORM, _FUNCTIONAL_ACT),
    "norm-only": (_GOOD_NORM, None),
}


def make_fake_atom(root: Path, variant: str) -> Path:
    """A minimal `atom` package exposing the op contract; returns the dir to put on PYTHONPATH."""
    norm, act = VARIANTS[variant]
    pkg = root / f"atom-{variant}"
    ops = pkg / "atom" / "model_ops"
    ops.mkdir(parents=True)
    (pkg / "atom" / "__init__.py").write_text("")
    (ops / "__init__.py").write_text("")
    (ops / "layernorm.py").write_text("import torch\n" + textwrap.dedent(norm))
    if act is not None:
        (ops / "activation.py").write_text("import torch\n" + textwrap.dedent(act))
    return pkg


def _forget_atom() -> None:
    for name in [m for m in sys.modules if m == "atom" or m.startswith("atom.")]:
        del sys.modules[name]


@pytest.fixture
def fake_atom(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Builds fake `atom` packages; in-process imports of `atom` are forgotten before and after."""
    _forget_atom()
    yield lambda variant: make_fake_atom(tmp_path, variant)
    _forget_atom()
