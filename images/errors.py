"""The one error type of `images/`: a registry, reference, lock file or container failed."""

from __future__ import annotations

from ..core.errors import RelpipeError


class ImageError(RelpipeError):
    """`str(err)` is one line: what was wrong and what to do. exit_code: 1 checked, 2 usage/env."""


class ContainerError(ImageError):
    """A container could not be created, run or read (environment error unless said otherwise)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class BuildError(ImageError):
    """A fixture image could not be built or pushed (environment problem)."""

    exit_code = 2
