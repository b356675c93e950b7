"""Batched greedy decode with a KV cache on two paths: `reference` (plain torch, fp32 math) and
`mono` (the Triton kernels, a handful of launches per layer).

Both paths implement one `step(tokens, pos) -> logits` over the same weights, RoPE tables and KV
cache layout (see kvcache.py); `greedy` drives either. Prompts of different lengths share a
position counter: a sequence is teacher-forced through its prompt and then fed its own argmax,
so every step processes exactly one token per sequence at the same position.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from .errors import EngineError
from .kernels import launch
from .kvcache import KVCache, storage_dtype
from .model import ModelConfig, Weights, rope_tables

Progress = Callable[[str], None]
PATHS = ("reference", "mono")


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Torch RMSNorm in fp32: x * rsqrt(mean(x^2) + eps) * weight."""
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()


def silu_and_mul_ref(x: torch.Tensor) -> torch.Tensor:
    """Torch SwiGLU activation: x[..., 2I] -> silu(x[..., :I]) * x[..., I:]."""
    gate, up = x.float().chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def rope_ref(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE of x [..., HD] with cos/sin [HD/2] of one position."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Decoder(Protocol):
    path: str
    config: ModelConfig

    def start(self, batch: int, capacity: int) -> None: ...

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor: ...


RmsNormOp = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
SiluAndMulOp = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Ops:
    """Op overrides for the mono path (e.g. the image's ATOM ops); None = relpipe's fused kernel."""

    rms_norm: RmsNormOp | None = None
    silu_and_mul: SiluAndMulOp | None = None
    provider: dict[str, str] = field(
        default_factory=lambda: {"rms_norm": "engine", "silu_and_mul": "engine"}
    )


def _checked(name: str, out: object, shape: tuple[int, ...]) -> torch.Tensor:
    # An image op is foreign code: a wrong shape or dtype is its defect, reported as such.
    if (
        not isinstance(out, torch.Tensor)
        or tuple(out.shape) != shape
        or not out.is_floating_point()
    ):
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise OpError(f"op {name} returned {got}, expected a float tensor of shape {shape}")
    return out.float().contiguous()


class OpError(EngineError):
    """An overriding op broke its contract (a checked failure of the image, exit 1)."""

    exit_code = 1


class _Base:
    def __init__(self, weights: Weights, kv_dtype: str, device: str) -> None:
        storage_dtype(kv_dtype)  # an unknown name fails here, before any work
        self.config = weights.config
        self.weights = weights.to(device)
        self.kv_dtype = kv_dtype
        self.device = device
        self.cos, self.sin = rope_tables(self.config, device)
        self.cache: KVCache | None = None

    def start(self, batch: int, capacity: int) -> None:
        c = self.config
        if capacity > c.max_seq:
            raise EngineError(f"decode needs {capacity} positions but the model allows {c.max_seq}")
        self.cache = KVCache.allocate(
            c.n_layers, batch, c.n_kv_heads, capacity, c.head_dim, self.kv_dtype, self.device
        )

    def _cache(self) -> KVCache:
        if self.cache is None:
            raise EngineError("decoder used before start()")
        return self.cache


class ReferenceDecoder(_Base):
    """Unfused torch decode step: the numerical reference (fp32 math, same KV quantisation)."""

    path = "reference"

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        c, w, cache = self.config, self.weights, self._cache()
        B, H, KVH, HD = tokens.shape[0], c.n_heads, c.n_kv_heads, c.head_dim
        x = w.embed[tokens]
        for layer in range(c.n_layers):
            h = rms_norm_ref(x, w.attn_norm[layer], c.eps)
            qkv = (h @ w.wqkv[layer].T).view(B, H + 2 * KVH, HD)
            q = rope_ref(qkv[:, :H], self.cos[pos], self.sin[pos])
            k = rope_ref(qkv[:, H : H + KVH], self.cos[pos], self.sin[pos])
            cache.write(layer, pos, k, qkv[:, H + KVH :])
            keys, values = cache.read(layer, pos + 1)
            keys = keys.repeat_interleave(c.group, dim=1)
            values = values.repeat_interleave(c.group, dim=1)
            scores = torch.einsum("bhd,bhtd->bht", q, keys) * HD**-0.5
            attn = torch.einsum("bht,bhtd->bhd", scores.softmax(dim=-1), values)
            x = x + attn.reshape(B, H * HD) @ w.wo[layer].T
            h = rms_norm_ref(x, w.mlp_norm[layer], c.eps)
            x = x + silu_and_mul_ref(h @ w.w_gate_up[layer].T) @ w.w_down[layer].T
        return rms_norm_ref(x, w.final_norm, c.eps) @ w.lm_head.T


class MonoDecoder(_Base):
    """Triton decode step: fused norm+QKV, RoPE+KV write, attention, o-proj+residual,
    fused norm+gate/up+SwiGLU, down+residual; LM head fused with the final norm."""

    path = "mono"

    def __init__(
        self, weights: Weights, kv_dtype: str, device: str, ops: Ops | None = None
    ) -> None:
        super().__init__(weights, kv_dtype, device)

        self.ops = ops or Ops()
        self.launch = launch.GPU if device == "cuda" else launch.INTERPRETER

    def _norm_linear(
        self, x: torch.Tensor, norm_w: torch.Tensor, w: torch.Tensor, *, swiglu: bool = False
    ) -> torch.Tensor:
        from .kernels.linear import linear  # deferred: loads torch (the engine extra)

        eps, B = self.config.eps, x.shape[0]
        if self.ops.rms_norm is not None:
            x = _checked("rms_norm", self.ops.rms_norm(x, norm_w, eps), tuple(x.shape))
            norm = None
        else:
            norm = norm_w
        if swiglu and self.ops.silu_and_mul is not None:
            gu = linear(x, w, norm_weight=norm, eps=eps, launch=self.launch)
            return _checked("silu_and_mul", self.ops.silu_and_mul(gu), (B, w.shape[0] // 2))
        return linear(x, w, norm_weight=norm, eps=eps, swiglu=swiglu, launch=self.launch)

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        from .kernels.attention import (
            decode_attention,  # deferred: loads torch (the engine extra)
        )
        from .kernels.linear import linear  # deferred: loads torch (the engine extra)
        from .kernels.rope import (
            rope_kv_write,  # deferred: loads torch (the engine extra)
        )

        c, w, cache = self.config, self.weights, self._cache()
        x = w.embed[tokens].contiguous()
        for layer in range(c.n_layers):
            qkv = self._norm_linear(x, w.attn_norm[layer], w.wqkv[layer])
            q = rope_kv_write(qkv, self.cos, self.sin, cache, layer, pos, c.n_heads, self.launch)
            attn = decode_attention(q, cache, layer, pos + 1, self.launch)
            linear(attn, w.wo[layer], residual=x, out=x, launch=self.launch)
            act = self._norm_linear(x, w.mlp_norm[layer], w.w_gate_up[layer], swiglu=True)
            linear(act, w.w_down[layer], residual=x, out=x, launch=self.launch)
        return self._norm_linear(x, w.final_norm, w.lm_head)


def make_decoder(
    path: str, weights: Weights, kv_dtype: str = "fp32", device: str = "cpu", ops: Ops | None = None
) -> Decoder:
    """A decoder of `path` ('reference' or 'mono')."""
    if path == "reference":
        return ReferenceDecoder(weights, kv_dtype, device)
    if path == "mono":
        return MonoDecoder(weights, kv_dtype, device, ops)
    raise EngineError(f"unknown decode path {path!r}; use one of {', '.join(PATHS)}")


@dataclass(frozen=True, kw_only=True)
class Generation:
    """Output of one batched greedy decode."""

    tokens: list[list[int]]  # generated tokens per sequence
    logits: torch.Tensor  # [B, new, V] fp32 on CPU: the logits each generated token came from
    steps: int
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        n = sum(len(t) for t in self.tokens)
        return n / self.seconds if self.seconds > 0 else float("inf")


def greedy(
    decoder: Decoder,
    prompts: Sequence[Sequence[int]],
    max_new: int,
    force: Sequence[Sequence[int]] | None = None,
    progress: Progress | None = None,
    stop: Callable[[int, list[int]], bool] | None = None,
) -> Generation:
    """Greedy-decode `max_new` tokens after each prompt (batch = len(prompts)).

    `force` feeds the given continuation instead of the argmax (teacher forcing, to compare two
    paths' logits on identical inputs). `stop(i, tokens)` ends sequence i early (server stops).
    """
    if not prompts or any(len(p) == 0 for p in prompts) or max_new < 1:
        raise EngineError("greedy decode needs non-empty prompts and max_new >= 1")
    if force is not None and (len(force) != len(prompts) or any(len(f) < max_new for f in force)):
        raise EngineError("forced continuations must cover max_new tokens of every prompt")
    c = decoder.config
    if any(t < 0 or t >= c.vocab for p in prompts for t in p):
        raise EngineError(f"prompt tokens must be in [0, {c.vocab})")
    B = len(prompts)
    lens = [len(p) for p in prompts]
    steps = max(lens) + max_new - 1
    decoder.start(B, steps + 1)
    device = getattr(decoder, "device", "cpu")
    out: list[list[int]] = [[] for _ in range(B)]
    done = [False] * B
    logits_out = torch.zeros(B, max_new, c.vocab)
    feed = [p[0] for p in prompts]
    t0 = time.perf_counter()
    for pos in range(steps):
        if progress is not None:
            progress(f"{decoder.path} decode step {pos + 1}/{steps}")
        logits = decoder.step(torch.tensor(feed, device=device, dtype=torch.long), pos)
        best = logits.argmax(dim=-1).tolist()  # the host sync: a hung kernel is caught here
        host = logits.float().cpu()
        for i in range(B):
            gen_index = pos - (lens[i] - 1)
            if pos + 1 < lens[i]:
                feed[i] = prompts[i][pos + 1]
                continue
            if gen_index < max_new and not done[i]:
                logits_out[i, gen_index] = host[i]
                token = force[i][gen_index] if force is not None else best[i]
                out[i].append(token)
                # the stop hook sees every token, the last one included (the server streams it)
                hit = stop is not None and stop(i, out[i])
                done[i] = hit or len(out[i]) >= max_new
            feed[i] = out[i][-1] if out[i] else best[i]
        if all(done):
            break
    seconds = time.perf_counter() - t0
    return Generation(tokens=out, logits=logits_out, steps=pos + 1, seconds=seconds)
