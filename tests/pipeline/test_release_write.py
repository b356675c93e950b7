"""Writing a staged release (pipeline.release.write_staged): the changelog goes through the locked
append, so a concurrent appender is waited for and its entry is never lost.

The repository is the example benchmark repository; the staged copy is made with the same
functions `stage_release` uses. The concurrent appender is a real second process that holds the
changelog's advisory lock (the one `changelog.append` takes) while it appends its own entry.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from relpipe.changelog.entries import Entry, render
from relpipe.pipeline.release import (
    ReleaseRefused,
    Staged,
    apply_changelog,
    write_staged,
    write_text,
)
from relpipe.pipeline.workspace import CHANGELOG, LOCK, Workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "benchmark-repo"
MASTER = "configs/amd-master.yaml"
OURS = Entry(
    config_keys=("minimaxm3-fp4-mi355x-atom-agentic-mtp",),
    description=("Update to rocm/atom-dev:nightly_202610070333",),
    pr_link="https://github.com/example-org/benchmark-repo/pull/101",
)
THEIRS = Entry(
    config_keys=("qwen3.5-fp8-mi355x-atom",),
    description=("An entry appended by someone else meanwhile",),
    pr_link="https://github.com/example-org/benchmark-repo/pull/102",
)
HOLD_S = 1.5

# A second appender: takes the changelog's lock (flock on its folder, as changelog.append does),
# says so, and appends its entry (read, then temp file + rename) before letting go.
APPENDER = """
import fcntl, os, sys, time
folder, name, text, hold = sys.argv[1], sys.argv[2], sys.argv[3].encode(), float(sys.argv[4])
fd = os.open(folder, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
path = os.path.join(folder, name)
old = open(path, "rb").read()
print("locked", flush=True)
time.sleep(hold)
tmp = os.path.join(folder, ".appender.tmp")
with open(tmp, "wb") as f:
    f.write(old + b"\\n" + text)
os.replace(tmp, path)
os.close(fd)
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stage(tmp_path: Path) -> tuple[Workspace, Staged, dict[str, str | None]]:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    ws = Workspace(repo)
    staged_from = {
        "configs": ws.tree_hash("configs"),
        "changelog": ws.file_hash(CHANGELOG),
        "lock": ws.file_hash(LOCK),
    }
    scratch = tmp_path / "scratch"
    shutil.copytree(repo, scratch)
    master = scratch / MASTER
    write_text(master, master.read_text() + "# pinned by the release\n")
    apply_changelog(scratch / CHANGELOG, OURS)
    write_text(scratch / LOCK, (scratch / LOCK).read_text() + "# re-pinned\n")
    files = (MASTER, str(CHANGELOG), str(LOCK))
    return ws, Staged(scratch, files, {}, "", "", {}, OURS), staged_from


def test_unchanged_repository_gets_exactly_the_staged_files(tmp_path: Path) -> None:
    ws, staged, staged_from = _stage(tmp_path)
    assert write_staged(ws, staged, staged_from) == ()
    for rel in staged.files:
        assert (ws.root / rel).read_bytes() == (staged.root / rel).read_bytes(), rel


def test_release_waits_for_a_concurrent_appender_and_keeps_its_entry(tmp_path: Path) -> None:
    ws, staged, staged_from = _stage(tmp_path)
    before = (ws.root / CHANGELOG).read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(ws.root), str(CHANGELOG), render(THEIRS), str(HOLD_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        t0 = time.monotonic()
        notices = write_staged(ws, staged, staged_from)
        waited = time.monotonic() - t0
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert waited >= HOLD_S * 0.8, f"wrote after {waited:.2f}s, inside the other appender's lock"
    # Both entries are there, theirs first (it held the lock), ours appended after it.
    theirs, ours = render(THEIRS).encode(), render(OURS).encode()
    assert (ws.root / CHANGELOG).read_bytes() == before + b"\n" + theirs + b"\n" + ours
    assert len(notices) == 1
    assert "another writer appended 1 entry" in notices[0] and "follows them" in notices[0]
    # Config and lock are the staged ones.
    for rel in (MASTER, str(LOCK)):
        assert (ws.root / rel).read_bytes() == (staged.root / rel).read_bytes(), rel


@pytest.mark.parametrize("changed", [MASTER, str(CHANGELOG), str(LOCK)])
def test_a_repository_changed_since_staging_is_refused_with_nothing_written(
    tmp_path: Path, changed: str
) -> None:
    ws, staged, staged_from = _stage(tmp_path)
    with open(ws.root / changed, "a") as f:
        f.write("# edited meanwhile\n")
    before = {rel: _sha(ws.root / rel) for rel in staged.files}
    with pytest.raises(ReleaseRefused, match="changed while the release was staged"):
        write_staged(ws, staged, staged_from)
    assert {rel: _sha(ws.root / rel) for rel in staged.files} == before
