"""The one error type of `engine/`: raised when the engine payload could not run (bad arguments,
missing model, unusable device).

Not a subclass of `relpipe.core.errors.RelpipeError`: the payload runs inside foreign images and
imports nothing of relpipe outside `relpipe.engine`. The host CLI catches it by name.
"""

from __future__ import annotations


class EngineError(Exception):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""

    exit_code: int = 2
