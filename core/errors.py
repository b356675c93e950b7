"""The error base of relpipe: one line for the user and the exit code the CLI returns.

Each layer subclasses `RelpipeError` once (`ChangelogError`, `ImageError`, ...); the CLI catches
the base and renders it as `relpipe COMMAND: error: MESSAGE`. Exit codes follow DESIGN.md:
1 a checked failure, 2 a usage or environment error (the default), 3 an unexpected error (only
the CLI's error handler produces it, never an exception class).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from types import ModuleType

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNEXPECTED = 3


class RelpipeError(Exception):
    """`str(err)` is one line: what was wrong and what to do."""

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class MissingExtra(RelpipeError):
    """An optional dependency group is not installed; the message is the pip line that fixes it."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"this command needs {module!r}, which is not installed; "
            f"run: pip install 'relpipe[{extra}]'"
        )
        self.module = module
        self.extra = extra


def require(module: str, extra: str) -> ModuleType:
    """Import `module` from the optional dependency group `extra`, or raise `MissingExtra`."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.split(".")[0] == exc.name.split(".")[0]:
            raise MissingExtra(module, extra) from None
        raise
