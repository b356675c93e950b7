"""What relpipe prints to a terminal carries no escape sequence from outside text (issue 17.3).

The attack: an engine commit whose subject clears the screen, recolours the terminal and hides an
OSC-8 hyperlink. Its history is real git; the C5 check names the subject, and `qualify`'s printer
(`pipeline.run.print_result`) and the CLI's one-line error are what reach the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import commit_files, source_root

from relpipe.core.status import PASS
from relpipe.pipeline.outputs import PrecisionOutput
from relpipe.pipeline.run import RunResult, print_result
from relpipe.pipeline.verdict import Outcome, Verdict, check_precision
from relpipe.validate import precision

SUBJECT = (
    "fix(linear): \x1b[2J\x1b[Hdtype \x1b[31mred\x1b[0m "
    "\x1b]8;;https://evil.example/\x1b\\see ROCm/ATOM#1\x1b]8;;\x1b\\ \u202e(#2501)"
)


def _no_control(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    assert not any(ord(ch) < 0x20 and ch != "\n" for ch in text)


def test_qualify_prints_the_c5_reason_without_escape_sequences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "atom"
    a = commit_files(repo, {"atom/model_ops/linear.py": "y = x\n"}, "init")
    b = commit_files(repo, {"atom/model_ops/linear.py": "y = x.to(dtype)\n"}, SUBJECT)
    report = precision.diff(repo, a, b)
    check = check_precision(Outcome(precision=PrecisionOutput(status=PASS, report=report)))
    assert "\x1b[2J" in check.reason  # the reason itself keeps the subject as git has it
    result = RunResult(
        plan=None,  # type: ignore[arg-type]
        record=None,  # type: ignore[arg-type]
        verdict=Verdict((check,)),
        outcome=None,
        reports={"report.html": tmp_path / "report.html"},
        ran=(),
        cached=(),
    )
    print_result(result, as_json=False)
    out = capsys.readouterr().out
    _no_control(out)
    assert "fix(linear): dtype red see ROCm/ATOM#1 \ufffd(#2501)" in out


def test_a_cli_error_quoting_outside_text_is_one_clean_line(tmp_path: Path) -> None:
    # The path of a file to read is outside text that the error quotes as given.
    hostile = tmp_path / "\x1b[2J\x1b]8;;https://evil/\x1b\\facts\x1b]8;;\x1b\\.json"
    out = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "notes", "render", str(hostile)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(source_root())},
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "cannot read facts file" in out.stderr
    _no_control(out.stderr.rstrip("\n"))
    assert f"{tmp_path}/facts.json" in out.stderr
