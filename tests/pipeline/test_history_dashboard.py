"""`relpipe history report` in a real headless browser: ATOM's dashboards ingested, the page loads
without a console error, every chart has its points, a regression is marked with its culprits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import corpus
import pytest

from relpipe.images import services as svc
from relpipe.pipeline import cli

DASHBOARDS = (
    "benchmark-dashboard-2026-05-23.js",
    "benchmark-dashboard.js",
    "atomesh-accuracy-dashboard.js",
)
BAD = "0bb75144e859"  # the May collapse's first bad engine commit (tests/validate/test_culprits.py)


def _chromium() -> str:
    found = shutil.which("chromium-browser")  # Ubuntu's name; Debian's is `chromium`
    if found:
        return found
    try:
        return svc.ensure_binary("chromium")
    except svc.ServiceError as exc:
        corpus.unavailable(str(exc))
        raise


def _browse(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Chromium headless on `page`; its console messages go to stderr (`--enable-logging`)."""
    flags = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={tmp / 'profile'}",
        "--window-size=1200,1600",
    ]
    env = dict(os.environ, HOME=str(tmp))
    done = subprocess.run(
        [*flags, *extra, page.as_uri()], capture_output=True, text=True, timeout=180, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, atom_repo: Path) -> Path:
    tmp = tmp_path_factory.mktemp("dashboard")
    db = str(tmp / "h.sqlite")
    files = [str(corpus.results_dir() / "atom-dashboards" / name) for name in DASHBOARDS]
    assert cli.main(["history", "ingest", "--history", db, *files]) == 0
    out = tmp / "index.html"
    argv = ["history", "report", "--history", db, "--out", str(out), "--engine-repo"]
    assert cli.main([*argv, str(atom_repo), "--title", "ATOM dashboards"]) == 0
    return out


def test_the_console_capture_sees_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><p>x</p><script>notDefined();</script>")
    errors = _console(_browse(broken, tmp_path, "--dump-dom").stderr)
    assert any("notDefined is not defined" in line for line in errors)


def test_dashboard_loads_with_its_charts_points_and_regressions(page: Path, tmp_path: Path) -> None:
    assert page.stat().st_size < 10_000_000
    done = _browse(page, tmp_path, "--dump-dom")
    assert _console(done.stderr) == []
    dom = done.stdout
    charts = re.findall(r'<section class="chart"(.*?)</section>', dom, re.S)
    assert len(charts) > 100
    for chart in charts:
        points = int(re.search(r'data-points="(\d+)"', chart).group(1))
        assert points > 0 and chart.count('class="pt"') == points
    # the May collapse, marked on its chart and listed with the commit between its two runs
    qwen = next(
        c
        for c in charts
        if 'data-series="ATOM::Qwen3.5-397B-A17B-FP8 MTP"' in c
        and 'data-metric="acceptance_rate"' in c
    )
    assert 'class="ring bad"' in qwen
    table = re.search(r'<table id="regressions">.*?</table>', dom, re.S).group(0)
    row = next(r for r in table.split("<tr") if "Qwen3.5-397B-A17B-FP8 MTP" in r and BAD in r)
    assert "nightly_202605181640 @6619cc7d" in row and "draft-model" in row
    # images and engine commits on the axis
    assert 'class="imgline"' in dom and 'class="commit"' in dom
    shot = tmp_path / "dashboard.png"
    _browse(page, tmp_path, f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
