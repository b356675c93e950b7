"""Hostile tar streams against `images.extract.extract_archive` (what copies `/app/ATOM` out of
an image): whatever the stream, nothing is created or changed outside the destination, and the
refusal is one line.

Each stream is a real tar stream (Python's `tarfile` writer, the format `docker cp` produces),
extracted into a destination three folders deep inside a sandbox that holds a sentinel file, so
that a link such as `../../..` points at the sandbox; the whole sandbox is compared before and
after, links included (lstat, never followed).
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from relpipe.images.errors import ContainerError
from relpipe.images.extract import extract_archive

Member = tuple[str, str, object]  # (name, kind, payload: bytes for files, link target otherwise)

D = ("ATOM", "dir", b"")
HOSTILE: dict[str, list[Member]] = {
    # The attack of issue 17: a link out, then a member under it (file, link, folder, hard link).
    "file under an escaping link": [
        D,
        ("ATOM/a", "sym", "../../.."),
        ("ATOM/a/planted", "file", b"x"),
    ],
    "link under an escaping link": [
        D,
        ("ATOM/a", "sym", "../../.."),
        ("ATOM/a/planted", "sym", "x"),
    ],
    "folder under an escaping link": [
        D,
        ("ATOM/a", "sym", "../../.."),
        ("ATOM/a/planted", "dir", b""),
    ],
    "hard link under an escaping link": [
        D,
        ("ATOM/f", "file", b"x"),
        ("ATOM/a", "sym", "../../.."),
        ("ATOM/a/planted", "hard", "ATOM/f"),
    ],
    "link under an inside link": [
        D,
        ("ATOM/d", "dir", b""),
        ("ATOM/l", "sym", "d"),
        ("ATOM/l/planted", "sym", "../../../.."),
    ],
    "link chain climbing out": [D, ("ATOM/a", "sym", "."), ("ATOM/b", "sym", "a/../../..")],
    "link through a link that climbs": [
        D,
        ("ATOM/p", "dir", b""),
        ("ATOM/p/q", "dir", b""),
        ("ATOM/p/q/m", "sym", ".."),
        ("ATOM/l", "sym", "p/q/m/../../../.."),
    ],
    "escaping link": [D, ("ATOM/up", "sym", "../..")],
    "absolute link": [D, ("ATOM/abs", "sym", "/tmp")],
    "link over an earlier folder": [D, ("ATOM/d", "dir", b""), ("ATOM/d", "sym", "../../..")],
    "link over an earlier file": [D, ("ATOM/f", "file", b"x"), ("ATOM/f", "sym", "../../..")],
    "member without its parent": [D, ("ATOM/missing/planted", "file", b"x")],
    "member under a file": [D, ("ATOM/f", "file", b"x"), ("ATOM/f/planted", "file", b"x")],
    "absolute member": [D, ("/tmp/planted", "file", b"x")],
    "dot-dot member": [D, ("ATOM/../planted", "file", b"x")],
    "deep dot-dot member": [D, ("ATOM/d", "dir", b""), ("ATOM/d/../../planted", "file", b"x")],
    "member of another root": [D, ("other/planted", "file", b"x")],
    "hard link to an outside file": [D, ("ATOM/h", "hard", "/etc/passwd")],
    "hard link to a later file": [D, ("ATOM/h", "hard", "ATOM/f"), ("ATOM/f", "file", b"x")],
    "hard link to a link": [D, ("ATOM/l", "sym", "f"), ("ATOM/h", "hard", "ATOM/l")],
    "fifo": [D, ("ATOM/p", "fifo", "")],
    "character device": [D, ("ATOM/dev", "chr", "")],
    "duplicate file": [D, ("ATOM/f", "file", b"1"), ("ATOM/f", "file", b"2")],
    "root is a link": [("ATOM", "sym", "../../..")],
    "long (PAX) name escaping": [D, ("ATOM/" + "d/" * 60 + "../" * 62 + "planted", "file", b"x")],
}


def _tar(*members: Member, fmt: int = tarfile.PAX_FORMAT) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(payload, bytes)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
                "chr": tarfile.CHRTYPE,
            }[kind]
            info.mode = 0o755 if kind == "dir" else 0o644
            info.linkname = "" if kind == "dir" else str(payload)
            tar.addfile(info)
    buf.seek(0)
    return buf


def _tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every path under `root` with its type and content (link target for links), by lstat."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath, name)
            st = os.lstat(path)
            if path.is_symlink():
                content: bytes | str = os.readlink(path)
            elif path.is_file():
                content = path.read_bytes()
            else:
                content = b""
            out[str(path.relative_to(root))] = (st.st_mode, content)
    return out


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    (tmp_path / "sentinel").write_text("untouched\n")
    (tmp_path / "x" / "y").mkdir(parents=True)
    return tmp_path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_stream_writes_nothing_outside_the_destination(sandbox: Path, case: str) -> None:
    dest = sandbox / "x" / "y" / "ATOM"  # ../../.. from a member of dest is the sandbox
    before = _tree(sandbox)
    with pytest.raises(ContainerError) as err:
        extract_archive(_tar(*HOSTILE[case]), dest, "ATOM")
    assert "refusing" in str(err.value) and "\n" not in str(err.value)
    assert err.value.exit_code == 1
    assert _tree(sandbox) == before, "something was created or changed outside dest"
    assert not os.path.lexists(dest)


def test_the_planted_link_attack_of_issue_17_leaves_no_link_outside(sandbox: Path) -> None:
    """The reported attack: a link `a -> ../../..`, then a link `a/evil`, which the old code
    created in the sandbox (through `a`) before noticing that `a` escapes."""
    dest = sandbox / "x" / "y" / "ATOM"
    with pytest.raises(ContainerError, match="refusing"):
        extract_archive(_tar(*HOSTILE["link under an escaping link"]), dest, "ATOM")
    assert not os.path.lexists(sandbox / "planted")


def test_a_link_inside_dest_that_is_a_parent_is_refused_before_the_data_filter(
    sandbox: Path,
) -> None:
    """`l -> d` is harmless to tarfile's filter; a member under it is refused by our own check."""
    dest = sandbox / "x" / "y" / "ATOM"
    with pytest.raises(ContainerError, match="under a symlink member"):
        extract_archive(_tar(*HOSTILE["link under an inside link"]), dest, "ATOM")


def test_a_truncated_stream_is_one_line(sandbox: Path) -> None:
    data = _tar(D, ("ATOM/f", "file", b"x" * 4096)).getvalue()[:1200]  # inside the data
    with pytest.raises(ContainerError, match="refusing") as err:
        extract_archive(io.BytesIO(data), sandbox / "x" / "y" / "ATOM", "ATOM")
    assert "\n" not in str(err.value)


def test_a_benign_stream_with_internal_links_still_extracts(sandbox: Path) -> None:
    dest = sandbox / "x" / "y" / "ATOM"
    extract_archive(
        _tar(
            D,
            ("ATOM/a", "dir", b""),
            ("ATOM/a/f.py", "file", b"x"),
            ("ATOM/a/up", "sym", "../a/f.py"),
            ("ATOM/link", "sym", "a/f.py"),
            ("ATOM/dirlink", "sym", "a"),
            ("ATOM/hard", "hard", "ATOM/a/f.py"),
        ),
        dest,
        "ATOM",
    )
    assert (dest / "link").read_bytes() == b"x" and (dest / "link").is_symlink()
    assert (dest / "a" / "up").read_bytes() == b"x"
    assert (dest / "dirlink" / "f.py").read_bytes() == b"x"
    assert (dest / "hard").read_bytes() == b"x" and not (dest / "hard").is_symlink()
