"""Decode-time projection kernel: y = act(norm(x) @ W^T) + residual, in one launch.

One kernel serves every projection of the mono path through compile-time switches:
`HAS_NORM` fuses RMSNorm of the input rows (the norm weight is applied on the fly, so the normed
activations never go to memory), `SWIGLU` computes gate and up columns together and writes
silu(gate) * up (the fused SwiGLU), `HAS_RES` adds the residual stream in the epilogue (it may be
updated in place: each program owns its output tile). Math is fp32 whatever the storage dtype.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .launch import INTERPRETER, Launch, block


@triton.jit
def _linear_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    res_ptr,
    nw_ptr,
    B,
    N,
    K,
    eps,
    HAS_NORM: tl.constexpr,
    SWIGLU: tl.constexpr,
    HAS_RES: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_n = tl.program_id(0)
    pid_b = tl.program_id(1)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bmask = rb < B
    nmask = rn < N
    rk0 = tl.arange(0, BLOCK_K)
    rstd = tl.zeros([BLOCK_B], dtype=tl.float32)
    if HAS_NORM:
        # The RMS of a row needs the whole row; every program recomputes it (K reads of x are
        # cheap next to its N x K weight reads) instead of a separate norm launch.
        ss = tl.zeros([BLOCK_B], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            rk = k0 + rk0
            xm = bmask[:, None] & (rk < K)[None, :]
            x = tl.load(x_ptr + rb[:, None] * K + rk[None, :], mask=xm, other=0.0).to(tl.float32)
            ss += tl.sum(x * x, axis=1)
        rstd = 1.0 / tl.sqrt(ss / K + eps)
    acc = tl.zeros([BLOCK_B, BLOCK_N], dtype=tl.float32)
    acc_up = tl.zeros([BLOCK_B, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + rk0
        kmask = rk < K
        x = tl.load(
            x_ptr + rb[:, None] * K + rk[None, :], mask=bmask[:, None] & kmask[None, :], other=0.0
        ).to(tl.float32)
        if HAS_NORM:
            nw = tl.load(nw_ptr + rk, mask=kmask, other=0.0).to(tl.float32)
            x = x * rstd[:, None] * nw[None, :]
        wm = nmask[:, None] & kmask[None, :]
        w = tl.load(w_ptr + rn[:, None] * K + rk[None, :], mask=wm, other=0.0).to(tl.float32)
        acc += tl.dot(x, tl.trans(w), input_precision="ieee")
        if SWIGLU:
            wu = tl.load(w_ptr + (rn[:, None] + N) * K + rk[None, :], mask=wm, other=0.0).to(
                tl.float32
            )
            acc_up += tl.dot(x, tl.trans(wu), input_precision="ieee")
    if SWIGLU:
        acc = acc / (1.0 + tl.exp(-acc)) * acc_up
    omask = bmask[:, None] & nmask[None, :]
    if HAS_RES:
        acc += tl.load(res_ptr + rb[:, None] * N + rn[None, :], mask=omask, other=0.0).to(
            tl.float32
        )
    tl.store(out_ptr + rb[:, None] * N + rn[None, :], acc.to(out_ptr.dtype.element_ty), mask=omask)


def linear(
    x: torch.Tensor,
    w: torch.Tensor,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-5,
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    launch: Launch = INTERPRETER,
) -> torch.Tensor:
    """x [B, K] @ w[N', K]^T with optional fused RMSNorm, SwiGLU (N' = 2N) and residual; fp32 out.

    `out` may be `residual` itself (in-place update of the residual stream).
    """
    if x.dim() != 2 or w.dim() != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"linear: shapes {tuple(x.shape)} and {tuple(w.shape)} do not chain")
    x, w = x.contiguous(), w.contiguous()
    B, K = x.shape
    N = w.shape[0] // 2 if swiglu else w.shape[0]
    if swiglu and w.shape[0] % 2:
        raise ValueError("linear: SwiGLU needs an even number of weight rows (gate then up)")
    if out is None:
        out = torch.empty(B, N, device=x.device, dtype=torch.float32)
    if residual is not None and (tuple(residual.shape) != (B, N) or not residual.is_contiguous()):
        raise ValueError("linear: residual must be a contiguous [B, N] tensor")
    BLOCK_B = block(launch.block_b, B)
    BLOCK_N = block(launch.block_n, N)
    BLOCK_K = block(launch.block_k, K)
    grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(B, BLOCK_B))
    _linear_kernel[grid](
        x,
        w,
        out,
        residual if residual is not None else out,
        norm_weight if norm_weight is not None else w,
        B,
        N,
        K,
        eps,
        HAS_NORM=norm_weight is not None,
        SWIGLU=swiglu,
        HAS_RES=residual is not None,
        BLOCK_B=BLOCK_B,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
    )
    return out
