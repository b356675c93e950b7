"""Releasing the same image twice is "nothing to do" (issue 27.2), whatever was interrupted.

A release of an image pushed to the loopback registry is written by `write_staged` in a forked
process that SIGKILLs itself at each write of the release (before the journal, after it, after
each file); then the real `relpipe release` of the same key and image runs, twice. It must say
"nothing to do" in one line with exit 0, and the changelog must hold the entry exactly once.
A run killed before its journal was committed left nothing: its rerun is the whole release.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.entry import Entry, render
from relpipe.core import journal
from relpipe.images import lock
from relpipe.images.registry import RegistryClient
from relpipe.pipeline.release import (
    Staged,
    apply_changelog,
    journal_of,
    new_image_text,
    recover_interrupted,
    repo_state,
    repository_lock,
    write_staged,
    write_text,
)
from relpipe.pipeline.workspace import Workspace
from tests.registry_support import push_image, unique_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "benchmark-repo"
# Where a release writes the changelog and lock file in the example repository (its layout).
CHANGELOG, LOCK = Workspace(EXAMPLE).changelog, Workspace(EXAMPLE).lock
MASTER = "configs/amd-master.yaml"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
WRITES = 4  # the journal, then the master config, the changelog and the lock file


def _stage(repo: Path, scratch: Path, image: str) -> Staged:
    shutil.copytree(repo, scratch)
    base = repo_state(scratch)
    master = scratch / MASTER
    old = Workspace(scratch).config_key(KEY, 1).image
    text, _ = edit_image(master.read_text(), KEY, new_image_text(old, image))
    write_text(master, text)
    entry = Entry(
        config_keys=(KEY,),
        description=(f"Update to {image}",),
        pr_link="https://github.com/example-org/benchmark-repo/pull/101",
    )
    apply_changelog(scratch / CHANGELOG, entry)
    with RegistryClient() as client:
        lock.update(scratch / LOCK, [client.pin(image)])
    files = (MASTER, str(CHANGELOG), str(LOCK))
    return Staged(
        root=scratch,
        files=files,
        facts={},
        notes="",
        title="",
        checks=None,  # type: ignore[arg-type]  # the writer never reads the validators' results
        entry=entry,
        base=base,
    )


def _killed_at(ws: Workspace, staged: Staged, write: int) -> None:
    """`write_staged` in a child that SIGKILLs itself once `write` files are written."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        real, done = journal.write_atomic, [0]

        def counted(path: Path, data: bytes, **kw: int) -> None:
            if done[0] == write:
                os.kill(os.getpid(), signal.SIGKILL)
            real(path, data, **kw)
            done[0] += 1

        journal.write_atomic = counted  # type: ignore[assignment]
        try:
            write_staged(ws, staged)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)  # every write done: killed before it exits
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _release(ws: Workspace, image: str) -> subprocess.CompletedProcess[str]:
    args = ["release", "--repo", str(ws.root), "--config-key", KEY, "--image", image]
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("write", range(WRITES + 1))
def test_a_release_killed_then_rerun_is_nothing_to_do(
    registry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: int
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    repository = unique_repo(registry, "atom-dev")
    image = f"{repository}:nightly_202610070333"
    with RegistryClient() as client:
        pushed = push_image(client, repository, "nightly_202610070333", seed=str(write))
    ws = Workspace(tmp_path / "repo")
    shutil.copytree(EXAMPLE, ws.root)
    staged = _stage(ws.root, tmp_path / "scratch", image)
    entry = render(staged.entry).encode()
    _killed_at(ws, staged, write)
    if write == 0:  # killed before the journal: nothing happened, so the rerun is the release
        assert not journal_of(ws).exists()
        assert (ws.root / CHANGELOG).read_bytes().count(entry) == 0
        with repository_lock(ws):
            assert recover_interrupted(ws) == []
        write_staged(ws, staged)
    for _ in range(2):
        rerun = _release(ws, image)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert rerun.stdout.splitlines() == [
            f"nothing to do: {KEY} already pins {image} at {pushed.digest}"
        ], rerun.stdout + rerun.stderr
    assert not journal_of(ws).exists()
    assert (ws.root / CHANGELOG).read_bytes().count(entry) == 1
    assert {r: (ws.root / r).read_bytes() for r in staged.files} == {
        r: (staged.root / r).read_bytes() for r in staged.files
    }
