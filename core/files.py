"""Files written and read safely: crash-safe replacement, an advisory lock with a timeout, and
size-capped reads of untrusted files.

`write_atomic` is the one writer of every record relpipe keeps (changelog, configs, lock file, run
records, reports): a crash at any instant leaves the old file or the new one, never a mix.
`file_lock` is the one lock: `flock` on a lock file beside the protected file (or on a folder),
with a deadline so that a stuck holder gives a one-line error instead of a hang.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time

from .errors import RelpipeError

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path  # annotations only: the hook's start-up does not load pathlib

LOCK_POLL_S = 0.05


def read_capped(
    path: Path | str,
    limit: int,
    what: str,
    hint: str = "check the path",
    *,
    error: type[RelpipeError] = RelpipeError,
) -> bytes:
    """The bytes of a regular file `path`, refused with one `error` line when unreadable, not a
    regular file, or over `limit` bytes.

    Opened without blocking and checked on the open descriptor (no race with a rename): a FIFO
    (whose open waits forever for a writer), a device (`/dev/zero` never ends) or a folder is
    refused before any read. Reads at most `limit + 1` bytes, so a huge file costs no memory.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise error(f"cannot read {what} {path}: {reason}; {hint}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(
                f"cannot read {what} {path}: not a regular file ({special_kind(mode)}); {hint}"
            )
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise error(f"cannot read {what} {path}: {reason}; {hint}") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise error(f"{what} {path} is over the {limit}-byte cap; refusing to read it")
    return data


def special_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words (from `st_mode`)."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def temp_glob(path: Path | str) -> str:
    """Pattern of the temp files `write_atomic` leaves beside `path` when killed mid-write."""
    return f".{os.path.basename(path)}.*.tmp"


def fsync_dir(directory: Path | str) -> None:
    """Make a rename or unlink in `directory` survive a power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path | str, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace `path` with `data` so that a crash at any instant leaves the old file or the new one.

    The bytes go to a new temp file beside `path` (see `temp_glob`) and are fsynced; the temp file
    takes over the mode of the file it replaces (`mode`, or 0o644 less the umask for a new file)
    and is renamed over `path`; then the folder is fsynced so the rename itself survives a power
    loss. Raises OSError after removing the temp file.
    """
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(
        directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            with contextlib.suppress(FileNotFoundError):  # a new file keeps 0o644 & ~umask
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def publish(tmp: Path | str, path: Path | str) -> None:
    """Rename a fully written temp file (same folder) over `path`, durably: fsync the file, rename,
    fsync the folder. For content streamed to a temp file whose final name is known only at the
    end (a content-addressed blob); use `write_atomic` when the bytes are at hand."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.fspath(path)) or ".")


@contextlib.contextmanager
def file_lock(
    path: Path | str,
    *,
    timeout_s: float | None = 60.0,
    what: str = "lock",
    error: type[RelpipeError] = RelpipeError,
) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (a lock file, created if absent, or a folder).

    Waits up to `timeout_s` seconds (None: forever) and then raises one `error` line naming the
    lock. The lock dies with the process, so a killed holder never leaves it taken.
    """
    try:
        if os.path.isdir(path):
            fd = os.open(path, os.O_RDONLY)
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise error(f"cannot open {what} {path}: {exc.strerror}; check the path") from exc
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise error(
                        f"{what} {path} is held by another process for over {timeout_s:g} s; "
                        "wait for it to finish or stop it"
                    ) from None
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
