"""`relpipe review --all-keys` on the real InferenceX tree: whole process under 10 s.

The issue's target (2 cores): every config key of the real masters resolved to its launch path
(scripts, helpers, runners, srt-slurm recipes with inheritance) and every fast check run, as one
process (`python -m relpipe.pipeline.cli review --all-keys --json`). Interpreter start-up plus
`import relpipe.pipeline.cli` is the reference in the same run. Wall time is the best of 3 runs,
CPU time (user + sys of the child) is reported too.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402

TARGET_S = 10.0


def tree() -> Path:
    base = Path(os.environ.get("RELPIPE_CORPUS", ROOT.parent / "shared" / "data" / "inferencex"))
    return base / "tree"


def _child_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def main() -> list[str]:
    repo = tree()
    if not (repo / "configs").is_dir():
        return [f"- skipped: no InferenceX tree at {repo}"]
    cmd = [sys.executable, "-m", "relpipe.pipeline.cli", "review", "--repo", str(repo)]

    def review() -> None:
        done = subprocess.run([*cmd, "--all-keys", "--json"], capture_output=True, check=False)
        if done.returncode not in (0, 1):
            raise SystemExit(f"review exited {done.returncode}: {done.stderr[-300:]!r}")

    def start() -> None:
        subprocess.run([sys.executable, "-c", "import relpipe.pipeline.cli"], check=True)

    cpu0 = _child_cpu()
    wall = best(review, 3)
    cpu = (_child_cpu() - cpu0) / 3
    ref = best(start, 3)
    verdict = "ok" if wall < TARGET_S else "MISS"
    return [
        f"- review --all-keys (208 keys, whole process): {wall:.2f} s wall (best of 3), "
        f"{cpu:.2f} s CPU; target < {TARGET_S:.0f} s: {verdict}",
        f"- reference, interpreter + import relpipe.pipeline.cli: {ref:.2f} s",
    ]
