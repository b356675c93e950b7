"""Regenerate docs/history-dashboard.png: ATOM's three CI dashboards (the May and August main
dashboards and the ATOMesh accuracy dashboard, from ../shared/data/results) ingested into a fresh
store, `relpipe history report` with ATOM's history for the culprits, and a headless-chromium
screenshot of the page. Run by `nox -s screenshots`; never drawn by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("RELPIPE_RESULTS", ROOT.parent / "shared" / "data" / "results"))
BUNDLE = Path(
    os.environ.get("RELPIPE_ATOM_BUNDLE", ROOT.parent / "shared" / "data" / "atom" / "atom.bundle")
)
DASHBOARDS = (
    "benchmark-dashboard-2026-05-23.js",
    "benchmark-dashboard.js",
    "atomesh-accuracy-dashboard.js",
)
OUT = ROOT / "docs" / "history-dashboard.png"


def main() -> int:
    from relpipe.pipeline import cli  # the package under test, from this checkout or installed

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("screenshot: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "ATOM"
        subprocess.run(["git", "clone", "--quiet", str(BUNDLE), str(repo)], check=True)
        db, page = str(work / "h.sqlite"), work / "index.html"
        files = [str(DATA / "atom-dashboards" / name) for name in DASHBOARDS]
        if cli.main(["history", "ingest", "--history", db, *files]) != 0:
            return 1
        report = ["history", "report", "--history", db, "--out", str(page)]
        if cli.main([*report, "--engine-repo", str(repo), "--title", "ATOM dashboards"]) != 0:
            return 1
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                f"--user-data-dir={work / 'profile'}",
                "--window-size=1280,2400",
                "--hide-scrollbars",
                f"--screenshot={OUT}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            env=dict(os.environ, HOME=str(work)),
            timeout=300,
        )
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
