"""relpipe.changelog.append: appends that read back, N appends in a row, SIGKILL at random moments,
and concurrent appenders (real processes started with sys.executable)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import source_root

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry, parse, render
from relpipe.changelog.errors import ChangelogError

LINK = "https://github.com/SemiAnalysisAI/InferenceX/pull/"


def entry(n: int, who: str = "e") -> Entry:
    return Entry(
        config_keys=("dsr1-fp4-mi355x-atom",),
        description=(f"{who} {n}", "说明"),
        pr_link=LINK + str(n + 1),
    )


def test_append_to_the_corpus_returns_the_new_bytes(tmp_path: Path, corpus_dir: Path) -> None:
    path = tmp_path / "perf-changelog.yaml"
    old = (corpus_dir / "perf-changelog.yaml").read_bytes()
    path.write_bytes(old)
    new = append(path, entry(1))
    assert new == path.read_bytes() == old + b"\n" + render(entry(1)).encode()
    assert [p.name for p in tmp_path.iterdir()] == [
        "perf-changelog.yaml"
    ]  # no temp or lock file left


def test_append_creates_a_new_file_and_refuses_a_broken_one(tmp_path: Path) -> None:
    path = tmp_path / "perf-changelog.yaml"
    assert append(path, entry(0)) == render(entry(0)).encode()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with pytest.raises(ChangelogError, match="does not end with a newline"):
        append(path, entry(1))
    path.write_bytes(b'- config-keys:\n    - "unclosed\n')
    with pytest.raises(ChangelogError, match="refusing to append"):
        append(path, entry(1))
    with pytest.raises(ChangelogError, match="cannot render an invalid"):
        append(
            tmp_path / "other.yaml", Entry(config_keys=(), description=("x",), pr_link=LINK + "1")
        )


# Printable text drawn directly (str.isprintable: no Other or Separator code point but " "), so
# the filters below reject almost nothing and the filter health check cannot fail the run.
PRINTABLE = st.characters(exclude_categories=("C", "Z"), include_characters=" ")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(PRINTABLE, min_size=1, max_size=30).filter(lambda s: s.strip() and s.isprintable()),
        min_size=1,
        max_size=8,
    )
)
def test_appending_n_generated_entries_keeps_the_file_valid(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = tmp_path_factory.mktemp("n") / "perf-changelog.yaml"
    expected = [
        Entry(config_keys=(f"key-{i}",), description=(text,), pr_link=LINK + str(i + 1))
        for i, text in enumerate(lines)
    ]
    for item in expected:
        append(path, item)
    assert list(parse(path.read_bytes()).entries) == expected


CHILD = f"""
import sys
from pathlib import Path
from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry
path, start, who = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
count = int(sys.argv[4]) if len(sys.argv) > 4 else 10**9
print("ready", flush=True)
for n in range(start, start + count):
    entry = Entry(
        config_keys=("dsr1-fp4-mi355x-atom",),
        description=(f"{{who}} {{n}}", "说明"),
        pr_link="{LINK}" + str(n + 1),
    )
    append(path, entry)
"""


ROOT = Path(__file__).resolve().parents[2]
# -S skips site (and the editable-install hook) to start children faster; PYTHONPATH finds us.
FAST_ENV = dict(os.environ, PYTHONPATH=str(source_root()))


def _allowed(base: bytes, data: bytes) -> int | None:
    """k when `data` is exactly base plus whole entries 0..k-1, else None."""
    if not data.startswith(base):
        return None
    k = data.count(b"\n- config-keys:")
    expected = base + b"".join(b"\n" + render(entry(n)).encode() for n in range(k))
    return k if data == expected else None


# Forks one appender per line read (appending entries from the number on the line until it is
# killed) and reports how it ended: a fork costs a millisecond where a fresh interpreter costs
# ~80 ms, so the kill lanes spend their time killing appenders rather than starting Python.
FORKER = f"""
import os, sys
from pathlib import Path
from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry
path = Path(sys.argv[1])
while line := sys.stdin.readline():
    pid = os.fork()
    if pid == 0:
        try:
            for n in range(int(line), 10**9):
                entry = Entry(
                    config_keys=("dsr1-fp4-mi355x-atom",),
                    description=(f"e {{n}}", "说明"),
                    pr_link="{LINK}" + str(n + 1),
                )
                append(path, entry)
        finally:
            os._exit(1)
    print(pid, flush=True)
    print(os.waitpid(pid, 0)[1], flush=True)
"""


def _kill_lane(path: Path, kills: int, seed: int) -> int:
    rng = random.Random(seed)
    base = render(
        Entry(config_keys=("base",), description=("base entry",), pr_link=LINK + "1")
    ).encode()
    path.write_bytes(base)
    appended = 0
    forker = subprocess.Popen(
        [sys.executable, "-S", "-c", FORKER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=FAST_ENV,
    )
    assert forker.stdin is not None and forker.stdout is not None
    try:
        for _ in range(kills):
            forker.stdin.write(f"{appended}\n")
            forker.stdin.flush()
            pid = int(forker.stdout.readline())
            time.sleep(rng.uniform(0, 0.03))
            os.kill(pid, signal.SIGKILL)
            status = int(forker.stdout.readline())
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
            data = path.read_bytes()
            k = _allowed(base, data)
            assert k is not None and k >= appended, f"torn file after a kill: {data[-200:]!r}"
            appended = k
    finally:
        forker.stdin.close()
        forker.wait(timeout=60)
        forker.stdout.close()
    return appended


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_old_or_old_plus_whole_entry(tmp_path: Path) -> None:
    lanes = 4
    with ThreadPoolExecutor(lanes) as pool:
        done = list(
            pool.map(
                lambda k: _kill_lane(tmp_path / f"lane{k}" / "perf-changelog.yaml", 50, k),
                [(tmp_path / f"lane{k}").mkdir() or k for k in range(lanes)],
            )
        )
    assert sum(done) > 0  # kills landed after some appends too, not only before the first
    for k in range(lanes):
        path = tmp_path / f"lane{k}" / "perf-changelog.yaml"
        append(path, entry(done[k]))  # the next append cleans temp files of killed appenders
        assert sorted(p.name for p in path.parent.iterdir()) == ["perf-changelog.yaml"]


@pytest.mark.slow
def test_eight_concurrent_appenders_of_25_entries_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "perf-changelog.yaml"
    children = [
        subprocess.Popen(
            [sys.executable, "-S", "-c", CHILD, str(path), "0", f"p{p}", "25"],
            stdout=subprocess.DEVNULL,
            env=FAST_ENV,
        )
        for p in range(8)
    ]
    assert [child.wait(timeout=300) for child in children] == [0] * 8
    entries = parse(path.read_bytes()).entries
    assert len(entries) == 200
    assert sorted(e.description[0] for e in entries if e) == sorted(
        f"p{p} {n}" for p in range(8) for n in range(25)
    )
