"""Reports: byte-identical re-rendering, escaping of untrusted text, the HTML in a browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from corpus import unavailable

from relpipe.core import jsoncodec
from relpipe.images import services as svc
from relpipe.pipeline.report import ReportData, render_all, render_html, render_markdown
from relpipe.pipeline.verdict import evaluate

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


def _data(outcome: Any) -> ReportData:
    return ReportData(
        run_id="0123456789abcdef0123",
        title="qualify nightly_202610070333",
        inputs={"kind": "qualify"},
        outcome=outcome,
        verdict=evaluate(outcome),
    )


def test_rendering_twice_gives_identical_bytes(tmp_path: Path, make_outcome: Any) -> None:
    first = {
        k: p.read_bytes() for k, p in render_all(_data(make_outcome()), tmp_path / "a").items()
    }
    second = {
        k: p.read_bytes() for k, p in render_all(_data(make_outcome()), tmp_path / "b").items()
    }
    assert first == second
    html = first["report.html"].decode()
    assert html.count("<svg") == 2  # evals vs thresholds, precision categories
    assert "<dc:date>" not in html  # matplotlib's clock is not in the output


def test_untrusted_text_is_escaped(make_outcome: Any) -> None:
    html = render_html(_data(make_outcome())).decode()
    assert "&lt;b&gt;now&lt;/b&gt;" in html and "<b>now</b>" not in html
    md = render_markdown(_data(make_outcome())).decode()
    assert r"\<b\>now\<\/b\>" in md or r"\<b\>now\</b\>" in md
    row = next(line for line in md.splitlines() if line.startswith("| C5 "))
    assert row.count("|") - row.count(r"\|") == 5  # a `|` in a subject cannot split the table


def test_markdown_lists_every_check_with_status(make_outcome: Any) -> None:
    md = render_markdown(_data(make_outcome())).decode()
    assert "**Verdict: ⚠️ WARN**" in md
    for i in range(1, 13):
        assert re.search(rf"^\| C{i} \| .+ \| .+ (PASS|WARN|FAIL|N/A) \|", md, re.M)


def _chromium() -> str:
    """The browser, installed on demand like the services (apt, when root on Debian); elsewhere
    a one-line skip naming the package, and under CI=true a failure, never a skip."""
    found = shutil.which("chromium-browser")  # Ubuntu's name; Debian's is `chromium`
    if found:
        return found
    try:
        return svc.ensure_binary("chromium")
    except svc.ServiceError as exc:
        unavailable(str(exc))
        raise


def test_html_report_renders_in_headless_chromium(tmp_path: Path, make_outcome: Any) -> None:
    paths = render_all(_data(make_outcome()), tmp_path / "run")
    browser = _chromium()
    flags = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,1800",
    ]
    url = paths["report.html"].as_uri()
    env = dict(os.environ, HOME=str(tmp_path))
    dom = subprocess.run(
        [*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, env=env
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    checks = re.search(r'<table id="checks">.*?</table>', dom.stdout, re.S)
    assert checks is not None
    assert len(re.findall(r"<tr><td>C\d+</td>", checks.group(0))) == 12
    assert re.search(r'<figure id="plot-evals"><svg', dom.stdout)
    assert re.search(r'<figure id="plot-precision"><svg', dom.stdout)
    shot = tmp_path / "report.png"
    run = subprocess.run(
        [*flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "report-chromium.png")


HOSTILE = (
    "fix: \x1b[2J\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ thanks @alice, see #12 "
    "<script>alert(1)</script> [x](javascript:alert(1)) \u202eevil\u2066 " + "y" * 5000
)


def _hostile(make_outcome: Any, outcome_json: Any) -> ReportData:
    precision = outcome_json()["precision"]
    precision["commits"][0]["subject"] = HOSTILE
    return _data(make_outcome(precision=precision))


def test_hostile_subject_is_inert_in_markdown_and_html(
    make_outcome: Any, outcome_json: Any
) -> None:
    """Issue 17.3: a commit subject with escape sequences, an OSC-8 link, @mention, bare #N, HTML,
    a javascript: link, bidi controls and a 5,000-character run, in both report formats."""
    from markdown_it import MarkdownIt

    data = _hostile(make_outcome, outcome_json)
    md = render_markdown(data).decode()
    for bad in ("\x1b", "\u202e", "\u2066", "<script>"):
        assert bad not in md
    assert max(len(line) for line in md.splitlines()) < 1000
    assert "`@alice`" in md and "`#12`" in md
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert (
        "<script>" not in rendered
        and "<a " not in rendered
        and "javascript:" not in (re.findall(r'href="([^"]*)"', rendered) or [""])
    )
    html = render_html(data).decode()
    for bad in ("\x1b", "\u202e", "\u2066", "<script>"):
        assert bad not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "y" * 1100 not in html  # capped at the sink


def test_a_dollar_in_a_point_name_is_plain_text_in_the_plots(
    tmp_path: Path, make_outcome: Any
) -> None:
    """Issue 17.4: point names come from config values; `$...$` made matplotlib parse mathtext
    (and an unknown command crashed the report)."""
    from relpipe.pipeline.outputs import EvalOutput

    base = make_outcome()
    point = r"agentic-coding/tp$\notacommand{$/conc4"
    evals = tuple(
        jsoncodec.from_json(EvalOutput, {**jsoncodec.to_json(e), "point": point})
        for e in base.evals
    )
    paths = render_all(_data(make_outcome(evals=evals)), tmp_path / "run")
    html = paths["report.html"].read_text()
    svg = re.search(r'<figure id="plot-evals">(.*?)</figure>', html, re.S)
    assert svg is not None and r"tp$\notacommand{$/conc4" in svg.group(1)
