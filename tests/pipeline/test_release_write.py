"""Writing a staged release (pipeline.release.write_staged): one repository lock, the "repository
changed" check re-done inside it, and a journal so that a kill never leaves a half release.

The repository is the example benchmark repository; staged copies are made with the functions
`stage_release` uses (the config pin's minimal edit, the locked changelog append). The attackers
are real processes: a second changelog appender holding the folder lock, releases forked to race
each other from one start signal, and a release SIGKILLed at a random instant of its write.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.entry import Entry, render
from relpipe.core import journal
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.release import (
    ReleaseRefused,
    Staged,
    apply_changelog,
    journal_of,
    recover_interrupted,
    repo_state,
    repository_lock,
    write_staged,
    write_text,
)
from relpipe.pipeline.workspace import Workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "benchmark-repo"
MASTER = "configs/amd-master.yaml"
KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
# Where a release writes the changelog and lock file in the example repository (its layout).
CHANGELOG, LOCK = Workspace(EXAMPLE).changelog, Workspace(EXAMPLE).lock
FILES = (MASTER, str(CHANGELOG), str(LOCK))
THEIRS = Entry(
    config_keys=("qwen3.5-fp8-mi355x-atom",),
    description=("An entry appended by someone else meanwhile",),
    pr_link="https://github.com/example-org/benchmark-repo/pull/102",
)
HOLD_S = 1.0
RACES = 30
KILLS = 100

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


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Journals (this user's state folder) of this test only."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the repository but the lock files and relpipe's state (gitignored)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".relpipe" not in p.parts and not p.name.endswith(".lock")
    }


def _entry(n: int) -> Entry:
    return Entry(
        config_keys=(KEY,),
        description=(f"Update to rocm/atom-dev:nightly_20261007{n:04d}",),
        pr_link=f"https://github.com/example-org/benchmark-repo/pull/{100 + n}",
    )


def _stage(repo: Path, scratch: Path, n: int) -> Staged:
    """Release number `n` staged from `repo`: image pin, changelog entry and a lock-file change."""
    shutil.copytree(repo, scratch)
    base = repo_state(scratch)
    master = scratch / MASTER
    text, _ = edit_image(master.read_text(), KEY, f"rocm/atom-dev:nightly_20261007{n:04d}")
    write_text(master, text)
    apply_changelog(scratch / CHANGELOG, _entry(n))
    write_text(scratch / LOCK, (scratch / LOCK).read_text() + f"# re-pinned by release {n}\n")
    return Staged(
        root=scratch,
        files=FILES,
        facts={},
        notes="",
        title="",
        checks=None,  # type: ignore[arg-type]  # the writer never reads the validators' results
        entry=_entry(n),
        base=base,
    )


def _repo(tmp_path: Path, name: str = "repo") -> Workspace:
    shutil.copytree(EXAMPLE, tmp_path / name)
    return Workspace(tmp_path / name)


def _released(ws: Workspace, staged: Staged) -> bool:
    return all((ws.root / rel).read_bytes() == (staged.root / rel).read_bytes() for rel in FILES)


def test_unchanged_repository_gets_exactly_the_staged_files(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    staged = _stage(ws.root, tmp_path / "scratch", 1)
    write_staged(ws, staged)
    assert _released(ws, staged)
    assert not journal_of(ws).exists()


def test_release_waits_for_a_concurrent_appender_then_refuses(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    staged = _stage(ws.root, tmp_path / "scratch", 1)
    before = _snapshot(ws.root)
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(ws.root), str(CHANGELOG), render(THEIRS), str(HOLD_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        t0 = time.monotonic()
        with pytest.raises(ReleaseRefused, match="changed while the release was staged") as err:
            write_staged(ws, staged)
        waited = time.monotonic() - t0
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert "\n" not in str(err.value)
    assert waited >= HOLD_S * 0.8, f"checked after {waited:.2f}s, inside the other writer's lock"
    # Their entry is there; nothing of ours is.
    after = _snapshot(ws.root)
    assert after[str(CHANGELOG)] == before[str(CHANGELOG)] + b"\n" + render(THEIRS).encode()
    assert {k: v for k, v in after.items() if k != str(CHANGELOG)} == {
        k: v for k, v in before.items() if k != str(CHANGELOG)
    }


@pytest.mark.parametrize("changed", FILES)
def test_a_repository_changed_since_staging_is_refused_with_nothing_written(
    tmp_path: Path, changed: str
) -> None:
    ws = _repo(tmp_path)
    staged = _stage(ws.root, tmp_path / "scratch", 1)
    with open(ws.root / changed, "a") as f:
        f.write("# edited meanwhile\n")
    before = _snapshot(ws.root)
    with pytest.raises(ReleaseRefused, match="changed while the release was staged"):
        write_staged(ws, staged)
    assert _snapshot(ws.root) == before


def _fork(fn, start_r: int) -> int:  # type: ignore[no-untyped-def]
    """Run `fn()` in a forked child once a byte arrives on `start_r`; exit 0, 10 refused, else 1."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            os.read(start_r, 1)
            fn()
            code = 0
        except ReleaseRefused as exc:
            code = 10 if "\n" not in str(exc) else 11
        finally:
            os._exit(code)
    return pid


def test_racing_releases_lose_no_update(tmp_path: Path) -> None:
    """RACES races of two releases staged from the same repository, started by one signal: one
    wins whole, the other is refused whole (one line), never a mix of both."""
    lost = winners = 0
    for race in range(RACES):
        ws = _repo(tmp_path, f"repo{race}")
        a = _stage(ws.root, tmp_path / f"a{race}", 2 * race)
        b = _stage(ws.root, tmp_path / f"b{race}", 2 * race + 1)
        start_r, start_w = os.pipe()
        pids = {_fork(lambda s=s, ws=ws: write_staged(ws, s), start_r): s for s in (a, b)}
        os.write(start_w, b"xx")
        codes = {
            s.entry.pr_link: os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p, s in pids.items()
        }
        os.close(start_r)
        os.close(start_w)
        assert sorted(codes.values()) == [0, 10], codes
        won = a if codes[a.entry.pr_link] == 0 else b
        lost_race = b if won is a else a
        winners += 1
        if not _released(ws, won):
            lost += 1
        # Nothing of the refused release reached the repository.
        text = b"".join((ws.root / rel).read_bytes() for rel in FILES)
        assert lost_race.entry.pr_link.encode() not in text
    print(f"\n{RACES} release races: {winners} winners, {lost} lost updates")
    assert lost == 0


def test_a_release_killed_at_any_instant_is_untouched_or_fully_released(tmp_path: Path) -> None:
    """KILLS releases SIGKILLed at a random instant of `write_staged`; after the next release's
    recovery (under the lock) the repository is the old one or the whole release, nothing else."""
    ws = _repo(tmp_path)
    original = _snapshot(ws.root)
    staged = _stage(ws.root, tmp_path / "scratch", 1)

    def restore() -> None:
        shutil.rmtree(ws.root)
        shutil.copytree(EXAMPLE, ws.root)

    def one(delay: float | None) -> float:
        start_r, start_w = os.pipe()
        pid = _fork(lambda: write_staged(ws, staged), start_r)
        t0 = time.monotonic()
        os.write(start_w, b"x")
        if delay is not None:
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(start_r)
        os.close(start_w)
        return time.monotonic() - t0

    durations = []
    for _ in range(5):  # how long an unkilled write takes here, to aim the kills inside it
        durations.append(one(None))
        assert _released(ws, staged)
        restore()
    span = sorted(durations)[len(durations) // 2] * 1.2
    rng = random.Random(17)
    outcomes = {"untouched": 0, "released": 0, "rolled forward": 0}
    for _ in range(KILLS):
        one(rng.uniform(0, span))
        half = _snapshot(ws.root) not in (original, {**original, **_new(staged)})
        assert not half or journal_of(ws).exists(), "half-written with no journal"
        with repository_lock(ws):
            rolled = recover_interrupted(ws)
        after = _snapshot(ws.root)
        assert after in (original, {**original, **_new(staged)}), "neither old nor released"
        assert not journal_of(ws).exists()
        assert not list(ws.state.glob(".*.tmp")) if ws.state.exists() else True
        if rolled:
            outcomes["rolled forward"] += 1
        elif after == original:
            outcomes["untouched"] += 1
        else:
            outcomes["released"] += 1
        restore()
    print(f"\n{KILLS} SIGKILLs during a release (span {span * 1000:.1f} ms): {outcomes}")
    assert sum(outcomes.values()) == KILLS


def _new(staged: Staged) -> dict[str, bytes]:
    return {rel: (staged.root / rel).read_bytes() for rel in FILES}


def test_recovery_refuses_a_file_changed_after_the_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journalled release whose file someone edited after the crash is not rolled over them:
    recovery refuses with one line, writes nothing and keeps the journal."""
    ws = _repo(tmp_path)
    staged = _stage(ws.root, tmp_path / "scratch", 1)
    changes = [
        journal.FileChange(rel=rel, old_sha256=journal.sha256_of(ws.root / rel), new=new)
        for rel, new in _new(staged).items()
    ]
    # A release stopped right after its journal was committed (the disk failed on the first file
    # write), then the lock file edited by hand.
    real_write = journal.write_atomic

    def journal_only(path: Path, data: bytes, **kw: int) -> None:
        if path != journal_of(ws):
            raise OSError(28, "No space left on device")
        real_write(path, data, **kw)

    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(journal, "write_atomic", journal_only)
        journal.commit(journal_of(ws), ws.root, changes)
    with open(ws.root / LOCK, "a") as f:
        f.write("# edited by hand after the crash\n")
    edited = _snapshot(ws.root)
    with pytest.raises(PipelineError, match="changed after an interrupted change") as err:
        with repository_lock(ws):
            recover_interrupted(ws)
    assert "\n" not in str(err.value)
    assert journal_of(ws).exists()
    assert _snapshot(ws.root) == edited
