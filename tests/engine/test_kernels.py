"""Each Triton kernel against its torch reference, over hypothesis-drawn shapes and dtypes."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.engine.decode import rms_norm_ref, rope_ref, silu_and_mul_ref
from relpipe.engine.kernels.attention import decode_attention
from relpipe.engine.kernels.launch import GPU, INTERPRETER, Launch, block, next_pow2
from relpipe.engine.kernels.linear import linear
from relpipe.engine.kernels.rope import rope_kv_write
from relpipe.engine.kvcache import KVCache
from relpipe.engine.model import ModelConfig, rope_tables

# Interpreted programs cost milliseconds each: few, small examples (deadline off: CI is shared).
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Small blocks so that the loops, remainders and several programs are exercised.
SMALL = Launch(
    block_b=16, block_n=16, block_k=16, block_t=4, block_r=4, max_splits=4, split_min_len=3
)


def test_block_sizes_are_powers_of_two_within_bounds() -> None:
    assert [next_pow2(n) for n in (1, 2, 3, 16, 17)] == [1, 2, 4, 16, 32]
    assert block(256, 192) == 256 and block(32, 3000) == 32 and block(64, 3) == 16
    for launch in (GPU, INTERPRETER):
        for size in (
            launch.block_b,
            launch.block_n,
            launch.block_k,
            launch.block_t,
            launch.block_r,
        ):
            assert size & (size - 1) == 0


@FEW
@given(
    B=st.integers(1, 18),
    N=st.integers(1, 40),
    K=st.integers(1, 40),
    norm=st.booleans(),
    swiglu=st.booleans(),
    residual=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.bfloat16]),
    seed=st.integers(0, 2**16),
)
def test_linear_matches_torch(
    B: int, N: int, K: int, norm: bool, swiglu: bool, residual: bool, dtype: torch.dtype, seed: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, K, generator=g).to(dtype)
    w = torch.randn(2 * N if swiglu else N, K, generator=g).to(dtype)
    nw = (1 + 0.1 * torch.randn(K, generator=g)).to(dtype) if norm else None
    res = torch.randn(B, N, generator=g) if residual else None
    h = rms_norm_ref(x, nw, 1e-5) if nw is not None else x.float()
    want = h @ w.float().T
    if swiglu:
        want = silu_and_mul_ref(want)
    if res is not None:
        want = want + res
    got = linear(x, w, norm_weight=nw, swiglu=swiglu, residual=res, out=res, launch=SMALL)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    if res is not None:
        assert got.data_ptr() == res.data_ptr()  # updated in place


@FEW
@given(
    B=st.integers(1, 3),
    kv_heads=st.sampled_from([1, 2]),
    group=st.sampled_from([1, 2, 3]),
    half=st.sampled_from([1, 3, 4]),
    kv=st.sampled_from(["fp32", "bf16", "fp8"]),
    pos=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_rope_kv_write_stores_the_reference_bytes(
    B: int, kv_heads: int, group: int, half: int, kv: str, pos: int, seed: int
) -> None:
    H, HD = kv_heads * group, 2 * half
    cfg = ModelConfig(d_model=H * HD, n_heads=H, n_kv_heads=kv_heads, max_seq=8)
    cos, sin = rope_tables(cfg, "cpu")
    qkv = torch.randn(B, (H + 2 * kv_heads) * HD, generator=torch.Generator().manual_seed(seed)) * 3
    got_cache = KVCache.allocate(1, B, kv_heads, 8, HD, kv, "cpu")
    want_cache = KVCache.allocate(1, B, kv_heads, 8, HD, kv, "cpu")
    q = rope_kv_write(qkv, cos, sin, got_cache, 0, pos, H, SMALL)
    rows = qkv.view(B, H + 2 * kv_heads, HD)
    want_cache.write(
        0, pos, rope_ref(rows[:, H : H + kv_heads], cos[pos], sin[pos]), rows[:, H + kv_heads :]
    )
    torch.testing.assert_close(q, rope_ref(rows[:, :H], cos[pos], sin[pos]), rtol=1e-6, atol=1e-6)
    # identical storage bytes: the quantisation (RTNE, per-token fp8 scale) is the reference's
    assert torch.equal(got_cache.kv.view(torch.uint8), want_cache.kv.view(torch.uint8))
    torch.testing.assert_close(got_cache.scale, want_cache.scale, rtol=1e-6, atol=0)


@FEW
@given(
    B=st.integers(1, 2),
    kv_heads=st.sampled_from([1, 2]),
    group=st.sampled_from([1, 2, 4]),
    HD=st.sampled_from([4, 6, 8]),
    seq=st.integers(1, 13),
    splits=st.integers(1, 4),
    kv=st.sampled_from(["fp32", "bf16", "fp8"]),
    seed=st.integers(0, 2**16),
)
def test_decode_attention_matches_torch(
    B: int, kv_heads: int, group: int, HD: int, seq: int, splits: int, kv: str, seed: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    H = kv_heads * group
    cache = KVCache.allocate(1, B, kv_heads, 16, HD, kv, "cpu")
    for pos in range(seq):
        cache.write(
            0,
            pos,
            torch.randn(B, kv_heads, HD, generator=g) * 2,
            torch.randn(B, kv_heads, HD, generator=g),
        )
    q = torch.randn(B, H, HD, generator=g)
    keys, values = cache.read(0, seq)
    keys, values = keys.repeat_interleave(group, 1), values.repeat_interleave(group, 1)
    p = (torch.einsum("bhd,bhtd->bht", q, keys) * HD**-0.5).softmax(-1)
    want = torch.einsum("bht,bhtd->bhd", p, values).reshape(B, H * HD)
    got = decode_attention(q, cache, 0, seq, SMALL, splits=splits)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_launch_splits_long_sequences_on_gpu_policy_only() -> None:
    assert INTERPRETER.splits(100_000) == 1
    assert GPU.splits(100) == 1 and GPU.splits(512) == 4 and GPU.splits(100_000) == 8
