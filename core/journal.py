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

A journal is recovery state of this machine, never input that arrives with a repository (issue
27.1: a committed `.relpipe/release.journal` wrote through a symlink outside the repository):
- it lives outside the work tree, in the user's state folder (`journal_path`: `$XDG_STATE_HOME`
  or `~/.local/state`, `relpipe/journals/`, named by the hash of the repository's real path), so
  git can neither track it nor bring it with a clone; the folder is created 0700;
- `recover` reads it only when it is a regular file (not a symlink) owned by this user and
  writable by nobody else, in a folder of the same kind, and only when it names this root;
- every path it names is admitted by the caller (`admit`: only the files that change writes, and
  any content rule, e.g. the changelog only appended to), and no component of it under the root is
  a symlink, checked again just before each write;
- the new bytes must hash to the recorded hash and the file must still be at its old hash.

The caller holds the lock that serialises writers of these files (`core.files.file_lock`) around
both calls; the journal is not a lock.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import jsonload
from .errors import RelpipeError
from .files import fsync_dir, read_capped, temp_glob, write_atomic

SCHEMA = 2
MAX_JOURNAL_BYTES = 256 * 1024 * 1024

# (repository-relative path, current bytes or None, new bytes) -> why the change is refused, or None
Admit = Callable[[str, "bytes | None", bytes], "str | None"]


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


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def journal_path(root: Path, name: str) -> Path:
    """Where the journal `name` of the repository at `root` lives: this user's state folder."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    key = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:32]
    return Path(state) / "relpipe" / "journals" / f"{key}.{name}"


def _private(path: Path, kind: int, what: str, error: type[RelpipeError]) -> None:
    """Refuse `path` unless it is a `kind` (not a symlink) owned by us and writable only by us."""
    st = os.lstat(path)
    if stat.S_IFMT(st.st_mode) != kind or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise error(
            f"{what} {path} is not one relpipe made on this machine (a symlink, another "
            "owner, or writable by others); inspect and remove it"
        )


def _safe_rel(rel: str, error: type[RelpipeError]) -> PurePosixPath:
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(p in ("..", ".", "") for p in rel.split("/")):
        raise error(f"journal names the path {rel[:120]!r}, which is outside the repository")
    return path


def _no_symlink(root: Path, rel: PurePosixPath, error: type[RelpipeError]) -> Path:
    """`root / rel`, refused when any component under `root` is a symlink (or not a folder)."""
    target = root
    for i, part in enumerate(rel.parts):
        target = target / part
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            if i < len(rel.parts) - 1:
                raise error(f"{target}: folder missing; refusing to write {rel}") from None
            break
        if stat.S_ISLNK(st.st_mode) or (i < len(rel.parts) - 1 and not stat.S_ISDIR(st.st_mode)):
            raise error(f"{target} is a symlink or not a folder; refusing to write {rel} there")
    return target


def _check(
    root: Path, rel: str, new: bytes, admit: Admit | None, error: type[RelpipeError]
) -> Path:
    target = _no_symlink(root, _safe_rel(rel, error), error)
    if admit is not None:
        why = admit(rel, _read(target), new)
        if why:
            raise error(f"refusing to write {rel}: {why}")
    return target


def _write(root: Path, rel: str, new: bytes, error: type[RelpipeError]) -> None:
    write_atomic(_no_symlink(root, _safe_rel(rel, error), error), new)


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
    admit: Admit | None = None,
) -> None:
    """Replace every file of `changes` under `root`, all or (after `recover`) nothing.

    Raises `error` when a journal is pending (`recover` first, under the same lock), or when a
    change is refused (`admit`, a symlinked path).
    """
    if journal.exists() or journal.is_symlink():
        raise error(f"an interrupted change is pending in {journal}; recover it first")
    for change in changes:
        _check(root, change.rel, change.new, admit, error)
    doc = {
        "schema": SCHEMA,
        "root": str(root.resolve()),
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
    journal.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(journal.parent, stat.S_IFDIR, "journal folder", error)
    write_atomic(journal, json.dumps(doc, sort_keys=True).encode("utf-8"), mode=0o600)
    # From here on the change has happened: a crash is finished by `recover`, never undone.
    for change in changes:
        _write(root, change.rel, change.new, error)
    journal.unlink()
    fsync_dir(journal.parent)


def _entries(
    journal: Path, root: Path, error: type[RelpipeError]
) -> list[tuple[str, str | None, str, bytes]]:
    """The journal's (path, old hash, new hash, new bytes), refused unless relpipe wrote it here."""
    _private(journal.parent, stat.S_IFDIR, "journal folder", error)
    _private(journal, stat.S_IFREG, "change journal", error)
    raw = read_capped(journal, MAX_JOURNAL_BYTES, "change journal", error=error)
    bad = error(f"change journal {journal} is not one relpipe wrote; inspect and remove it")
    try:
        doc = jsonload.loads(raw)
        files = doc["files"] if doc.get("schema") == SCHEMA else None
        if not isinstance(files, list) or doc.get("root") != str(root.resolve()):
            raise bad
        entries = [
            (
                str(_safe_rel(str(f["path"]), error)),
                None if f["old-sha256"] is None else str(f["old-sha256"]),
                str(f["new-sha256"]),
                base64.b64decode(f["new"], validate=True),
            )
            for f in files
        ]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise bad from None
    if any(hashlib.sha256(new).hexdigest() != new_sha for _, _, new_sha, new in entries):
        raise bad
    return entries


def recover(
    journal: Path,
    root: Path,
    *,
    error: type[RelpipeError] = RelpipeError,
    admit: Admit | None = None,
) -> list[str]:
    """Finish the change a crash interrupted; return the paths rolled forward (none: no journal).

    Temp files of a journal killed before its rename are removed: that change never happened.
    Every file is checked (symlinks, `admit`, hashes) before any is written.
    """
    for stale in journal.parent.glob(temp_glob(journal)) if journal.parent.is_dir() else ():
        stale.unlink(missing_ok=True)
    if not (journal.exists() or journal.is_symlink()):
        return []
    entries = _entries(journal, root, error)
    pending: list[tuple[str, bytes]] = []
    for rel, old_sha, new_sha, new in entries:
        current = sha256_of(_no_symlink(root, _safe_rel(rel, error), error))
        if current == new_sha:
            continue
        if current != old_sha:  # checked for every file before any is written
            raise error(
                f"{root / rel} changed after an interrupted change was journalled in {journal}; "
                "resolve it by hand (the journal holds the interrupted change), then remove it"
            )
        _check(root, rel, new, admit, error)
        pending.append((rel, new))
    for rel, new in pending:
        _write(root, rel, new, error)
    _clear(journal, root, [e[0] for e in entries])
    return [rel for rel, _ in pending]
