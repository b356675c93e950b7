"""Appending one entry to perf-changelog.yaml: locked, re-validated, atomic.

The write is crash-safe (`core.files.write_atomic`: temp file, fsync, one rename, folder
fsync), so a crash at any instant leaves the old file or the old file plus the whole entry.
Concurrent appenders serialise on an advisory lock taken on the directory (the file itself is
replaced by the rename, so a lock on its inode would not exclude a process that opened the new
one). Before the rename the new bytes are checked the way the commit hook checks them: the old
bytes are a prefix and the appended part parses, clean, to exactly the entry that was rendered.
"""

from __future__ import annotations

from pathlib import Path

from ..core.files import file_lock, temp_glob, write_atomic
from .entry import Entry, parse_appended, render
from .errors import ChangelogError


def appended_bytes(path: Path, old: bytes, entry: Entry) -> bytes:
    """old + separator + rendered entry, checked against `old` with the hook's suffix parser.

    The pure half of `append`, for a writer that commits the changelog with other files under its
    own lock (a release: `pipeline.release.write_staged`).
    """
    if old and not old.endswith(b"\n"):
        raise ChangelogError(f"{path}: does not end with a newline; fix the file before appending")
    text = render(entry).encode("utf-8")
    new = old + (b"\n" if old else b"") + text
    checked = parse_appended(old, new, str(path))
    if checked.errors:
        raise ChangelogError(f"refusing to append: {checked.errors[0].format(str(path))}")
    if len(checked.blocks) != 1 or checked.blocks[0].entry != entry:
        raise ChangelogError(
            f"refusing to append to {path}: the written entry does not read back as the entry"
        )
    return new


def append(path: Path, entry: Entry) -> bytes:
    """Append `entry` to the changelog at `path` (created if absent); return the new file bytes."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    with file_lock(directory, what="changelog folder lock", error=ChangelogError):
        try:
            # Leftovers of appenders killed mid-write: nobody else writes while we hold the lock.
            for stale in directory.glob(temp_glob(path)):
                stale.unlink(missing_ok=True)
            try:
                old = path.read_bytes()
            except FileNotFoundError:
                old = b""
            new = appended_bytes(path, old, entry)
            write_atomic(path, new)
            return new
        except OSError as exc:
            raise ChangelogError(
                f"cannot append to {path}: {exc.strerror}; check permissions and disk space"
            ) from exc
