"""Launch geometry of the kernels: one policy for compiled GPU kernels, one for the interpreter.

Block sizes are powers of two (Triton requires it); masks handle every remainder. In the
interpreter each program instance costs milliseconds, so blocks are as large as the problem and
grids as small as possible; on a GPU blocks are small enough to spread weight reads over the SMs.
"""

from __future__ import annotations

from dataclasses import dataclass


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << max(0, (n - 1).bit_length())


@dataclass(frozen=True, kw_only=True)
class Launch:
    """Upper bounds for block sizes and the split-K policy of decode attention."""

    block_b: int  # batch rows per program in projections (tl.dot needs >= 16)
    block_n: int  # output columns per program in projections
    block_k: int  # reduction chunk in projections
    block_t: int  # KV positions per attention tile
    block_r: int  # (batch, head) rows per RoPE/KV-write program
    max_splits: int  # split-K partitions of the sequence in decode attention
    split_min_len: int  # at least this many positions per split

    def splits(self, seq_len: int) -> int:
        return max(1, min(self.max_splits, seq_len // self.split_min_len))


INTERPRETER = Launch(
    block_b=16,
    block_n=256,
    block_k=256,
    block_t=64,
    block_r=64,
    max_splits=1,
    split_min_len=1 << 30,
)
GPU = Launch(
    block_b=16, block_n=32, block_k=128, block_t=32, block_r=16, max_splits=8, split_min_len=128
)


def block(limit: int, n: int, floor: int = 16) -> int:
    """Block size for a dimension of n: a power of two in [floor, limit], no larger than needed."""
    return max(floor, min(limit, next_pow2(n)))
