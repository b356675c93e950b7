"""The release journal as an attack surface (issue 27.1): recovery state that relpipe made on this
machine is replayed, nothing else.

A journal committed to the benchmark repository (so it arrives with a clone) names a path through
a symlink to a folder outside the repository, a git hook and a rewritten changelog history; the
real `relpipe release` must not write any of them. A journal in this user's state folder is
replayed only when it is private to this user, names this repository, and every path it names is
a file a release writes, reached without a symlink, with the changelog only appended to; a
property test draws hostile journals over that class.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.release import journal_of, recover_interrupted, repository_lock
from relpipe.pipeline.workspace import Workspace
from tests.support import git

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "benchmark-repo"
# Where a release writes the changelog and lock file in the example repository (its layout).
CHANGELOG, LOCK = Workspace(EXAMPLE).changelog, Workspace(EXAMPLE).lock
MASTER = "configs/amd-master.yaml"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"


def _file(path: str, new: bytes, old: bytes | None) -> dict[str, object]:
    return {
        "path": path,
        "old-sha256": None if old is None else hashlib.sha256(old).hexdigest(),
        "new-sha256": hashlib.sha256(new).hexdigest(),
        "new": base64.b64encode(new).decode("ascii"),
    }


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and not p.name.endswith(".lock")
    }


def _planted_clone(tmp_path: Path) -> tuple[Path, Path, dict[str, object]]:
    """A benchmark repository whose history carries `.relpipe/release.journal` and `lnk -> out`."""
    outside = tmp_path / "outside"
    outside.mkdir()
    origin = tmp_path / "origin"
    shutil.copytree(EXAMPLE, origin)
    (origin / "lnk").symlink_to(outside)
    history = (origin / CHANGELOG).read_bytes()
    doc = {
        "schema": 1,
        "files": [
            _file("lnk/planted", b"written outside\n", None),
            _file(".git/hooks/pre-commit", b"#!/bin/sh\ntouch pwned\n", None),
            _file(str(CHANGELOG), b"- config-keys: [rewritten]\n", history),
        ],
    }
    (origin / ".relpipe").mkdir()
    (origin / ".relpipe" / "release.journal").write_text(json.dumps(doc))
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A", "-f", ".")
    git(origin, "commit", "-q", "-m", "a benchmark repository with a planted journal")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert (clone / ".relpipe" / "release.journal").is_file() and (clone / "lnk").is_symlink()
    return clone, outside, doc


def test_a_journal_that_arrives_with_the_repository_is_never_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    clone, outside, _ = _planted_clone(tmp_path)
    before = _tree(clone)
    env = dict(os.environ, RELPIPE_STATE=str(tmp_path / "state"))
    # The real command, up to where it needs a registry (none listens on port 9): recovery first.
    out = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "release", "--repo", str(clone)]
        + ["--config-key", KEY, "--image", "127.0.0.1:9/rocm/atom-dev:nightly_1", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode in (1, 2), out.stdout + out.stderr
    assert list(outside.iterdir()) == []
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert _tree(clone) == before  # the changelog's history included, byte for byte
    with repository_lock(Workspace(clone)):
        assert recover_interrupted(Workspace(clone)) == []
    assert list(outside.iterdir()) == [] and _tree(clone) == before


def _journal(ws: Workspace, files: list[dict[str, object]], root: Path | None = None) -> Path:
    path = journal_of(ws)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    doc = {"schema": 2, "root": str((root or ws.root).resolve()), "files": files}
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def _recover(ws: Workspace) -> list[str]:
    with repository_lock(ws):
        return recover_interrupted(ws)


def _repo(tmp_path: Path) -> tuple[Workspace, Path]:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    root = tmp_path / "repo"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(EXAMPLE, root)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "lnk").symlink_to(outside)
    (root / "configs" / "lnk").symlink_to(outside)
    return Workspace(root), outside


# What a hostile journal may name: files a release writes, through symlinks or not, and others.
PATHS = st.sampled_from(
    [
        str(CHANGELOG),
        str(LOCK),
        MASTER,
        "lnk/planted",
        "lnk/amd-master.yaml",
        "configs/lnk/amd-master.yaml",
        "configs/lnk",
        "lnk",
        ".git/hooks/pre-commit",
        ".git/config",
        "configs/new-master.yaml/x",
        "README.md",
        "utils/x-master.yaml",
        "configs/../lnk/planted",
    ]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(
        st.tuples(PATHS, st.sampled_from(["append", "rewrite", "new", "bad-hash"])),
        min_size=1,
        max_size=3,
    )
)
def test_a_hostile_journal_writes_nothing_outside_what_a_release_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, picks: list[tuple[str, str]]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    ws, outside = _repo(tmp_path)
    before = _tree(ws.root)
    files = []
    for rel, how in picks:
        old = (ws.root / rel).read_bytes() if (ws.root / rel).is_file() else None
        new = {
            "append": (old or b"") + b"\n- config-keys:\n    - k\n  description:\n    - x\n"
            b"  pr-link: https://github.com/example-org/benchmark-repo/pull/9\n",
            "rewrite": b"# history rewritten\n",
            "new": b"#!/bin/sh\ntouch pwned\n",
            "bad-hash": b"tampered",
        }[how]
        entry = _file(rel, new, old)
        if how == "bad-hash":
            entry["new"] = base64.b64encode(b"other bytes").decode("ascii")
        files.append(entry)
    _journal(ws, files)
    try:
        written = _recover(ws)
    except PipelineError as exc:
        assert "\n" not in str(exc)
        assert _tree(ws.root) == before  # refused before any write
    else:
        changed = {
            k for k in set(_tree(ws.root)) | set(before) if _tree(ws.root).get(k) != before.get(k)
        }
        assert changed <= {str(CHANGELOG), str(LOCK), MASTER} and set(written) == changed
        if str(CHANGELOG) in changed:
            assert (ws.root / CHANGELOG).read_bytes().startswith(before[str(CHANGELOG)])
    assert list(outside.iterdir()) == []
    assert not (ws.root / ".git" / "hooks" / "pre-commit").exists()


def test_a_journal_not_private_to_this_user_or_of_another_repository_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    ws, _ = _repo(tmp_path)
    lock_old = (ws.root / LOCK).read_bytes()
    good = [_file(str(LOCK), lock_old + b"# pinned\n", lock_old)]
    path = _journal(ws, good)
    path.chmod(0o666)
    with pytest.raises(PipelineError, match="not one relpipe made on this machine"):
        _recover(ws)
    _journal(ws, good, root=tmp_path / "elsewhere")
    with pytest.raises(PipelineError, match="not one relpipe wrote"):
        _recover(ws)
    real = tmp_path / "real.journal"
    path.replace(real)
    path.symlink_to(real)
    with pytest.raises(PipelineError, match="not one relpipe made on this machine"):
        _recover(ws)
    assert (ws.root / LOCK).read_bytes() == lock_old
    path.unlink()
    _journal(ws, good)  # the same change, journalled as relpipe does: rolled forward
    assert _recover(ws) == [str(LOCK)]
    assert (ws.root / LOCK).read_bytes() == lock_old + b"# pinned\n"
    assert not path.exists()
