"""File I/O shared by the changelog package: size-capped reads and crash-safe replacement.

On the commit hook's import path (through `changelog.configs.load`), so it imports only what the
interpreter has loaded at start-up anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from changelog.errors import ChangelogError


def read_capped(path: Path, limit: int, what: str, hint: str = "check the path") -> bytes:
    """The bytes of `path`, refused (one-line `ChangelogError`) when unreadable or over `limit`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ChangelogError(f"cannot read {what} {path}: {exc.strerror}; {hint}") from exc
    if len(data) > limit:
        raise ChangelogError(f"{what} {path} is {len(data)} bytes, over the {limit}-byte cap")
    return data


def temp_glob(path: Path) -> str:
    """Pattern of the temp files `write_atomic` leaves beside `path` when killed mid-write."""
    return f".{path.name}.*.tmp"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash at any instant leaves the old file or the new one.

    The bytes go to a new temp file beside `path` (see `temp_glob`), are fsynced, take over the
    mode of the file they replace (a new file gets 0o644 less the umask), and are renamed over
    `path`; then the folder is fsynced so the rename itself survives a power loss. Raises
    OSError after removing the temp file.
    """
    directory = path.parent
    tmp = directory / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        except FileNotFoundError:
            pass  # a new file
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
