"""Run a command's work in a child process and kill it when it overruns its time.

The parent re-executes `python -m relpipe.engine <command> ... --worker`; the worker reports each
step it enters and finally its result as marked JSON lines on stdout. A child that does not finish
in time (a kernel that spins for ever, a compiler that never returns) is killed with its whole
process group, and the verdict is FAIL naming the last step it entered. A child that dies without a
result is a FAIL too: a crash in the decode is the image's defect.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess  # not relpipe.core.process: engine/ runs in foreign images (stdlib only)
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from . import result

MARK = "@@relpipe-worker "
MAX_LINE = 4 << 20  # a worker line (the result) larger than this is refused
STDERR_TAIL = 2000


class Reporter:
    """The worker's side: progress and result lines on stdout."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.step = "start"

    def progress(self, step: str) -> None:
        self.step = step
        self._emit({"progress": step})

    def result(self, doc: dict[str, Any]) -> None:
        self._emit({"result": doc})

    def _emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(MARK + json.dumps(obj, allow_nan=False) + "\n")
        self.stream.flush()


def _engine_root() -> str | None:
    """The folder holding `relpipe/engine` when the payload is mounted bare (no install)."""
    namespace = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.dirname(namespace) if os.path.basename(namespace) == "relpipe" else None


def supervise(argv: Sequence[str], timeout: float) -> tuple[dict[str, Any] | None, str, str]:
    """Run `python -m relpipe.engine *argv` with a deadline; return (result or None, last step,
    problem).
    """
    proc = _spawn(argv)
    lines, err_tail, threads = _readers(proc)
    finished, step, result, problem = _follow(lines, time.monotonic() + timeout)
    if not finished:
        _kill(proc)
        return (
            None,
            step,
            f"watchdog: killed after {timeout:g}s without completion; hung in: {step}",
        )
    proc.wait()
    for t in threads:
        t.join(timeout=5)
    if result is None:
        tail = bytes(err_tail).decode("utf-8", errors="replace").strip().splitlines()
        last = tail[-1][:300] if tail else "no output"
        problem = (
            problem
            or f"worker exited with code {proc.returncode} "
            f"without a result in step {step!r}: {last}"
        )
    return result, step, problem


def _spawn(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """The worker `python -m relpipe.engine *argv`, in its own process group."""
    env = dict(os.environ)
    # The child must import this same engine/ even when it is not installed (mounted read-only).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_engine_root(), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "relpipe.engine", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def _readers(
    proc: subprocess.Popen[bytes],
) -> tuple[queue.Queue[bytes | None], bytearray, list[threading.Thread]]:
    """Started threads reading the worker: its stdout lines into a queue (None at the end), the
    tail of its stderr into a buffer."""
    lines: queue.Queue[bytes | None] = queue.Queue()
    err_tail = bytearray()

    def read_out() -> None:
        assert proc.stdout is not None
        for line in iter(lambda: proc.stdout.readline(MAX_LINE), b""):  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    def read_err() -> None:
        assert proc.stderr is not None
        for chunk in iter(lambda: proc.stderr.read(4096), b""):  # type: ignore[union-attr]
            err_tail.extend(chunk)
            del err_tail[:-STDERR_TAIL]

    threads = [
        threading.Thread(target=read_out, daemon=True),
        threading.Thread(target=read_err, daemon=True),
    ]
    for t in threads:
        t.start()
    return lines, err_tail, threads


def _follow(
    lines: queue.Queue[bytes | None], deadline: float
) -> tuple[bool, str, dict[str, Any] | None, str]:
    """Read the worker's marked lines until it ends or the deadline passes: (finished, last
    step, result or None, problem)."""
    step, result, problem = "starting worker", None, ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False, step, result, problem
        try:
            raw = lines.get(timeout=left)
        except queue.Empty:
            return False, step, result, problem
        if raw is None:
            return True, step, result, problem
        text = raw.decode("utf-8", errors="replace")
        if not text.startswith(MARK):
            continue
        try:
            msg = json.loads(text[len(MARK) :])
        except json.JSONDecodeError:
            problem = "worker wrote an unreadable result line"
            continue
        if isinstance(msg, dict) and isinstance(msg.get("progress"), str):
            step = msg["progress"][:200]
        elif isinstance(msg, dict) and isinstance(msg.get("result"), dict):
            result = msg["result"]


def worker_argv(command: str, argv: Sequence[str]) -> list[str]:
    """The worker's argv: the same options minus --out (only the parent writes the result)."""
    out: list[str] = [command]
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            out.append(a)
    return [*out, "--worker"]


def watched(command: str, argv: Sequence[str], timeout: float) -> dict[str, Any]:
    """Run `command` as a watched worker and return its result document (a FAIL when it hung or
    died).
    """

    t0 = time.monotonic()
    doc, step, problem = supervise(worker_argv(command, argv), timeout)
    if doc is None:
        doc = result.envelope(
            command,
            "fail",
            reason=problem,
            hung_in=step if problem.startswith("watchdog") else None,
        )
    timings = doc.setdefault("timings", {})
    if isinstance(timings, dict):
        timings["wall_s"] = round(time.monotonic() - t0, 3)
    doc["watchdog"] = {"timeout_s": timeout, "last_step": step}
    return doc


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
