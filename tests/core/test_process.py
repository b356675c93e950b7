"""`core.process`, the one way relpipe starts a program: real processes, no shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_a_missing_program_and_a_timeout_have_their_own_kinds() -> None:
    """Callers that word their own advice (install X; is the server up?) catch the kind."""
    with pytest.raises(process.ProgramMissing, match=r"^cannot run no-such-tool-xyz \("):
        process.run(["no-such-tool-xyz"])
    with pytest.raises(process.ProgramMissing):
        process.Process(["no-such-tool-xyz"])
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    with pytest.raises(process.ProcessTimeout, match=r"^nap did not finish in 0.5 s; killed$"):
        process.Process(sleeper, what="nap").wait(timeout=0.5)
    with pytest.raises(process.ProcessError) as info:  # not missing: it is not executable
        process.run(["/dev/null"])
    assert not isinstance(info.value, process.ProgramMissing)


def test_call_shares_our_terminal_and_returns_the_exit_code(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = "import os, sys; print('seen', os.environ['X'], os.getcwd()); sys.exit(3)"
    code = process.call([sys.executable, "-c", script], env={**os.environ, "X": "1"}, cwd=tmp_path)
    assert code == 3 and capfd.readouterr().out == f"seen 1 {tmp_path}\n"
    with pytest.raises(process.ProcessTimeout, match=r"^long did not finish in 0.5 s; killed$"):
        process.call(
            [sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5, what="long"
        )
    with pytest.raises(process.ProgramMissing, match=r"^cannot run no-such-tool-xyz \("):
        process.call(["no-such-tool-xyz"])


def _server(tmp_path: Path, body: str) -> list[str]:
    """A program that says hello, then runs `body` (a server stand-in)."""
    return [sys.executable, "-c", f"import sys, time; print('hello', flush=True); {body}"]


def test_a_daemon_logs_to_its_file_runs_in_its_own_session_and_stops(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("earlier run\n")  # appended to, never truncated
    marker = tmp_path / "ready"
    body = f"open({str(marker)!r}, 'w').close(); time.sleep(60)"
    daemon = process.Daemon(_server(tmp_path, body), log=log, what="server")
    try:
        daemon.wait_ready(marker.exists, timeout=30)
        assert os.getsid(daemon.pid) == daemon.pid  # its own session: our signals are not its
        assert log.read_text() == "earlier run\nhello\n"
    finally:
        daemon.stop(grace=5)
    with pytest.raises(ProcessLookupError):
        os.kill(daemon.pid, 0)


def test_a_daemon_that_exits_early_is_one_line_quoting_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    body = "sys.stderr.write('error: bind: address in use\\n  at main.go:7\\n'); sys.exit(5)"
    daemon = process.Daemon(_server(tmp_path, body), log=log, what="server")
    with pytest.raises(process.ProcessError) as info:
        daemon.wait_ready(lambda: False, timeout=30)
    assert str(info.value) == f"server exited with 5: error: bind: address in use (log: {log})"
    with pytest.raises(process.ProgramMissing):
        process.Daemon(["no-such-server-xyz"], log=log)


def test_a_daemon_never_ready_is_stopped_and_the_error_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    daemon = process.Daemon(_server(tmp_path, "time.sleep(60)"), log=log, what="server")
    with pytest.raises(process.ProcessTimeout) as info:
        daemon.wait_ready(lambda: False, timeout=0.5)
    assert str(info.value) == f"server did not become ready in 0.5s (log: {log})"
    with pytest.raises(ProcessLookupError):
        os.kill(daemon.pid, 0)


def test_stop_ends_a_program_another_process_started(tmp_path: Path) -> None:
    """`services stop` has only a PID from `services start`: not its child, so it is polled."""
    parent = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True); p.wait()"
    )
    outer = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert outer.stdout is not None
        pid = int(outer.stdout.readline())
        process.stop(pid, grace=30)
        assert outer.wait(timeout=30) == 0  # its parent saw it end (and reaped it)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        outer.kill()
        outer.wait()


def test_stop_does_not_wait_on_an_orphan_nobody_reaps(tmp_path: Path) -> None:
    """Where init reaps nothing (a container's), a stopped orphan stays a zombie: it is gone."""
    spawn = (
        "import subprocess, sys; "
        "print(subprocess.Popen(['sleep', '300'], stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL, start_new_session=True).pid)"
    )
    pid = int(process.run([sys.executable, "-c", spawn], timeout=60).stdout)
    process.stop(pid, grace=3600)  # past pytest's timeout: returns once SIGTERM took effect
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return  # an init that reaps
    state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    assert state == b"Z"
