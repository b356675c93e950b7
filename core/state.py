"""relpipe's own state found in a work tree, trusted only where this user put it.

relpipe keeps state under the benchmark repository's `.relpipe/` by default (the results store
`history.sqlite`, run records, the stage cache, bisect journals). A clone can bring such a folder
with it: a committed store with rewritten rows decides verdicts, a committed stage result is a
cache hit, a `.relpipe` that is a symbolic link makes relpipe write outside the repository
(issue 34.1). So state under a work tree is used only when
- no part of its path below the repository root is a symbolic link (it is never followed),
- every part of it that exists is owned by this user, and
- git tracks nothing at or under it (what git tracks arrived with the repository).
Otherwise one line says which and what to do. State named explicitly (`--history`, `--state`,
`$RELPIPE_STATE`, `$RELPIPE_HISTORY`) is where the user put it and is not second-guessed here;
the results store also refuses schema objects relpipe did not create (changelog/results/store.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import process
from .errors import RelpipeError

GIT_TIMEOUT_S = 30.0


class UntrustedState(RelpipeError):
    """State in the work tree that this user did not put there (exit 2)."""

    exit_code = 2


def trusted(path: Path, *, root: Path) -> Path:
    """`path` (existing or to be created, under `root`) when it can be trusted; UntrustedState
    naming the reason otherwise (see the module docstring)."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise UntrustedState(f"{path} is not under {root}") from None
    here = root
    for part in relative.parts:
        here = here / part
        try:
            info = here.lstat()
        except FileNotFoundError:
            break  # created by relpipe, as this user, below a folder already checked
        except OSError as exc:
            raise UntrustedState(f"cannot check relpipe's state {here}: {exc.strerror}") from None
        if os.path.islink(here):
            raise UntrustedState(
                f"relpipe's state {here} is a symbolic link; relpipe never follows one there "
                "(remove it, or name a place with --state/--history)"
            )
        if info.st_uid != os.getuid():
            raise UntrustedState(
                f"relpipe's state {here} is owned by another user (uid {info.st_uid}); "
                "remove it, or name a place with --state/--history"
            )
    tracked = _tracked(root, relative)
    if tracked:
        raise UntrustedState(
            f"relpipe's state {root / tracked} is tracked by git: it came with the repository, "
            f"not from this machine; untrack it (`git rm -r --cached {relative.parts[0]}`) and "
            "add it to .gitignore, or name a place with --state/--history"
        )
    return path


def _tracked(root: Path, relative: Path) -> str:
    """The first path git tracks at or under `relative` in `root`'s repository ("" if none, or if
    `root` is not in a git work tree)."""
    try:
        done = process.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", str(relative)],
            timeout=GIT_TIMEOUT_S,
            check=False,
            what="git ls-files",
        )
    except process.ProcessError:
        return ""  # no git: nothing can have arrived through it
    if done.returncode != 0:
        return ""
    first = done.stdout.split(b"\0", 1)[0]
    return first.decode("utf-8", "backslashreplace")
