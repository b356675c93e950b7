"""The tiny reference model: configuration, deterministic weights from a seed, and a weights file.

A decoder-only transformer with a byte vocabulary (256 tokens), RMSNorm, rotary position
embeddings (rotate-half), grouped-query attention and a SwiGLU MLP. Weights are drawn from a
seeded generator (nothing is downloaded); `save`/`load` round-trip them through a file so that
the loading path of a real engine (read, validate shapes and values, place on a device) is
exercised too.
"""

from __future__ import annotations

import dataclasses
import io
import os
from dataclasses import dataclass

import torch

from .errors import EngineError
from .files import write_atomic

VOCAB = 256
MAX_WEIGHTS_BYTES = 2 << 30  # a weights file larger than this is refused before it is read


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Shape of the model. `head_dim` is d_model / n_heads; KV heads divide the query heads."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn: int = 128
    rope_theta: float = 10000.0
    eps: float = 1e-5
    max_seq: int = 4096
    vocab: int = VOCAB

    def __post_init__(self) -> None:
        ints = {
            "d_model": self.d_model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "ffn": self.ffn,
            "max_seq": self.max_seq,
            "vocab": self.vocab,
        }
        for name, value in ints.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise EngineError(f"model config: {name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads or self.n_heads % self.n_kv_heads:
            raise EngineError(
                "model config: n_heads must divide d_model and n_kv_heads must divide n_heads"
            )
        if self.head_dim % 2:
            raise EngineError("model config: head_dim must be even for rotary embeddings")
        if not (self.eps > 0 and self.rope_theta > 1):
            raise EngineError("model config: eps must be > 0 and rope_theta > 1")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def group(self) -> int:
        """Query heads per KV head (grouped-query attention)."""
        return self.n_heads // self.n_kv_heads

    @property
    def qkv_width(self) -> int:
        return (self.n_heads + 2 * self.n_kv_heads) * self.head_dim


TINY = ModelConfig()


@dataclass(frozen=True, kw_only=True)
class Weights:
    """All parameters, per-layer tensors stacked on a leading layer axis; row-major [out, in]."""

    config: ModelConfig
    embed: torch.Tensor  # [V, D]
    attn_norm: torch.Tensor  # [L, D]
    wqkv: torch.Tensor  # [L, (H + 2 KVH) * HD, D]
    wo: torch.Tensor  # [L, D, H * HD]
    mlp_norm: torch.Tensor  # [L, D]
    w_gate_up: torch.Tensor  # [L, 2 I, D]; gate rows first, then up rows (silu_and_mul order)
    w_down: torch.Tensor  # [L, D, I]
    final_norm: torch.Tensor  # [D]
    lm_head: torch.Tensor  # [V, D]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        c = self.config
        L, D, F = c.n_layers, c.d_model, c.ffn
        return {
            "embed": (c.vocab, D),
            "attn_norm": (L, D),
            "wqkv": (L, c.qkv_width, D),
            "wo": (L, D, c.n_heads * c.head_dim),
            "mlp_norm": (L, D),
            "w_gate_up": (L, 2 * F, D),
            "w_down": (L, D, F),
            "final_norm": (D,),
            "lm_head": (c.vocab, D),
        }

    def tensors(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in self.shapes()}

    def to(self, device: str, dtype: torch.dtype = torch.float32) -> Weights:
        moved = {
            k: v.to(device=device, dtype=dtype).contiguous() for k, v in self.tensors().items()
        }
        return Weights(config=self.config, **moved)


def init_weights(config: ModelConfig = TINY, seed: int = 0) -> Weights:
    """Deterministic weights: N(0, 1/fan_in) matrices, norms near 1 (so the norm weight matters)."""
    gen = torch.Generator().manual_seed(seed)
    c = config

    def mat(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) / shape[-1] ** 0.5

    def norm(*shape: int) -> torch.Tensor:
        return 1.0 + 0.1 * torch.randn(*shape, generator=gen)

    L, D, F = c.n_layers, c.d_model, c.ffn
    return Weights(
        config=c,
        embed=torch.randn(c.vocab, D, generator=gen),
        attn_norm=norm(L, D),
        wqkv=mat(L, c.qkv_width, D),
        wo=mat(L, D, c.n_heads * c.head_dim),
        mlp_norm=norm(L, D),
        w_gate_up=mat(L, 2 * F, D),
        w_down=mat(L, D, F),
        final_norm=norm(D),
        lm_head=mat(c.vocab, D) * 4.0,  # a wider logit spread keeps greedy argmax away from ties
    )


def save(weights: Weights, path: str) -> None:
    """Write config + tensors (torch's zip format, loadable with weights_only=True)."""
    payload = {
        "format": "relpipe-tiny-v1",
        "config": dataclasses.asdict(weights.config),
        "tensors": {k: v.detach().cpu().contiguous() for k, v in weights.tensors().items()},
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    write_atomic(path, buffer.getvalue())


def load(path: str) -> Weights:
    """Read a weights file written by `save`, validating everything; EngineError on any defect."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise EngineError(f"weights file {path}: cannot read it ({exc.strerror})") from exc
    if size > MAX_WEIGHTS_BYTES:
        raise EngineError(
            f"weights file {path}: {size} bytes is over the {MAX_WEIGHTS_BYTES}-byte cap"
        )
    try:
        # weights_only: a weights file is untrusted input and must not be able to run code.
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a corrupt archive
        raise EngineError(
            f"weights file {path}: not a readable weights archive ({type(exc).__name__})"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != "relpipe-tiny-v1":
        raise EngineError(f"weights file {path}: not a relpipe-tiny-v1 weights file")
    raw_config, tensors = payload.get("config"), payload.get("tensors")
    if not isinstance(raw_config, dict) or not isinstance(tensors, dict):
        raise EngineError(f"weights file {path}: config or tensors missing")
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    if set(raw_config) != fields:
        raise EngineError(
            f"weights file {path}: config keys {sorted(raw_config)} != {sorted(fields)}"
        )
    config = ModelConfig(**raw_config)
    empty = {f.name: torch.empty(0) for f in dataclasses.fields(Weights) if f.name != "config"}
    probe = Weights(config=config, **empty)
    expected = probe.shapes()
    if set(tensors) != set(expected):
        raise EngineError(f"weights file {path}: tensors {sorted(tensors)} != {sorted(expected)}")
    for name, shape in expected.items():
        t = tensors[name]
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or not t.is_floating_point():
            raise EngineError(
                f"weights file {path}: tensor {name} must be a float tensor of shape {shape}"
            )
        if not bool(torch.isfinite(t).all()):
            raise EngineError(f"weights file {path}: tensor {name} has non-finite values")
    return Weights(config=config, **{k: tensors[k].float().contiguous() for k in expected})


def encode(text: str | bytes) -> list[int]:
    """Byte-level tokens of a prompt (UTF-8)."""
    return list(text.encode("utf-8") if isinstance(text, str) else text)


def decode_bytes(tokens: list[int]) -> str:
    """Text of generated byte tokens; invalid UTF-8 is replaced, never raised."""
    return bytes(tokens).decode("utf-8", errors="replace")


def rope_tables(config: ModelConfig, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [max_seq, head_dim / 2] of rotate-half RoPE; both decode paths read these."""
    half = config.head_dim // 2
    inv_freq = 1.0 / (
        config.rope_theta ** (torch.arange(0, half, dtype=torch.float64) * 2 / config.head_dim)
    )
    angles = torch.arange(config.max_seq, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return (
        angles.cos().float().to(device).contiguous(),
        angles.sin().float().to(device).contiguous(),
    )
