"""A progress line every few seconds while a long step runs that prints nothing of its own.

`with heartbeat("installing docker.io with apt-get"):` says what starts, then
"... still running (20 s)" every `EVERY_S` seconds from a background thread, and how long it took
at the end, so that a person (or a CI log) never watches more than ten silent seconds of package
installs, image builds or services starting.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

EVERY_S = 10.0  # the longest silence a person watching the set-up should see


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def heartbeat(
    what: str,
    *,
    every: float = EVERY_S,
    say: Callable[[str], None] = _stderr,
    announce: bool = True,
) -> Iterator[None]:
    """Say `what` now, a "still running" line every `every` seconds, and "done" at the end
    (without `announce`, only the "still running" lines: the caller says the rest)."""
    started = time.monotonic()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            say(f"{what}: still running ({time.monotonic() - started:.0f} s)")

    if announce:
        say(f"{what} ...")
    thread = threading.Thread(target=beat, name=f"heartbeat: {what}", daemon=True)
    thread.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        stop.set()
        thread.join()
        if announce:
            took = time.monotonic() - started
            say(f"{what}: {'done' if ok else 'stopped'} ({took:.0f} s)")
