"""Progress: plain lines when not on a terminal (CI logs), a rich display when asked to."""

from __future__ import annotations

import io

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
