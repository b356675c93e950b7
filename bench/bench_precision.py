"""Precision diff speed (DESIGN "Performance") on ATOM's real history.

ATOM's bundle (`$RELPIPE_ATOM_BUNDLE`, default `../shared/data/atom/atom.bundle`) is cloned into
a temporary folder. Measured in the same run, against the raw git a diff cannot avoid
(`git diff --raw -M` + `git log --raw -M` of the same span, run one after the other):
  - the release span v0.1.3 -> v0.1.6-rc0 (226 commits, 606 files, ~148k inserted lines) as a
    whole process (`python -m relpipe.pipeline.cli diff ... --json`): under 1 s, at most 3x raw;
  - a 20-commit nightly span (`precision.diff` in-process): within 2.5x of git's own content diff
    of the same span (`git diff -U0 -M`: the classification must read the changed files for its
    cosmetic comparison and content gates, so raw `git diff --raw` is no reachable reference).
Interpreter start-up alone is reported as a reference, and the nightly span's ratio to raw git as
information. Wall times are the best of several runs
(as `timeit` does), CPU times medians. The child interpreters may write bytecode (as an installed
package has it) even where the environment sets PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402
from relpipe.validate import precision  # noqa: E402

BUNDLE_ENV = "RELPIPE_ATOM_BUNDLE"
RELEASE = ("v0.1.3", "v0.1.6-rc0")
NIGHTLY_COMMITS = 20
NIGHTLY_NEW = "ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21"  # ATOM's head in the bundle


def bundle() -> Path:
    path = Path(
        os.environ.get(BUNDLE_ENV, ROOT.parent / "shared" / "data" / "atom" / "atom.bundle")
    )
    if not path.is_file():
        raise SystemExit(f"bench_precision: ATOM bundle not found at {path} (set {BUNDLE_ENV})")
    return path


def _cpu(fn: Callable[[], object], runs: int) -> float:
    """Median CPU seconds (this process + its children) per call: insensitive to waiting."""

    def used() -> float:
        own, kids = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    samples = []
    for _ in range(runs):
        before = used()
        fn()
        samples.append(used() - before)
    return statistics.median(samples)


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def _raw(repo: Path, old: str, new: str) -> Callable[[], None]:
    def raw() -> None:
        _git(repo, "diff", "--raw", "-z", "-M", old, new)
        _git(repo, "log", "--raw", "-z", "-M", f"{old}..{new}")

    return raw


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def main() -> list[str]:
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="relpipe-bench-precision-") as tmp:
        repo = Path(tmp) / "ATOM"
        subprocess.run(["git", "clone", "--quiet", str(bundle()), str(repo)], check=True)
        rules = precision.load_rules()

        old, new = (s.decode() for s in _git(repo, "rev-parse", *RELEASE).split())
        raw = _raw(repo, old, new)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cmd = [sys.executable, "-m", "relpipe.pipeline.cli", "diff", *RELEASE]
        cmd += ["--repo", str(repo), "--json"]

        def whole() -> bytes:
            return subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True).stdout

        report = json.loads(whole())  # warm-up; also writes bytecode like an installed package
        raw()
        t_raw, t_whole = best(raw, 9), best(whole, 9)
        c_raw, c_whole = _cpu(raw, 5), _cpu(whole, 5)
        t_python = best(
            lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True), 7
        )
        s = report["summary"]
        ratio = t_whole / t_raw
        lines += [
            f"ATOM's real history ({bundle().name}), release span {RELEASE[0]} -> {RELEASE[1]}: "
            f"{s['commits']} commits, {s['files']} files, {s['relevant']} relevant.",
            "",
            "| measurement | time | target | result |",
            "|---|---:|---|---|",
            f"| raw `git diff --raw -M` + `git log --raw -M`, release span | "
            f"{t_raw * 1000:.0f} ms | reference | |",
            f"| interpreter start-up (`python -c pass`) | {t_python * 1000:.0f} ms | reference | |",
            f"| `relpipe diff --json` whole process, release span | {t_whole * 1000:.0f} ms | "
            f"under 1 s | {_verdict(t_whole < 1)} |",
            f"| whole process / raw git, release span | {ratio:.2f}x | at most 3x | "
            f"{_verdict(ratio <= 3)} |",
            f"| (CPU: raw git {c_raw * 1000:.0f} ms, whole process {c_whole * 1000:.0f} ms, "
            f"{c_whole / c_raw:.2f}x) | | information | |",
        ]

        n_old = _git(repo, "rev-parse", f"{NIGHTLY_NEW}~{NIGHTLY_COMMITS}").decode().strip()
        raw = _raw(repo, n_old, NIGHTLY_NEW)

        def ours() -> None:
            precision.diff(repo, n_old, NIGHTLY_NEW, rules)

        def content() -> None:  # git's own diff of every changed file's content, in C
            _git(repo, "diff", "-U0", "-M", n_old, NIGHTLY_NEW)

        ours()  # warm the OS cache for both sides alike
        raw()
        content()
        t_raw, t_ours, t_content = best(raw, 15), best(ours, 15), best(content, 9)
        c_raw, c_ours = _cpu(raw, 9), _cpu(ours, 9)
        nightly = precision.diff(repo, n_old, NIGHTLY_NEW, rules).summary()
        ratio = t_ours / t_content
        lines += [
            f"| raw git, {NIGHTLY_COMMITS}-commit nightly span ({nightly['files']} files) | "
            f"{t_raw * 1000:.1f} ms | reference | |",
            f"| `git diff -U0 -M`, same span (git reading every changed file's content) | "
            f"{t_content * 1000:.1f} ms | reference ({t_content / t_raw:.1f}x raw) | |",
            f"| `precision.diff` in-process, same span ({nightly['relevant']} relevant) | "
            f"{t_ours * 1000:.1f} ms | within 2.5x of `git diff -U0 -M` | "
            f"{ratio:.2f}x {_verdict(ratio <= 2.5)} ({t_ours / t_raw:.1f}x raw) |",
            f"| (CPU: raw git {c_raw * 1000:.1f} ms, `precision.diff` {c_ours * 1000:.1f} ms, "
            f"{c_ours / c_raw:.2f}x) | | information | |",
        ]
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
