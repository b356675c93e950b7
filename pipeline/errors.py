"""The one error type of `pipeline/`: a pipeline stage could not run (bad run record, refused
release)."""

from __future__ import annotations

from ..core.errors import RelpipeError


class PipelineError(RelpipeError):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""
