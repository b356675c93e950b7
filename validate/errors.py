"""The one error type of `validate/`: a check could not be run (bad rules file, unreadable
repository, bad notes)."""

from __future__ import annotations

from ..core.errors import RelpipeError


class ValidateError(RelpipeError):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""
