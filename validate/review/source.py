"""The repository under review, read safely: the working tree or one git commit.

Every file is untrusted: reads are capped, a symlink that leaves the tree is not followed, a
binary (NUL) or non-UTF-8 file is not scanned, and each refusal becomes a one-line `Problem`
that the checks turn into a WARN (never a hang, never a traceback). Files of a commit come from
one `git ls-tree` and one `git cat-file --batch` per batch of paths, not a process per file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...changelog.errors import ChangelogError
from ...changelog.repository.checkout import find_root
from ...changelog.repository.detect import check_paths, detect, lister, read_override
from ...changelog.repository.era import Era
from ...changelog.repository.eras import DEFAULT
from ..errors import ValidateError
from ..precision import gitio

MAX_FILE_BYTES = 4 * 1024 * 1024  # the largest real launch script is ~60 KB, a recipe ~20 KB


def path_text(name: bytes) -> str:
    """A path git printed, as text: bytes that are not UTF-8 as `\\xNN` (two such paths stay two;
    the `replace` handler made both U+FFFD, and one went missing from every check)."""
    return name.decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class Problem:
    """Why a file the review needed could not be read (a WARN with the path)."""

    path: str
    reason: str


@dataclass(kw_only=True)
class Source:
    """Text files of one repository version, by repository-relative POSIX path.

    `ref` None reads the working tree under `root`; otherwise the files of that commit.
    """

    root: Path
    ref: str | None = None
    era: Era = DEFAULT  # where its files are (`open_source` detects)
    problems: dict[str, Problem] = field(default_factory=dict)
    _texts: dict[str, str | None] = field(default_factory=dict)
    _tree: dict[str, tuple[str, str, int]] | None = None  # path -> (mode, sha, size)
    # derived values (parsed lines, composed recipes) per (kind, path): computed once per run
    memo: dict[tuple[str, str], object] = field(default_factory=dict)

    # ---- listing -------------------------------------------------------------------------
    def _ls_tree(self) -> dict[str, tuple[str, str, int]]:
        if self._tree is None:
            out = gitio.run(self.root, "ls-tree", "-r", "-z", "--long", self.ref or "HEAD")
            tree: dict[str, tuple[str, str, int]] = {}
            for rec in out.split(b"\0"):
                if not rec:
                    continue
                meta, _, name = rec.partition(b"\t")
                parts = meta.split()
                if len(parts) != 4 or parts[1] != b"blob":
                    continue
                size = int(parts[3]) if parts[3].isdigit() else 0
                tree[path_text(name)] = (parts[0].decode(), parts[2].decode(), size)
            self._tree = tree
        return self._tree

    def exists(self, path: str) -> bool:
        if self.ref is not None:
            return path in self._ls_tree()
        return os.path.lexists(self.root / path)

    def files(self, folder: str, suffixes: Sequence[str] = ()) -> list[str]:
        """Regular files under `folder` (recursive, sorted); symlinks are listed, not followed."""
        prefix = folder.rstrip("/") + "/"
        if self.ref is not None:
            names = [p for p in self._ls_tree() if p.startswith(prefix)]
        else:
            names = []
            base = self.root / folder
            for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
                dirnames.sort()
                rel = Path(dirpath).relative_to(self.root).as_posix()
                names += [f"{rel}/{name}" for name in filenames]
        return sorted(n for n in names if not suffixes or n.endswith(tuple(suffixes)))

    # ---- reading -------------------------------------------------------------------------
    def _refuse(self, path: str, reason: str) -> None:
        self.problems.setdefault(path, Problem(path, reason))
        self._texts[path] = None

    def _inside(self, path: str) -> bool:
        pure = PurePosixPath(path)
        return not pure.is_absolute() and ".." not in pure.parts

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read many files of a commit with one `git cat-file --batch`."""
        if self.ref is None:
            return
        tree = self._ls_tree()
        wanted: list[tuple[str, str]] = []
        for path in dict.fromkeys(paths):
            if path in self._texts or path not in tree:
                continue
            mode, sha, size = tree[path]
            if mode == "120000":
                self._refuse(path, "is a symlink; a committed symlink is not followed")
            elif size > MAX_FILE_BYTES:
                self._refuse(path, f"not read: {size} bytes (cap {MAX_FILE_BYTES})")
            else:
                wanted.append((path, sha))
        if wanted:
            blobs = gitio.read_blobs(self.root, [sha for _, sha in wanted])
            for path, sha in wanted:
                self._store(path, blobs.get(sha))

    def _store(self, path: str, data: bytes | None) -> str | None:
        if data is None:
            self._texts[path] = None
            return None
        if b"\0" in data:
            self._refuse(path, "is a binary file (NUL byte); not scanned")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self._refuse(path, "is not UTF-8; not scanned")
            return None
        self._texts[path] = text
        return text

    def text(self, path: str) -> str | None:
        """The text of `path`, or None when absent or refused (see `problems`)."""
        if path in self._texts:
            return self._texts[path]
        if not self._inside(path):
            self._refuse(path, "points outside the repository; not followed")
            return None
        if self.ref is not None:
            self.prefetch([path])
            return self._texts.get(path)
        return self._read_worktree(path)

    def _read_worktree(self, path: str) -> str | None:
        full = self.root / path
        try:
            real = full.resolve(strict=True)
        except (OSError, RuntimeError):  # absent, or a symlink loop
            if os.path.islink(full):
                self._refuse(path, "is a dangling or looping symlink; not followed")
            else:
                self._texts[path] = None
            return None
        try:
            real.relative_to(self.root.resolve())
        except ValueError:
            self._refuse(path, "is a symlink out of the repository; not followed")
            return None
        if not real.is_file():
            self._refuse(path, "is not a regular file; not read")
            return None
        try:
            with open(real, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            self._refuse(path, f"cannot be read ({exc.strerror or type(exc).__name__})")
            return None
        if len(data) > MAX_FILE_BYTES:
            size = os.stat(real).st_size
            self._refuse(path, f"not read: {size} bytes (cap {MAX_FILE_BYTES})")
            return None
        return self._store(path, data)

    def lines(self, path: str) -> list[str]:
        text = self.text(path)
        return text.splitlines() if text is not None else []


def open_source(repo: Path, ref: str | None) -> Source:
    """A `Source` for `repo` (a directory) at `ref`, or its working tree when `ref` is None; its
    era is detected from the files of that version (`changelog.repository.detect`)."""
    if not repo.is_dir():
        raise ValidateError(f"--repo {repo} is not a directory; point it at an InferenceX checkout")
    root = find_root(repo)
    source = Source(root=root, ref=ref)

    def listdir(folder: str) -> list[str]:
        inner = f"{folder}/"
        names = (p[len(inner) :] for p in source._ls_tree() if p.startswith(inner))
        return [name for name in names if "/" not in name]

    try:
        override = read_override(str(root))
        era = detect(lister(str(root)) if ref is None else listdir, override, str(repo))
        assert era is not None  # required: none found raises
        if ref is None:
            check_paths(str(root), era, str(repo))
    except ChangelogError as exc:
        raise ValidateError(str(exc)) from None
    source.era = era
    return source
