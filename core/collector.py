"""The cyclic garbage collector paused while a large batch of acyclic objects is made.

CPython's collector runs on allocation counts: building 100,000 rows or run identities makes it
walk every live object again and again (a fifth to a third of the time, measured in
`bench/bench_history.py`), though tuples, lists and slotted records that hold only strings and
numbers can never form a cycle; reference counting frees them. Paused, the collection runs once
after the batch, when most of it is already freed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside; nested uses are no-ops; the state on entry is restored."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
