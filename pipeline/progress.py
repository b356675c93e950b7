"""Progress of long work: a rich progress display on a terminal, plain lines otherwise (CI, pipes).

Plain lines include a "still running" line every 10 s of a stage (`core.heartbeat`): a log never
shows a long silent stretch (a smoke decode in Triton's interpreter takes minutes on a CPU).

Progress goes to stderr so that `--json` output on stdout stays machine-readable.
"""

from __future__ import annotations

import contextlib
import sys
from types import TracebackType
from typing import IO, Any

from ..core.heartbeat import EVERY_S, heartbeat


class Progress:
    """Stage events in; one line per finished stage (plain) or a live bar (TTY)."""

    def __init__(
        self,
        total: int,
        title: str,
        stream: IO[str] | None = None,
        rich: bool | None = None,
        every: float = EVERY_S,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = max(total, 1)
        self.title = title
        self.done = 0
        use_rich = self.stream.isatty() if rich is None else rich
        self._rich: Any = None
        self._task: Any = None
        self._beat = contextlib.ExitStack()  # the running stage's heartbeat (plain lines)
        self._every = every
        if use_rich:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )

    def __enter__(self) -> Progress:
        if self._rich is not None:
            self._rich.__enter__()
            self._task = self._rich.add_task(self.title, total=self.total)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._beat.close()
        if self._rich is not None:
            self._rich.__exit__(exc_type, exc, tb)

    def extend(self, more: int) -> None:
        self.total += more
        if self._rich is not None:
            self._rich.update(self._task, total=self.total)

    def __call__(self, label: str, what: str, status: str, seconds: float) -> None:
        """The `StageRunner.on_event` callback."""
        if what == "start":
            if self._rich is not None:
                self._rich.update(self._task, description=f"{self.title}: {label}")
            else:
                step = f"[{self.done + 1}/{self.total}] {label}"
                self.line(f"{step} ...")
                self._beat.close()
                self._beat.enter_context(
                    heartbeat(
                        f"{self.title}: {step}", every=self._every, say=self._print, announce=False
                    )
                )
            return
        self._beat.close()
        self.done += 1
        tail = f"{status} " if status else ""
        text = (
            f"[{self.done}/{self.total}] {label}: {tail}"
            f"({'cached' if what == 'cached' else f'{seconds:.1f}s'})"
        )
        if self._rich is not None:
            self._rich.console.print(text, highlight=False, markup=False)
            self._rich.update(self._task, completed=min(self.done, self.total))
        else:
            self.line(text)

    def line(self, text: str) -> None:
        if self._rich is not None:
            self._rich.console.print(f"{self.title}: {text}", highlight=False, markup=False)
        else:
            self._print(f"{self.title}: {text}")

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
