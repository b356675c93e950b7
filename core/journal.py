"""Several files replaced as one change: an intent journal, written before the files, replayed
after a crash.

`write_atomic` makes one file crash-safe; a change that spans files (a release rewrites a master
config, the changelog and the lock file) needs more, because a kill between two renames leaves a
repository that is neither the old one nor the new one. `commit` first writes a journal (atomic,
fsynced) that holds, for every file, the hash it had before and its complete new bytes; then it
replaces the files one by one; then it removes the journal. `recover` finishes a change whose
journal survived a crash: every file still at its old hash is rolled forward, so after `recover`
the files are either all old (no journal was committed) or all new. A file that matches neither
hash was changed by someone else after the crash: `recover` refuses with one line and keeps the
journal, never overwriting their work.

The caller holds the lock that serialises writers of these files (`core.files.file_lock`) around
both calls; the journal is not a lock.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from relpipe.core.errors import RelpipeError
from relpipe.core.files import fsync_dir, read_capped, temp_glob, write_atomic

SCHEMA = 1
MAX_JOURNAL_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """One file of a change: its path relative to the change's root and its new bytes."""

    rel: str
    old_sha256: str | None  # None: the file did not exist before
    new: bytes


def sha256_of(path: Path) -> str | None:
    """The hex SHA-256 of a file's bytes, None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _safe_rel(rel: str, error: type[RelpipeError]) -> PurePosixPath:
    # The journal sits in a folder others can write to; a path in it must stay under the root.
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(p in ("..", "") for p in rel.split("/")):
        raise error(f"journal names the path {rel[:120]!r}, which is outside the repository")
    return path


def _clear(journal: Path, root: Path, rels: Sequence[str]) -> None:
    """Remove the journal and the temp files writers killed mid-write left beside the files."""
    for rel in rels:
        target = root / rel
        for stale in target.parent.glob(temp_glob(target)):
            stale.unlink(missing_ok=True)
    journal.unlink(missing_ok=True)
    fsync_dir(journal.parent)


def commit(
    journal: Path,
    root: Path,
    changes: Sequence[FileChange],
    *,
    error: type[RelpipeError] = RelpipeError,
) -> None:
    """Replace every file of `changes` under `root`, all or (after `recover`) nothing.

    Raises `error` when a journal is pending: `recover` first, under the same lock.
    """
    if journal.exists():
        raise error(f"an interrupted change is pending in {journal}; recover it first")
    for change in changes:
        _safe_rel(change.rel, error)
    doc = {
        "schema": SCHEMA,
        "files": [
            {
                "path": c.rel,
                "old-sha256": c.old_sha256,
                "new-sha256": hashlib.sha256(c.new).hexdigest(),
                "new": base64.b64encode(c.new).decode("ascii"),
            }
            for c in changes
        ],
    }
    journal.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(journal, json.dumps(doc, sort_keys=True).encode("utf-8"))
    # From here on the change has happened: a crash is finished by `recover`, never undone.
    for change in changes:
        write_atomic(root / change.rel, change.new)
    journal.unlink()
    fsync_dir(journal.parent)


def recover(journal: Path, root: Path, *, error: type[RelpipeError] = RelpipeError) -> list[str]:
    """Finish the change a crash interrupted; return the paths rolled forward (none: no journal).

    Temp files of a journal killed before its rename are removed: that change never happened.
    """
    for stale in journal.parent.glob(temp_glob(journal)) if journal.parent.is_dir() else ():
        stale.unlink(missing_ok=True)
    if not journal.exists():
        return []
    raw = read_capped(journal, MAX_JOURNAL_BYTES, "change journal", error=error)
    bad = error(f"change journal {journal} is not one relpipe wrote; inspect and remove it")
    try:
        doc = json.loads(raw)
        files = doc["files"] if doc.get("schema") == SCHEMA else None
        if not isinstance(files, list):
            raise bad
        entries = [
            (
                _safe_rel(str(f["path"]), error),
                f["old-sha256"],
                str(f["new-sha256"]),
                base64.b64decode(f["new"], validate=True),
            )
            for f in files
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise bad from None
    pending: list[tuple[PurePosixPath, bytes]] = []
    for rel, old_sha, new_sha, new in entries:
        if hashlib.sha256(new).hexdigest() != new_sha:
            raise bad
        current = sha256_of(root / rel)
        if current == new_sha:
            continue
        if current != old_sha:  # checked for every file before any is written
            raise error(
                f"{root / rel} changed after an interrupted change was journalled in {journal}; "
                "resolve it by hand (the journal holds the interrupted change), then remove it"
            )
        pending.append((rel, new))
    for rel, new in pending:
        write_atomic(root / rel, new)
    _clear(journal, root, [str(e[0]) for e in entries])
    return [str(rel) for rel, _ in pending]
