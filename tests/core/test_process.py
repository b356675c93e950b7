"""`core.process`, the one way relpipe starts a program: real processes, no shell."""

from __future__ import annotations

import os
import sys

import pytest

from relpipe.core import process


def test_run_returns_the_output_and_quotes_the_error_line_on_failure() -> None:
    done = process.run([sys.executable, "-c", "print('out')"])
    assert (done.returncode, done.stdout) == (0, b"out\n")
    script = "import sys; sys.stderr.write('noise\\nfatal: the real reason\\n'); sys.exit(4)"
    with pytest.raises(process.ProcessError) as info:
        process.run([sys.executable, "-c", script], what="tool")
    assert str(info.value) == "tool failed: fatal: the real reason"
    kept = process.run([sys.executable, "-c", script], check=False)
    assert kept.returncode == 4 and b"real reason" in kept.stderr


def test_a_timeout_kills_the_program_and_is_one_line() -> None:
    with pytest.raises(process.ProcessError, match=r"^sleeper did not finish in 0.5 s; killed$"):
        process.run(
            [sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5, what="sleeper"
        )


def test_output_over_the_limit_is_refused_not_kept() -> None:
    flood = "import sys; sys.stdout.write('x' * 5000)"
    with pytest.raises(process.ProcessError, match="more than 1000 bytes"):
        process.run([sys.executable, "-c", flood], limit=1000, what="flood")
    assert len(process.run([sys.executable, "-c", flood], limit=5000).stdout) == 5000


def test_a_missing_program_is_one_line_and_input_reaches_stdin() -> None:
    with pytest.raises(process.ProcessError, match=r"^cannot run no-such-tool-xyz \("):
        process.run(["no-such-tool-xyz"])
    echo = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    assert process.run([sys.executable, "-c", echo], input=b"abc").stdout == b"ABC"


def test_background_processes_overlap_without_pipes() -> None:
    """Two writers of more than a pipe's buffer (64 KiB) both finish whatever order is read."""
    big = "import sys; sys.stdout.write('y' * 300000)"
    first = process.Process([sys.executable, "-c", big])
    second = process.Process([sys.executable, "-c", big])
    assert len(second.wait().stdout) == 300000 and len(first.wait().stdout) == 300000


def test_a_flood_on_stderr_is_cut_not_refused() -> None:
    """stderr only feeds an error line: over its cap it is cut, and the run still succeeds."""
    noisy = "import sys; sys.stderr.write('e' * (2 << 20)); print('ok')"
    done = process.Process([sys.executable, "-c", noisy]).wait()
    assert done.stdout == b"ok\n" and len(done.stderr) == process.STDERR_LIMIT


def test_a_background_process_past_its_timeout_is_killed_and_one_line() -> None:
    """`Process.wait` waits on the process's exit itself (a pidfd where Linux has one), not by
    polling; past the timeout the process is killed, and one that exits in time is not."""
    sleeper = process.Process([sys.executable, "-c", "import time; time.sleep(60)"], what="nap")
    pid = sleeper._proc.pid
    with pytest.raises(process.ProcessError, match=r"^nap did not finish in 0.5 s; killed$"):
        sleeper.wait(timeout=0.5)
    assert sleeper._proc.returncode is not None  # reaped: killed, not left running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    quick = process.Process([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert quick.wait(timeout=30).returncode == 3
