"""Running another program: the one way relpipe starts a process.

No shell, ever (`argv` is a list). `run` runs one program through pipes; `Process` runs one in
the background with its output in unnamed temporary files, not pipes, so several can run
together without one stalling on a full pipe while another is read, and reads it back capped
(`limit` bytes), so a hostile volume cannot exhaust memory. A `timeout` kills
the process (and its process group, when it was started in its own session: then also the
children left behind after a normal exit) and is one line.
`Daemon` starts a server that outlives the call (its own session, output appended to a log
file) and `stop` ends one by PID; `call` runs a program the user watches on our own terminal.
Failures are `ProcessError` (`ProgramMissing`, `ProcessTimeout` where a caller words its own
advice): one line naming what ran and what it said. Standard library only: the commit hook's git
helper uses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from .errors import RelpipeError
from .record import Record

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from pathlib import Path  # annotations only: the hook's start-up does not load pathlib
    from typing import IO

DEFAULT_TIMEOUT = 600.0  # seconds; every caller that can know better passes its own
DEFAULT_LIMIT = 1 << 30  # bytes of stdout kept; stderr is kept to STDERR_LIMIT
STDERR_LIMIT = 1 << 20
MESSAGE_LIMIT = 300  # characters of a program's own words in an error line


class ProcessError(RelpipeError):
    """A program could not start, timed out, wrote too much or exited non-zero."""


class ProgramMissing(ProcessError):
    """The program is not installed (no such file on PATH)."""


class ProcessTimeout(ProcessError):
    """The program ran past its timeout and was killed."""


class Completed(Record):
    """A finished program: its argv, exit status and (capped) output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes


def one_line(text: bytes | str, limit: int = MESSAGE_LIMIT) -> str:
    """A program's output as one short line for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + "..."


def first_error(stderr: bytes, returncode: int) -> str:
    """The line of `stderr` that says what went wrong (git's `fatal:`/`error:` first)."""
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    chosen = next((line for line in lines if line.startswith(("fatal", "error"))), None)
    return one_line(chosen or (lines[0] if lines else f"exit {returncode}"))


def _cannot_start(what: str, exc: OSError) -> ProcessError:
    kind = ProgramMissing if exc.errno == errno.ENOENT else ProcessError
    return kind(f"cannot run {what} ({exc.strerror})")


def _timed_out(what: str, timeout: float | None) -> ProcessTimeout:
    return ProcessTimeout(f"{what} did not finish in {timeout:g} s; killed")


def _read(handle: IO[bytes], limit: int | None, what: str, *, refuse: bool = True) -> bytes:
    """The output back from its file: over `limit`, refused (stdout) or cut (stderr, which only
    ever feeds an error line)."""
    handle.seek(0)
    data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:
        if not refuse:
            return data[:limit]
        raise ProcessError(f"{what} wrote more than {limit} bytes; refusing its output")
    return data


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> int:
    """`proc.wait(timeout)` without its polling: Popen sleeps in steps of up to 50 ms while it
    waits with a timeout, which added ~7 ms to every short git run. A pidfd (Linux 5.3+) becomes
    readable the moment the process exits; elsewhere Popen's own wait is used."""
    if timeout is None:
        return proc.wait()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or the process is reaped
        return proc.wait(timeout=timeout)
    try:
        import select  # deferred: not on the commit hook's usual path (start-up)

        poller = select.poll()  # not select.select: a pidfd may be numbered past FD_SETSIZE
        poller.register(pidfd, select.POLLIN)
        readable = poller.poll(max(0.0, timeout) * 1000)
    finally:
        os.close(pidfd)
    if not readable:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return proc.wait()


class Process:
    """One program running in the background; `wait()` gives its `Completed` result."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        new_session: bool = False,
        what: str = "",
    ) -> None:
        self.argv = tuple(argv)
        self.what = what or os.path.basename(self.argv[0])
        import tempfile  # deferred: the commit hook's plain `run` never needs it (ms to import)

        self._new_session = new_session
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        source = None
        if input is not None:
            source = tempfile.TemporaryFile()
            source.write(input)
            source.seek(0)
        try:
            self._proc = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=source if source is not None else subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                start_new_session=new_session,
            )
        except OSError as exc:
            self.close()
            raise _cannot_start(self.what, exc) from None
        finally:
            if source is not None:
                source.close()

    def wait(
        self, *, timeout: float | None = DEFAULT_TIMEOUT, limit: int | None = DEFAULT_LIMIT
    ) -> Completed:
        """Wait (killing it after `timeout` seconds) and read its output back, capped."""
        try:
            try:
                code = _wait_exit(self._proc, timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise _timed_out(self.what, timeout) from None
            return Completed(
                argv=self.argv,
                returncode=code,
                stdout=_read(self._out, limit, self.what),
                stderr=_read(self._err, STDERR_LIMIT, self.what, refuse=False),
            )
        finally:
            self.close()

    def kill(self) -> None:
        """Kill the program; one started in its own session with its whole process group, also
        the children it left running after it exited (the group outlives its leader)."""
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        if self._new_session:
            # Safe after the leader was reaped: Linux gives no new process a PID that is still
            # some group's ID, so the group is ours or gone.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop the process if it still runs, and drop its files."""
        self.kill()
        self._out.close()
        self._err.close()


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    limit: int | None = DEFAULT_LIMIT,
    check: bool = True,
    what: str = "",
) -> Completed:
    """Run `argv` to completion through pipes (one process: nothing to overlap with) and refuse
    output over `limit`. With `check`, a non-zero exit is a one-line `ProcessError` quoting the
    program's own error line. Use `Process` for several at once or for untrusted volumes."""
    name = what or os.path.basename(argv[0])
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _timed_out(name, timeout) from None
    except OSError as exc:
        raise _cannot_start(name, exc) from None
    if limit is not None and len(proc.stdout) > limit:
        raise ProcessError(f"{name} wrote more than {limit} bytes; refusing its output")
    done = Completed(
        argv=tuple(argv), returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr
    )
    if check and done.returncode != 0:
        raise ProcessError(f"{name} failed: {first_error(done.stderr, done.returncode)}")
    return done


def call(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    what: str = "",
) -> int:
    """Run `argv` in the foreground on our own stdin, stdout and stderr (a command the user
    watches, e.g. the test suite under `services run`) and return its exit code. Its output is
    the user's to read, so nothing is captured; a `timeout` kills it."""
    name = what or os.path.basename(argv[0])
    try:
        return subprocess.call(
            list(argv), cwd=cwd, env=dict(env) if env is not None else None, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise _timed_out(name, timeout) from None
    except OSError as exc:
        raise _cannot_start(name, exc) from None


LOG_TAIL = 64 * 1024  # bytes of a daemon's log read back for the line that says why it stopped
_WHY = ("panic", "fatal", "error")


class Daemon:
    """A server that outlives this call: started in its own session, with stdin closed and its
    output appended to `log`, and left running until `stop` (this object, or `stop(pid)` from
    another process that only has the PID)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: Path,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        what: str = "",
    ) -> None:
        self.argv = tuple(argv)
        self.what = what or os.path.basename(self.argv[0])
        self.log = log
        with log.open("ab") as out:
            try:
                self._proc = subprocess.Popen(
                    self.argv,
                    cwd=cwd,
                    env=dict(env) if env is not None else None,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            except OSError as exc:
                raise _cannot_start(self.what, exc) from None
        self.pid = self._proc.pid

    def wait_ready(self, ready: Callable[[], bool], timeout: float, poll: float = 0.1) -> None:
        """Poll `ready()` until it is true. A daemon that exits first is an error quoting the
        last line of its log; one still not ready after `timeout` seconds is stopped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            code = self._proc.poll()
            if code is not None:
                raise ProcessError(
                    f"{self.what} exited with {code}: {self._why()} (log: {self.log})"
                )
            time.sleep(poll)
        self.stop()
        raise ProcessTimeout(f"{self.what} did not become ready in {timeout:g}s (log: {self.log})")

    def _why(self) -> str:
        try:
            with self.log.open("rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - LOG_TAIL))
                lines = handle.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        # The line that says why (a Go panic or a `level=fatal` line is followed by its trace).
        said = [line for line in lines if any(w in line.lower() for w in _WHY)]
        return one_line((said or lines or [""])[-1])

    def stop(self, grace: float = 20.0) -> None:
        stop(self.pid, grace)


def stop(pid: int, grace: float = 20.0) -> None:
    """End a program we started, by PID: SIGTERM, then SIGKILL after `grace` seconds. Works for a
    child of this process (reaped) and for one another relpipe process started (polled)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: poll its existence
            if _gone(pid):
                return
            done = 0
        if done == pid:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _gone(pid: int) -> bool:
    """No such process, or one that has exited and waits for a parent that never reaps it (an
    orphan under a container's init that reaps nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:  # no /proc: existence is all that can be known
        return False
    # `pid (comm) state ...`: comm may hold spaces and parentheses, the state follows the last ')'
    return stat.rpartition(b")")[2].split()[:1] == [b"Z"]
