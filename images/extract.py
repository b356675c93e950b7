"""Safe extraction of the tar stream `docker cp` returns (e.g. `/app/ATOM` with its `.git`).

No member or link may land outside the destination: names are checked before anything is
created, files are written without following links, symlinks are created last and must resolve
inside the destination, and anything refused removes everything extracted (fail closed).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from .errors import ContainerError
from .results import Limits


def _member_path(name: str, root: str) -> PurePosixPath | None:
    """Path of a member relative to the archive root; None for the root itself; error if unsafe."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] != root or name.startswith("/"):
        raise ContainerError(f"archive member {name[:120]!r} is outside {root!r}; refusing", 1)
    rest = parts[1:]
    if any(p in ("..", "") or "\x00" in p for p in rest):
        raise ContainerError(f"archive member {name[:120]!r} escapes its folder; refusing", 1)
    return PurePosixPath(*rest) if rest else None


def _data_filter(member: tarfile.TarInfo, rel: PurePosixPath | None, root: str, top: Path) -> None:
    """tarfile's own `data` filter on the member as it will land under `top`: the second line of
    defence behind the checks of `extract_archive` (absolute or escaping names and links,
    special files)."""
    name = str(rel) if rel is not None else "."
    link = member.linkname
    if member.islnk():  # hard links name a member of the archive, under its root
        origin = _member_path(link, root)
        link = str(origin) if origin is not None else "."
    try:
        tarfile.data_filter(member.replace(name=name, linkname=link, deep=False), str(top))
    except tarfile.FilterError as exc:
        raise ContainerError(
            f"archive member {member.name[:120]!r} is refused by tarfile's data filter "
            f"({type(exc).__name__}); refusing",
            1,
        ) from None


_LIMITS = Limits()


def extract_archive(stream: IO[bytes], dest: Path, root: str, limits: Limits = _LIMITS) -> None:
    """Extract a `get_archive` tar whose members live under `root/` into `dest` (must not exist).

    Only folders, regular files, hard links to earlier files (copied) and symlinks are accepted.
    Containment is checked before anything is created: a member may not lie under a symlink
    member (`a -> ../../..` then `a/x` is refused, whatever comes first), every member's folder
    must already be a real folder inside dest (a member without its parent is refused), and
    tarfile's `data` filter checks each member too. Files are written first and symlinks last,
    each into a real folder inside dest, so nothing is ever written through a link; every symlink
    must then resolve inside dest, else everything is removed (fail closed).
    """
    if dest.exists() or dest.is_symlink():
        raise ContainerError(f"{dest} already exists; extract into a new path", 2)
    dest.mkdir(parents=True)
    extraction = _Extraction(top=dest.resolve(), root=root, limits=limits)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                extraction.add(tar, member)
        extraction.link()
    except tarfile.TarError as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ContainerError(f"archive is not a valid tar stream: {exc}; refusing", 1) from None
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


@dataclass(kw_only=True)
class _Extraction:
    """What `extract_archive` has seen and written so far, under the resolved destination `top`."""

    top: Path
    root: str
    limits: Limits
    links: list[tuple[Path, str]] = field(default_factory=list)
    link_paths: set[PurePosixPath] = field(default_factory=set)
    written: dict[PurePosixPath, Path] = field(default_factory=dict)
    folders: set[PurePosixPath] = field(default_factory=set)  # every folder some member lies in
    total: int = 0
    count: int = 0

    def add(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        """Check one member, then create it (a symlink is only noted, for `link`)."""
        self.count += 1
        if self.count > self.limits.archive_members:
            raise ContainerError(f"archive has more than {self.limits.archive_members} members", 1)
        rel = _member_path(member.name, self.root)
        target = self.top if rel is None else self.top.joinpath(*rel.parts)
        if rel is not None:
            self._check_place(member, rel, target)
        _data_filter(member, rel, self.root, self.top)
        if member.isdir():
            if rel is not None:
                target.mkdir(mode=0o755, exist_ok=True)
        elif member.isreg():
            self._file(tar, member, rel, target)
        elif member.islnk():
            self._hard_link(member, rel, target)
        elif member.issym():
            if rel is None:
                raise ContainerError("archive root is a symlink; refusing", 1)
            self.links.append((target, member.linkname))
            self.link_paths.add(rel)
        else:
            raise ContainerError(
                f"archive member {member.name[:120]!r} is a device, FIFO "
                "or other special file; refusing",
                1,
            )

    def _check_place(self, member: tarfile.TarInfo, rel: PurePosixPath, target: Path) -> None:
        # Any member under a link (earlier or later in the stream) would be written
        # through it: refuse before creating anything.
        under = any(p in self.link_paths for p in rel.parents)
        if under or (member.issym() and rel in self.folders):
            raise ContainerError(
                f"archive member {member.name[:120]!r} lies under a symlink member "
                f"or is a symlink over earlier members; refusing",
                1,
            )
        self.folders.update(rel.parents)
        _check_parents(self.top, target)

    def _file(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, rel: PurePosixPath | None, target: Path
    ) -> None:
        self.total += member.size
        if self.total > self.limits.archive_bytes:
            raise ContainerError(f"archive is larger than {self.limits.archive_bytes} bytes", 1)
        src = tar.extractfile(member)
        assert src is not None
        if rel is None:  # the path in the image is a file: dest becomes that file
            target.rmdir()
        _write_file(target, src, 0o755 if member.mode & 0o111 else 0o644)
        if target.stat().st_size != member.size:  # a stream cut inside a file
            raise ContainerError(f"archive member {member.name[:120]!r} is truncated; refusing", 1)
        self.written[rel or PurePosixPath(".")] = target

    def _hard_link(self, member: tarfile.TarInfo, rel: PurePosixPath | None, target: Path) -> None:
        origin = _member_path(member.linkname, self.root)
        if rel is None or origin not in self.written:
            raise ContainerError(
                f"hard link {member.name[:120]!r} points at "
                f"{member.linkname[:120]!r}, not an earlier file; refusing",
                1,
            )
        with self.written[origin].open("rb") as src_fh:
            _write_file(target, src_fh, self.written[origin].stat().st_mode & 0o777)
        self.written[rel] = target

    def link(self) -> None:
        """Create the symlinks, last, each in a real folder; every one must resolve inside top."""
        top = self.top
        for target, linkname in self.links:
            if os.path.isabs(linkname) or os.path.lexists(target):
                raise ContainerError(
                    f"symlink {target.relative_to(top)} -> {linkname[:120]} is "
                    "absolute or collides with another member; refusing",
                    1,
                )
            _check_parents(top, target)  # never create a link through another link
            os.symlink(linkname, target)
        for target, linkname in self.links:
            resolved = Path(os.path.realpath(target))
            if resolved != top and top not in resolved.parents:
                raise ContainerError(
                    f"symlink {target.relative_to(top)} -> {linkname[:120]} "
                    "resolves outside the destination; refusing",
                    1,
                )


def _check_parents(top: Path, target: Path) -> None:
    """Refuse a path whose folders are not all real folders inside `top` (lstat, no following):
    a member whose parent is missing, a file, or a link is never created."""
    current = target.parent
    while current != top:
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            mode = None
        if mode is None or not stat.S_ISDIR(mode):
            what = "a link" if mode is not None and stat.S_ISLNK(mode) else "not a folder"
            raise ContainerError(
                f"archive path {target.relative_to(top)} needs {current.relative_to(top)}, "
                f"which is {what} (a member without its parent folder); refusing",
                1,
            )
        current = current.parent


def _write_file(target: Path, src: IO[bytes], mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(target, flags, mode & 0o755)
    except FileExistsError:
        raise ContainerError(f"archive has {target.name!r} twice; refusing", 1) from None
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
