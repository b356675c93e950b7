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


def best_cpu(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Fastest wall-clock and fastest CPU time (`time.process_time`, this process only) of `runs`
    calls. On a loaded machine the wall clock counts the time other processes held the CPU; the
    CPU time does not, so a single-threaded target is judged on it and the wall time shown next
    to it (I/O waits are not CPU time: the data these benches read is in the page cache)."""
    walls, cpus = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)
