"""Decode attention over the KV cache: one query token per sequence, GQA, split-K.

Programs are (sequence, KV head, split): each loads the G query heads that share a KV head once,
streams its slice of the cache with an online softmax, and either writes the normalised output
(one split) or its partial (max, sum, accumulator) for `_reduce_kernel` to combine. fp8 entries
are dequantised with their per-token scale as they are loaded.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..kvcache import KVCache
from .launch import INTERPRETER, Launch, block, next_pow2


@triton.jit
def _attn_kernel(
    q_ptr,
    kv_ptr,
    scale_ptr,
    out_ptr,
    m_ptr,
    l_ptr,
    seq_len,
    chunk,
    B,
    T_CAP,
    sm_scale,
    H: tl.constexpr,
    KVH: tl.constexpr,
    G: tl.constexpr,
    HD: tl.constexpr,
    SPLITS: tl.constexpr,
    KV_FP8: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    b = pid // KVH
    kvh = pid % KVH
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    gmask = g < G
    dmask = d < HD
    row = b * H + kvh * G + g
    q = tl.load(
        q_ptr + row[:, None] * HD + d[None, :], mask=gmask[:, None] & dmask[None, :], other=0.0
    )
    k_base = (b * KVH + kvh) * T_CAP
    v_base = ((B + b) * KVH + kvh) * T_CAP
    start = split * chunk
    end = tl.minimum(start + chunk, seq_len)
    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for t0 in range(start, end, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        tmask = t < end
        lm = tmask[:, None] & dmask[None, :]
        k = tl.load(kv_ptr + (k_base + t)[:, None] * HD + d[None, :], mask=lm, other=0.0).to(
            tl.float32
        )
        v = tl.load(kv_ptr + (v_base + t)[:, None] * HD + d[None, :], mask=lm, other=0.0).to(
            tl.float32
        )
        if KV_FP8:
            k = k * tl.load(scale_ptr + k_base + t, mask=tmask, other=0.0)[:, None]
            v = v * tl.load(scale_ptr + v_base + t, mask=tmask, other=0.0)[:, None]
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * sm_scale
        s = tl.where(tmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m_i = m_new
    om = gmask[:, None] & dmask[None, :]
    if SPLITS == 1:
        tl.store(out_ptr + row[:, None] * HD + d[None, :], acc / l_i[:, None], mask=om)
    else:
        prow = row * SPLITS + split
        tl.store(out_ptr + prow[:, None] * HD + d[None, :], acc, mask=om)
        tl.store(m_ptr + prow, m_i, mask=gmask)
        tl.store(l_ptr + prow, l_i, mask=gmask)


@triton.jit
def _reduce_kernel(
    part_ptr,
    m_ptr,
    l_ptr,
    out_ptr,
    HD: tl.constexpr,
    SPLITS: tl.constexpr,
    BLOCK_S: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    row = tl.program_id(0)
    sp = tl.arange(0, BLOCK_S)
    d = tl.arange(0, BLOCK_D)
    smask = sp < SPLITS
    m = tl.load(m_ptr + row * SPLITS + sp, mask=smask, other=float("-inf"))
    big = tl.max(m, axis=0)
    # An empty split has m = -inf and weight exp(-inf) = 0; at least one split is never empty.
    w = tl.where(smask, tl.exp(m - big), 0.0)
    denom = tl.sum(tl.load(l_ptr + row * SPLITS + sp, mask=smask, other=0.0) * w, axis=0)
    part = tl.load(
        part_ptr + (row * SPLITS + sp)[:, None] * HD + d[None, :],
        mask=smask[:, None] & (d < HD)[None, :],
        other=0.0,
    )
    tl.store(out_ptr + row * HD + d, tl.sum(part * w[:, None], axis=0) / denom, mask=d < HD)


def decode_attention(
    q: torch.Tensor,
    cache: KVCache,
    layer: int,
    seq_len: int,
    launch: Launch = INTERPRETER,
    splits: int | None = None,
) -> torch.Tensor:
    """softmax(q K^T / sqrt(HD)) V over the first `seq_len` cached positions;
    q [B, H, HD] -> [B, H*HD].
    """
    B, H, HD = q.shape
    KVH = cache.kv.shape[3]
    if H % KVH or not 1 <= seq_len <= cache.capacity:
        raise ValueError(f"decode_attention: {H} heads / {KVH} KV heads / length {seq_len} invalid")
    sm_scale = HD**-0.5
    n_split = splits if splits is not None else launch.splits(seq_len)
    n_split = max(1, min(n_split, seq_len))
    BLOCK_T = block(launch.block_t, seq_len, floor=1)
    chunk = triton.cdiv(triton.cdiv(seq_len, n_split), BLOCK_T) * BLOCK_T
    n_split = triton.cdiv(seq_len, chunk)
    out = torch.empty(B, H, HD, device=q.device, dtype=torch.float32)
    if n_split == 1:
        part, m, lsum = out, out, out
    else:
        part = torch.empty(B * H * n_split, HD, device=q.device, dtype=torch.float32)
        m = torch.empty(B * H * n_split, device=q.device, dtype=torch.float32)
        lsum = torch.empty_like(m)
    G = H // KVH
    _attn_kernel[(B * KVH, n_split)](
        q.contiguous(),
        cache.kv[layer],
        cache.scale[layer],
        part,
        m,
        lsum,
        seq_len,
        chunk,
        B,
        cache.capacity,
        sm_scale,
        H=H,
        KVH=KVH,
        G=G,
        HD=HD,
        SPLITS=n_split,
        KV_FP8=cache.dtype == "fp8",
        BLOCK_G=next_pow2(G),
        BLOCK_D=next_pow2(HD),
        BLOCK_T=BLOCK_T,
    )
    if n_split > 1:
        _reduce_kernel[(B * H,)](
            part,
            m,
            lsum,
            out,
            HD=HD,
            SPLITS=n_split,
            BLOCK_S=next_pow2(n_split),
            BLOCK_D=next_pow2(HD),
        )
    return out.view(B, H * HD)
