"""Progress: plain lines when not on a terminal (CI logs), a rich display when asked to."""

from __future__ import annotations

import io
import time

from relpipe.pipeline.progress import Progress


def test_plain_lines_name_stage_status_and_cache_hits() -> None:
    out = io.StringIO()
    with Progress(2, "relpipe", stream=out) as progress:  # StringIO is not a TTY: plain lines
        progress("probe", "start", "", 0.0)
        progress("probe", "done", "ok", 1.25)
        progress("smoke", "cached", "pass", 9.0)
    assert out.getvalue().splitlines() == [
        "relpipe: [1/2] probe ...",
        "relpipe: [1/2] probe: ok (1.2s)",
        "relpipe: [2/2] smoke: pass (cached)",
    ]


def test_rich_display_prints_finished_stages() -> None:
    out = io.StringIO()
    with Progress(1, "relpipe", stream=out, rich=True) as progress:
        progress("eval decode-parity batch 1", "start", "", 0.0)
        progress("eval decode-parity batch 1", "done", "fail", 3.0)
    text = out.getvalue()
    assert "[1/1] eval decode-parity batch 1: fail (3.0s)" in text


def test_a_long_stage_says_it_is_still_running() -> None:
    """Issue 36: no long silent stretch in a log; a line every `every` seconds of a stage."""
    out = io.StringIO()
    with Progress(2, "relpipe", stream=out, every=0.1) as progress:
        progress("smoke", "start", "", 0.0)
        time.sleep(0.35)
        progress("smoke", "done", "pass", 0.35)
        time.sleep(0.25)  # between stages: nothing runs, nothing is said
    lines = out.getvalue().splitlines()
    assert lines[0] == "relpipe: [1/2] smoke ..."
    assert lines[-1] == "relpipe: [1/2] smoke: pass (0.3s)"
    beats = lines[1:-1]
    assert len(beats) >= 2 and all(
        line.startswith("relpipe: [1/2] smoke: still running (") for line in beats
    )
