"""The KV cache shared by both decode paths, and its storage dtypes (mirroring `kv_cache_dtype`).

Layout per layer: `kv[layer]` is [2 (k, v), B, KVH, T, HD] in the storage dtype and
`scale[layer]` is [2, B, KVH, T] fp32. fp8 (e4m3) entries are scaled per token and KV head:
scale = max(amax, 1e-6) / 448 and stored = x / scale, so dequantisation is stored * scale.
bf16 and fp32 entries are stored as is (their scale is unused). The reference path writes with
`quantize` below; the mono path's Triton kernel must produce the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .errors import EngineError

FP8_MAX = 448.0
KV_DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp8": torch.float8_e4m3fn,
}


def storage_dtype(name: str) -> torch.dtype:
    """torch dtype of a `kv_cache_dtype` name; EngineError for an unknown one."""
    try:
        return KV_DTYPES[name]
    except KeyError:
        raise EngineError(
            f"unknown KV cache dtype {name!r}; use one of {', '.join(KV_DTYPES)}"
        ) from None


def quantize(x: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference quantisation of x [..., HD] fp32 -> (stored [..., HD], scale [...])."""
    if name == "fp8":
        scale = x.abs().amax(dim=-1).clamp_min(1e-6) / FP8_MAX
        return (x / scale[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), scale
    return x.to(storage_dtype(name)), torch.ones(x.shape[:-1], device=x.device)


@dataclass(frozen=True)
class KVCache:
    """Preallocated cache for `batch` sequences of up to `capacity` positions."""

    dtype: str
    kv: torch.Tensor  # [L, 2, B, KVH, T, HD]
    scale: torch.Tensor  # [L, 2, B, KVH, T]

    @staticmethod
    def allocate(
        layers: int,
        batch: int,
        kv_heads: int,
        capacity: int,
        head_dim: int,
        dtype: str,
        device: str,
    ) -> KVCache:
        store = storage_dtype(dtype)
        kv = torch.zeros(layers, 2, batch, kv_heads, capacity, head_dim, device=device, dtype=store)
        scale = torch.ones(layers, 2, batch, kv_heads, capacity, device=device)
        return KVCache(dtype=dtype, kv=kv, scale=scale)

    @property
    def capacity(self) -> int:
        return self.kv.shape[4]

    def write(self, layer: int, pos: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store k, v [B, KVH, HD] (fp32) at position `pos` (reference path)."""
        for i, x in enumerate((k, v)):
            stored, scale = quantize(x, self.dtype)
            self.kv[layer, i, :, :, pos] = stored
            self.scale[layer, i, :, :, pos] = scale

    def read(self, layer: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Dequantised K, V [B, KVH, length, HD] fp32 of the first `length` positions."""
        out = []
        for i in range(2):
            x = self.kv[layer, i, :, :, :length].float()
            if self.dtype == "fp8":
                x = x * self.scale[layer, i, :, :, :length, None]
            out.append(x)
        return out[0], out[1]
