"""RE2 patterns, each compiled once per process: every regex `relpipe review` matches over
repository text runs in linear time (no backtracking), and `re2.search(pattern, text)` would
compile its pattern again on every call."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2


@lru_cache(maxsize=1024)
def rx(pattern: str) -> Any:
    return re2.compile(pattern)
