"""RoPE + KV-cache write kernel: rotates q and k of one decode token and stores k, v in the cache.

One launch handles every (sequence, head) row of the fused QKV projection output: query rows are
rotated into the q buffer, key rows are rotated and (like value rows) written to the cache at the
current position, quantised to fp8 e4m3 with a per-token, per-head scale when the cache is fp8.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..kvcache import FP8_MAX, KVCache
from .launch import INTERPRETER, Launch, block, next_pow2


@triton.jit
def _round_rtne(x, MANT: tl.constexpr, MIN_EXP: tl.constexpr, MAX: tl.constexpr):
    """Round fp32 x to the nearest value with MANT mantissa bits (ties to even), saturating.

    Done in fp32 arithmetic so the compiled kernel and the CPU interpreter (whose fp32->bf16/fp8
    casts truncate) store identical bytes; the final cast is then exact on both.
    """
    bits = x.to(tl.int32, bitcast=True)
    exp = tl.maximum(((bits >> 23) & 0xFF) - 127, MIN_EXP)
    quantum = ((exp - MANT + 127) << 23).to(tl.float32, bitcast=True)
    # 1.5 * 2**23: adding and subtracting it rounds |y| < 2**22 to an integer, ties to even
    magic = 12582912.0
    y = x / quantum
    y = (y + magic) - magic
    return tl.minimum(tl.maximum(y * quantum, -MAX), MAX)


@triton.jit
def _rope_kv_kernel(
    qkv_ptr,
    cos_ptr,
    sin_ptr,
    q_ptr,
    kv_ptr,
    scale_ptr,
    pos,
    B,
    T_CAP,
    fp8_max,
    H: tl.constexpr,
    KVH: tl.constexpr,
    HD: tl.constexpr,
    HALF: tl.constexpr,
    KV_FP8: tl.constexpr,
    KV_BF16: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    NT = H + 2 * KVH  # rows per sequence: query, key and value heads
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < B * NT
    b = r // NT
    h = r % NT
    d = tl.arange(0, BLOCK_D)
    dmask = d < HALF
    m = rmask[:, None] & dmask[None, :]
    x1 = tl.load(qkv_ptr + r[:, None] * HD + d[None, :], mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(qkv_ptr + r[:, None] * HD + HALF + d[None, :], mask=m, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + pos * HALF + d, mask=dmask, other=1.0)[None, :]
    s = tl.load(sin_ptr + pos * HALF + d, mask=dmask, other=0.0)[None, :]
    rotate = (h < H + KVH)[:, None]
    y1 = tl.where(rotate, x1 * c - x2 * s, x1)
    y2 = tl.where(rotate, x2 * c + x1 * s, x2)
    is_q = (h < H) & rmask
    qrow = b * H + h
    tl.store(q_ptr + qrow[:, None] * HD + d[None, :], y1, mask=is_q[:, None] & dmask[None, :])
    tl.store(
        q_ptr + qrow[:, None] * HD + HALF + d[None, :], y2, mask=is_q[:, None] & dmask[None, :]
    )
    is_kv = (h >= H) & rmask
    which = (h >= H + KVH).to(tl.int32)
    kvh = h - H - which * KVH
    slot = ((which * B + b) * KVH + kvh) * T_CAP + pos
    kvm = is_kv[:, None] & dmask[None, :]
    if KV_FP8:
        amax = tl.maximum(
            tl.max(tl.where(m, tl.abs(y1), 0.0), axis=1),
            tl.max(tl.where(m, tl.abs(y2), 0.0), axis=1),
        )
        scale = tl.maximum(amax, 1e-6) / fp8_max
        y1 = _round_rtne(y1 / scale[:, None], 3, -6, 448.0)
        y2 = _round_rtne(y2 / scale[:, None], 3, -6, 448.0)
        tl.store(scale_ptr + slot, scale, mask=is_kv)
    elif KV_BF16:
        y1 = _round_rtne(y1, 7, -126, 3.0e38)
        y2 = _round_rtne(y2, 7, -126, 3.0e38)
    tl.store(kv_ptr + slot[:, None] * HD + d[None, :], y1.to(kv_ptr.dtype.element_ty), mask=kvm)
    tl.store(
        kv_ptr + slot[:, None] * HD + HALF + d[None, :], y2.to(kv_ptr.dtype.element_ty), mask=kvm
    )


def rope_kv_write(
    qkv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    cache: KVCache,
    layer: int,
    pos: int,
    n_heads: int,
    launch: Launch = INTERPRETER,
) -> torch.Tensor:
    """Rotate q/k of qkv [B, (H + 2 KVH) * HD] at `pos`, write k/v to `cache`;
    return q [B, H, HD].
    """
    B = qkv.shape[0]
    kvh, hd = cache.kv.shape[3], cache.kv.shape[5]
    if qkv.shape[1] != (n_heads + 2 * kvh) * hd or not 0 <= pos < cache.capacity:
        raise ValueError(f"rope_kv_write: qkv {tuple(qkv.shape)} / pos {pos} do not fit the cache")
    q = torch.empty(B, n_heads, hd, device=qkv.device, dtype=torch.float32)
    rows = B * (n_heads + 2 * kvh)
    BLOCK_R = block(launch.block_r, rows, floor=1)
    _rope_kv_kernel[(triton.cdiv(rows, BLOCK_R),)](
        qkv.contiguous(),
        cos,
        sin,
        q,
        cache.kv[layer],
        cache.scale[layer],
        pos,
        B,
        cache.capacity,
        FP8_MAX,
        H=n_heads,
        KVH=kvh,
        HD=hd,
        HALF=hd // 2,
        KV_FP8=cache.dtype == "fp8",
        KV_BF16=cache.dtype == "bf16",
        BLOCK_R=BLOCK_R,
        BLOCK_D=next_pow2(hd // 2),
    )
    return q
