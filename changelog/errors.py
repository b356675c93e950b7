"""The one error type of `changelog/`: the benchmark repository's records (changelog, configs,
notes) are invalid or unreadable."""

from __future__ import annotations

from ..core.errors import RelpipeError


class ChangelogError(RelpipeError):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""
