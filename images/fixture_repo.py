"""Content and history of the fixture engine repositories baked into fixture nightlies.

Owns the ATOM-like repository (`/app/ATOM`) and the AITER-like one (`/app/aiter-test`): their
files, their squash-merged commit history (fixed identities and dates, so the SHAs are stable),
which commit each nightly is built from, and the deliberately bad commits of the `broken` and
`hang` variants. `images.build` turns a prefix of a history into a git repository with
`git fast-import` and lays it into an image layer; nothing here touches git or the disk.
"""

from __future__ import annotations

from dataclasses import dataclass

ATOM_TAG = "v0.1.6"  # setuptools-scm counts commits since this tag: 0.1.7.devN+g<sha9>
ATOM_NEXT = "0.1.7"
AITER_TAG = "v0.1.5"
AITER_NEXT = "0.1.5.post1"

# 2026-09-01T00:00:00Z; each commit is one hour after the previous, so dates are fixed and ordered.
EPOCH = 1788220800


@dataclass(frozen=True, kw_only=True)
class CommitSpec:
    """One squash-merged commit to WRITE into a fixture repository: subject (+ body), author, and
    the files it writes (None = delete). Not a commit read from git: it has no sha until
    `images.build` writes it (that record is `core.commit.Commit`).
    """

    subject: str
    changes: tuple[tuple[str, str | None], ...]
    author: tuple[str, str] = ("ATOM Bot", "atom-bot@example.invalid")
    body: str = ""

    @property
    def message(self) -> str:
        return self.subject + ("\n\n" + self.body if self.body else "") + "\n"


@dataclass(frozen=True, kw_only=True)
class History:
    """A repository's commits in order, the index of the commit its release tag points at."""

    name: str
    commits: tuple[CommitSpec, ...]
    tag: str
    tag_index: int
    next_version: str
    branch: str = "main"


# -- ATOM fixture files -----------------------------------------------------------------------

# layernorm.py: the versions differ only in rms_norm's docstring and body.
_LAYERNORM_HEAD = '''\
"""RMSNorm for ATOM models (reference torch implementation; kernels dispatch here on CPU)."""

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
'''
_LAYERNORM_TAIL = """

class RMSNorm(torch.nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm2d_fwd(x.reshape(-1, x.shape[-1]), self.weight, self.eps).view(x.shape)


# aiter's entry point, as real ATOM imports it into this module: (x2d, weight, eps) -> y.
def rmsnorm2d_fwd(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return rms_norm(x, weight, eps)
"""

_LAYERNORM_V1 = (
    _LAYERNORM_HEAD
    + '''\
    """y = x / sqrt(mean(x^2) + eps) * weight, over the last dimension."""
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight
'''
    + _LAYERNORM_TAIL
)

# ROCm/ATOM-style precision fix: the variance is accumulated in fp32 whatever the input dtype,
# and eps is clamped to the dtype's resolution (bf16 inputs used to lose it entirely).
_LAYERNORM_V2 = (
    _LAYERNORM_HEAD
    + '''\
    """y = x / sqrt(mean(x^2) + eps) * weight, over the last dimension, accumulated in fp32."""
    orig_dtype = x.dtype
    xf = x.float()
    variance = xf.pow(2).mean(dim=-1, keepdim=True)
    eps = max(eps, torch.finfo(torch.float32).tiny)
    return (xf * torch.rsqrt(variance + eps) * weight.float()).to(orig_dtype)
'''
    + _LAYERNORM_TAIL
)

# The BROKEN variant: a "fused" reduction that sums instead of averaging and drops the weight.
_LAYERNORM_BROKEN = (
    _LAYERNORM_HEAD
    + '''\
    """Fused reduction: one pass over x (weight folded into the next GEMM)."""
    orig_dtype = x.dtype
    xf = x.float()
    variance = xf.pow(2).sum(dim=-1, keepdim=True)
    return (xf * torch.rsqrt(variance + eps)).to(orig_dtype)
'''
    + _LAYERNORM_TAIL
)

_ACTIVATION_V1 = '''\
"""Gated activations used by ATOM MLPs."""

import torch


def silu_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    """aiter's out-parameter form: out = silu(x[..., :I]) * x[..., I:] for x[..., 2I]."""
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[..., :d]) * x[..., d:])
'''

# The HANG variant: a fence wait that never completes (the real bug class: a spin on a flag).
_ACTIVATION_HANG = '''\
"""Gated activations used by ATOM MLPs."""

import time

import torch

_FENCE = {"ready": False}


def _wait_fence() -> None:
    # Waits for the producer kernel's fence; nothing ever sets it.
    while not _FENCE["ready"]:
        time.sleep(0.01)


def silu_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    """aiter's out-parameter form: out = silu(x[..., :I]) * x[..., I:] for x[..., 2I]."""
    _wait_fence()
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[..., :d]) * x[..., d:])
'''

_LINEAR_V1 = '''\
"""Linear layers with optional per-channel weight quantization."""

import torch

from atom.quant_spec import QuantSpec


class Linear(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, quant: QuantSpec | None = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.quant = quant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if self.quant is not None:
            w = self.quant.dequantize(w)
        return torch.nn.functional.linear(x, w)
'''

# Comment-only edit: a cosmetic change in a precision file.
_LINEAR_V2 = _LINEAR_V1.replace(
    "        w = self.weight\n",
    "        # Dequantize once per call; the scale is per output channel (see quant_spec.py).\n"
    "        w = self.weight\n",
)

_QUANT_SPEC = '''\
"""Quantization specs: which dtype and scale granularity a checkpoint uses."""

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class QuantSpec:
    dtype: str = "fp8_e4m3"
    granularity: str = "per_channel"

    def dequantize(self, w: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        return w.float() if scale is None else w.float() * scale
'''

_CONFIG_V1 = '''\
"""Engine configuration: model architecture mapping and runtime defaults."""

from dataclasses import dataclass

ARCHITECTURES = {
    "LlamaForCausalLM": "atom.models.llama:LlamaForCausalLM",
    "Eagle3LlamaForCausalLM": "atom.models.eagle3_llama:Eagle3LlamaForCausalLM",
}


@dataclass
class Config:
    model: str = ""
    tensor_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    max_num_seqs: int = 256
    enforce_eager: bool = False
'''

_CONFIG_V2 = _CONFIG_V1.replace('kv_cache_dtype: str = "auto"', 'kv_cache_dtype: str = "fp8"')
_CONFIG_V3 = _CONFIG_V2.replace(
    "    enforce_eager: bool = False\n",
    '    enforce_eager: bool = False\n    dp_load_balance: str = "round_robin"\n',
)

_LOADER = '''\
"""Checkpoint loading: safetensors shards into ATOM modules."""

from pathlib import Path


def shard_files(model_dir: str) -> list[Path]:
    return sorted(Path(model_dir).glob("*.safetensors"))


def load_weights(model, model_dir: str) -> int:
    count = 0
    for _ in shard_files(model_dir):
        count += 1
    return count
'''

_EAGLE3 = '''\
"""EAGLE3 draft model on a Llama backbone."""

import torch

from atom.model_ops.activation import silu_and_mul
from atom.model_ops.layernorm import RMSNorm


class Eagle3LlamaForCausalLM(torch.nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden_size)
        self.gate_up = torch.nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.down = torch.nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        gate_up = self.gate_up(self.norm(hidden))
        act = gate_up.new_empty(*gate_up.shape[:-1], gate_up.shape[-1] // 2)
        silu_and_mul(act, gate_up)
        return hidden + self.down(act)
'''

_LLAMA = '''\
"""Llama decoder for ATOM (target model)."""

import torch

from atom.model_ops.layernorm import RMSNorm


class LlamaForCausalLM(torch.nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden_size)
'''

_DRAFTER_V1 = '''\
"""Speculative-decoding drafter: chooses the proposer for a draft model."""

from atom.spec_decode.eagle_proposer import EagleProposer

DRAFT_ARCHITECTURES = {"Eagle3LlamaForCausalLM": EagleProposer}


def make_drafter(arch: str, num_speculative_tokens: int):
    return DRAFT_ARCHITECTURES[arch](num_speculative_tokens)
'''

_DRAFTER_V2 = _DRAFTER_V1.replace(
    "def make_drafter(arch: str, num_speculative_tokens: int):\n"
    "    return DRAFT_ARCHITECTURES[arch](num_speculative_tokens)\n",
    "def make_drafter(arch: str, num_speculative_tokens: int):\n"
    "    proposer = DRAFT_ARCHITECTURES[arch](num_speculative_tokens)\n"
    "    proposer.pass_token_ids_as_tensor = True\n"
    "    return proposer\n",
)

_PROPOSER_V1 = '''\
"""EAGLE proposer: runs the draft model for k speculative tokens."""


class EagleProposer:
    def __init__(self, num_speculative_tokens: int) -> None:
        self.k = num_speculative_tokens
        self.pass_token_ids_as_tensor = False

    def propose(self, token_ids: list[int]) -> list[int]:
        return list(token_ids[-self.k :])
'''

_PROPOSER_V2 = _PROPOSER_V1.replace(
    "    def propose(self, token_ids: list[int]) -> list[int]:\n"
    "        return list(token_ids[-self.k :])\n",
    "    def propose(self, token_ids) -> list[int]:\n"
    '        ids = token_ids.tolist() if hasattr(token_ids, "tolist") else list(token_ids)\n'
    "        return ids[-self.k :]\n",
)

_SERVER_V1 = '''\
"""OpenAI-compatible server entrypoint: python -m atom.entrypoints.openai_server."""

import argparse


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="atom.entrypoints.openai_server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--kv_cache_dtype", default="auto")
    parser.add_argument("--port", type=int, default=8000)
    return parser.parse_args(argv)
'''

_SERVER_V2 = _SERVER_V1.replace(
    '    parser.add_argument("--port", type=int, default=8000)\n',
    '    parser.add_argument("--port", type=int, default=8000)\n'
    '    parser.add_argument("--served-model-name", default=None)\n',
)

_INIT = '''\
"""ATOM: AMD's inference engine (relpipe fixture)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("atom")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"
'''

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "atom"
dynamic = ["version"]
requires-python = ">=3.10"

[tool.setuptools_scm]
"""

_TEST_LAYERNORM = """\
import torch

from atom.model_ops.layernorm import rms_norm


def test_rms_norm_unit_weight_has_unit_rms():
    x = torch.randn(4, 64)
    y = rms_norm(x, torch.ones(64))
    assert torch.allclose(y.pow(2).mean(-1), torch.ones(4), atol=1e-3)
"""

_TEST_ACTIVATION = """\
import torch

from atom.model_ops.activation import silu_and_mul


def test_silu_and_mul_halves_last_dim():
    assert silu_and_mul(torch.randn(3, 16)).shape == (3, 8)
"""


def _atom_initial() -> CommitSpec:
    files = {
        "README.md": "# ATOM\n\nAMD's inference engine for ROCm (relpipe fixture repository).\n",
        "pyproject.toml": _PYPROJECT,
        "atom/__init__.py": _INIT,
        "atom/config.py": _CONFIG_V1,
        "atom/quant_spec.py": _QUANT_SPEC,
        "atom/model_ops/__init__.py": "",
        "atom/model_ops/linear.py": _LINEAR_V1,
        "atom/model_ops/layernorm.py": _LAYERNORM_V1,
        "atom/model_ops/activation.py": _ACTIVATION_V1,
        "atom/model_loader/__init__.py": "",
        "atom/model_loader/loader.py": _LOADER,
        "atom/models/__init__.py": "",
        "atom/models/llama.py": _LLAMA,
        "atom/models/eagle3_llama.py": _EAGLE3,
        "atom/spec_decode/__init__.py": "",
        "atom/spec_decode/drafter.py": _DRAFTER_V1,
        "atom/spec_decode/eagle_proposer.py": _PROPOSER_V1,
        "atom/entrypoints/__init__.py": "",
        "atom/entrypoints/openai_server.py": _SERVER_V1,
        "tests/test_layernorm.py": _TEST_LAYERNORM,
        "docs/index.md": "# ATOM documentation\n",
    }
    return CommitSpec(
        subject="Initial import of ATOM (#2300)", changes=tuple(sorted(files.items()))
    )


def _c(
    subject: str, *changes: tuple[str, str | None], author: tuple[str, str] | None = None
) -> CommitSpec:
    return CommitSpec(
        subject=subject, changes=changes, author=author or ("ATOM Bot", "atom-bot@example.invalid")
    )


_DEV = ("Jane Dev", "jane.dev@example.invalid")
_LI = ("Li Wei", "li.wei@example.invalid")

# Nightly points (index of the last commit in each nightly) are chosen so that:
#   nightly 1 -> 2 touches only docs/tests/entrypoints (no precision relevance);
#   nightly 2 -> 3 changes rms_norm numerics (fp32 accumulation, eps clamp), the kv-cache dtype
#                  default in config.py, and a comment-only line in linear.py (cosmetic);
#   nightly 3 -> 4 changes drafter/eagle_proposer outside dtype paths and adds a DP option;
#   later nightlies are docs-only.
ATOM_COMMITS: tuple[CommitSpec, ...] = (
    _atom_initial(),
    _c(
        "feat(loader): load safetensors shards in sorted order (#2311)",
        (
            "atom/model_loader/loader.py",
            _LOADER.replace(
                "    for _ in shard_files(model_dir):\n",
                "    # Shards load in sorted order so weights are assigned deterministically.\n"
                "    for _ in shard_files(model_dir):\n",
            ),
        ),
    ),
    _c(
        "[Docs] describe the quantization spec (#2317)",
        ("docs/quantization.md", "# Quantization\n\nfp8 e4m3, per-channel scales.\n"),
        author=_DEV,
    ),
    _c(
        "chore: release 0.1.6 (#2320)",
        ("docs/index.md", "# ATOM documentation\n\nRelease 0.1.6.\n"),
    ),
    # -- tag v0.1.6 points here (index 3) --
    _c(
        "test(activation): cover silu_and_mul shapes (#2402)",
        ("tests/test_activation.py", _TEST_ACTIVATION),
        author=_LI,
    ),
    _c(
        "[CI] run layernorm tests on CPU (#2410)",
        (
            "tests/test_layernorm.py",
            _TEST_LAYERNORM + "\n\ndef test_rms_norm_shape():\n"
            "    assert rms_norm(torch.randn(2, 8), torch.ones(8)).shape == (2, 8)\n",
        ),
    ),
    # -- nightly 1 (index 5) --
    _c(
        "docs: add serving guide for MI355X (#2461)",
        ("docs/serving.md", "# Serving on MI355X\n\n`python -m atom.entrypoints.openai_server`.\n"),
        author=_DEV,
    ),
    _c(
        "feat(entrypoints): accept --served-model-name (#2466)",
        ("atom/entrypoints/openai_server.py", _SERVER_V2),
    ),
    _c(
        "[Test] entrypoint argument parsing (#2468)",
        (
            "tests/test_openai_server.py",
            "from atom.entrypoints.openai_server import parse_args\n\n\n"
            "def test_served_model_name():\n"
            "    assert parse_args(['--model', 'm', '--served-model-name', 'x'])"
            ".served_model_name == 'x'\n",
        ),
    ),
    # -- nightly 2 (index 8) --
    _c(
        "fix(layernorm): accumulate rms_norm variance in fp32 and clamp eps (#2479)",
        ("atom/model_ops/layernorm.py", _LAYERNORM_V2),
        author=_LI,
    ),
    _c("[Perf] default kv_cache_dtype to fp8 (#2483)", ("atom/config.py", _CONFIG_V2)),
    _c(
        "docs(linear): explain per-channel dequantization (#2485)",
        ("atom/model_ops/linear.py", _LINEAR_V2),
        author=_DEV,
    ),
    # -- nightly 3 (index 11) --
    _c(
        "fix(spec_decode): pass draft token ids as a tensor (#2501)",
        ("atom/spec_decode/drafter.py", _DRAFTER_V2),
        ("atom/spec_decode/eagle_proposer.py", _PROPOSER_V2),
    ),
    _c(
        "[Feature] add a DP load-balance option (#2504)", ("atom/config.py", _CONFIG_V3), author=_LI
    ),
    # -- nightly 4 (index 13) --
    _c(
        "docs: document the DP load-balance option (#2512)",
        (
            "docs/serving.md",
            "# Serving on MI355X\n\n`python -m atom.entrypoints.openai_server`.\n\n"
            "Use `dp_load_balance` to choose the data-parallel scheduler.\n",
        ),
    ),
    # -- nightly 5 (index 14) --
    _c(
        "[Docs] changelog for 0.1.7 (#2520)",
        ("docs/changelog.md", "# Changelog\n\n## 0.1.7\n"),
        author=_DEV,
    ),
    # -- nightly 6 (index 15) --
)

NIGHTLY_POINTS: tuple[int, ...] = (5, 8, 11, 13, 14, 15)
MAX_NIGHTLIES = len(NIGHTLY_POINTS)

# Bad commits appended on top of the last nightly's history by the variants.
VARIANT_COMMITS: dict[str, CommitSpec] = {
    "broken": _c(
        "[Perf] fuse the rms_norm reduction into one pass (#2530)",
        ("atom/model_ops/layernorm.py", _LAYERNORM_BROKEN),
    ),
    "hang": _c(
        "fix(activation): wait for the producer fence before silu (#2533)",
        ("atom/model_ops/activation.py", _ACTIVATION_HANG),
    ),
}
VARIANTS = ("good", *VARIANT_COMMITS)

ATOM_HISTORY = History(
    name="ATOM", commits=ATOM_COMMITS, tag=ATOM_TAG, tag_index=3, next_version=ATOM_NEXT
)

# -- AITER fixture ----------------------------------------------------------------------------

_AITER_BOT = ("AITER Bot", "aiter-bot@example.invalid")
AITER_COMMITS: tuple[CommitSpec, ...] = (
    CommitSpec(
        subject="Initial import of aiter (#900)",
        changes=(
            ("README.md", "# aiter\n\nAI tensor engine for ROCm (relpipe fixture repository).\n"),
            ("aiter/__init__.py", '"""aiter: ROCm kernels (fixture)."""\n'),
            ("aiter/ops/__init__.py", ""),
            ("aiter/ops/rmsnorm.py", '"""rmsnorm kernels (fixture)."""\n'),
        ),
        author=_AITER_BOT,
    ),
    CommitSpec(
        subject="[Release] v0.1.5 (#960)",
        changes=(
            (
                "README.md",
                "# aiter\n\nAI tensor engine for ROCm (relpipe fixture repository).\n\nv0.1.5\n",
            ),
        ),
        author=_AITER_BOT,
    ),
    CommitSpec(
        subject="fix(mha): guard the varlen path on gfx950 (#1012)",
        changes=(("aiter/ops/mha.py", '"""mha kernels (fixture)."""\n'),),
        author=_AITER_BOT,
    ),
)
AITER_HISTORY = History(
    name="aiter", commits=AITER_COMMITS, tag=AITER_TAG, tag_index=1, next_version=AITER_NEXT
)

ROCM_VERSION = "7.2.4"
ROCM_BUILD = "112"  # /opt/rocm/.info/version holds "7.2.4-112", as ROCm writes it
LMCACHE_VERSION = "0.5.6.dev139+gf22dec28"


def atom_commits(index: int, variant: str) -> tuple[CommitSpec, ...]:
    """The ATOM history of nightly `index` (0-based) of `count`,
    the variant commit appended last.
    """
    base = ATOM_COMMITS[: NIGHTLY_POINTS[index] + 1]
    return base + ((VARIANT_COMMITS[variant],) if variant != "good" else ())
