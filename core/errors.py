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
    from collections.abc import Sequence
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


def report_unexpected(prog: str, args: Sequence[str]) -> int:
    """Exit 3 for the exception being handled: one line on stderr naming it and a log file with
    the traceback (as pre-commit does). The one crash handler of every entry point (`relpipe`,
    `validate_perf_changelog`); only the standard library, for the commit hook."""
    import os  # deferred: not on the commit hook's usual path (start-up)
    import sys  # deferred: not on the commit hook's usual path (start-up)
    import tempfile  # deferred: not on the commit hook's usual path (start-up)
    import traceback  # deferred: not on the commit hook's usual path (start-up)

    from . import sanitize  # deferred: not on the commit hook's usual path (start-up)

    exc = sys.exc_info()[1]
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    log_dir = os.path.join(state, "relpipe")
    name = prog.replace(" ", "-")
    try:
        os.makedirs(log_dir, exist_ok=True)
        fd, log = tempfile.mkstemp(prefix=f"{name}-", suffix=".log", dir=log_dir)
    except OSError:
        fd, log = tempfile.mkstemp(prefix=f"relpipe-{name}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(f"{prog} {' '.join(args)}\n\n")
        out.write(traceback.format_exc())
    what = sanitize.terminal(f"{type(exc).__name__}: {exc}", limit=2000) or "(no message)"
    print(f"{prog}: unexpected error: {what[:300]} (traceback in {log})", file=sys.stderr)
    return EXIT_UNEXPECTED
