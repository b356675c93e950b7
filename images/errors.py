"""The one error type of `images/`: raised when a registry, reference, lock file or container operation failed."""

from __future__ import annotations


class ImageError(Exception):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""

    exit_code: int = 2
