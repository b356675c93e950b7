"""`relpipe review` on the real InferenceX tree: `--all-keys` under 10 s, and the median review
of a real PR change (an image bump with its changelog entry, the pre-commit view: the working
tree against HEAD) under 1 s, both as whole processes.

The issue's target (2 cores): every config key of the real masters resolved to its launch path
(scripts, helpers, runners, srt-slurm recipes with inheritance) and every fast check run, as one
process (`python -m relpipe.pipeline.cli review --all-keys --json`). Interpreter start-up plus
`import relpipe.pipeline.cli` is the reference in the same run. Wall time is the best of 3 runs,
CPU time (user + sys of the child) is reported too.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402

TARGET_S = 10.0
CHANGE_TARGET_S = 1.0


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
    change = _change_median(repo)
    verdict_change = "ok" if change < CHANGE_TARGET_S else "MISS"
    return [
        f"- review --all-keys (208 keys, whole process): {wall:.2f} s wall (best of 3), "
        f"{cpu:.2f} s CPU; target < {TARGET_S:.0f} s: {verdict}",
        f"- review --fast of a PR change (image bump + changelog entry, whole process): "
        f"{change:.2f} s median of 5; target < {CHANGE_TARGET_S:.0f} s: {verdict_change}",
        f"- reference, interpreter + import relpipe.pipeline.cli: {ref:.2f} s",
    ]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _change_median(tree: Path) -> float:
    """A git copy of the tree with a staged PR change; the hook's view of it, 5 times."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "ix"
        shutil.copytree(tree, repo, symlinks=True)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base")
        master = repo / "configs/nvidia-master.yaml"
        lines = master.read_text().splitlines(keepends=True)
        key = lines[0].rstrip().rstrip(":")
        lines[1] = lines[1].rstrip("\n") + "-bump\n"
        master.write_text("".join(lines))
        log = repo / "perf-changelog.yaml"
        log.write_text(
            log.read_text().rstrip("\n") + f"\n\n- config-keys:\n    - {key}\n  description:\n"
            '    - "Bump the image"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n'
        )
        cmd = [sys.executable, "-m", "relpipe.pipeline.cli", "review", "--repo", str(repo)]
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            done = subprocess.run([*cmd, "--fast", "--json"], capture_output=True, check=False)
            times.append(time.perf_counter() - t0)
            if done.returncode not in (0, 1):
                raise SystemExit(f"review exited {done.returncode}: {done.stderr[-300:]!r}")
        return statistics.median(times)
