"""Timing shared by the bench_*.py scripts (not a bench itself: `run.py` runs bench_*.py only)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best(fn: Callable[[], object], runs: int) -> float:
    """Fastest of `runs` wall-clock timings: like `timeit`, the least disturbed by other load on
    the machine (shared CI runners); the reference is measured the same way in the same run."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
