"""Precision diff speed (DESIGN "Performance"), on a synthetic repository of ATOM's size.

The repository (about 1,000 files in ATOM's layout, 1,000 squash commits with PR numbers) is
generated with one `git fast-import` run. Measured in the same run:
  - a 15-commit nightly pair: `validate.precision.diff` in-process vs the raw git it cannot avoid
    (`git diff --raw -M` + `git log --raw -M`, run sequentially); target within 2x;
  - a 600-file release pair as a whole process (`python -m relpipe.pipeline.cli diff ... --json`);
    target under 1 s. Interpreter start-up alone is reported as a reference.
Wall times are the best of several runs (as `timeit` does), CPU times medians. The child interpreters may write bytecode (as an installed package has it)
even where the environment sets PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relpipe.validate import precision  # noqa: E402

from bench.timing import best  # noqa: E402

FILES = 1000
COMMITS = 1000
RELEASE_COMMITS = 300  # the last 300 commits touch 2 distinct files each: a 600-file pair
NIGHTLY_COMMITS = 15
AREAS = [
    ("atom/models", 300),
    ("atom/model_ops", 150),
    ("atom/model_ops/attentions", 40),
    ("atom/quantization", 40),
    ("atom/model_loader", 20),
    ("atom/spec_decode", 30),
    ("atom/plugin/vllm", 30),
    ("atom/entrypoints", 40),
    ("tests", 200),
    ("docs", 100),
    ("recipes", 50),
]
TYPES = ["fix", "feat", "perf", "refactor", "[Fix]", "[Perf]", "docs", "test", "[feat](docker)"]


def _paths(rng: random.Random) -> list[str]:
    paths = [
        "atom/config.py",
        "atom/quant_spec.py",
        "atom/model_ops/linear.py",
        "atom/model_ops/layernorm.py",
        "atom/model_engine/model_runner.py",
    ]
    for area, count in AREAS:
        ext = ".md" if area == "docs" else ".py"
        paths += [f"{area}/mod_{i:03d}{ext}" for i in range(count)]
    rng.shuffle(paths)
    return paths[:FILES]


def _content(path: str, version: int, rng: random.Random) -> str:
    body = [f'"""{path} (synthetic, version {version})."""', "import torch", ""]
    for i in range(20):
        body += [f"def op_{i}(x):", f"    # step {i}", f"    return x * {rng.randint(1, 9)}", ""]
    return "\n".join(body) + "\n"


def _edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    i = rng.randrange(3, len(lines))
    if rng.random() < 0.3:  # a comment-only edit: cosmetic
        lines.insert(i, "# note")
    elif rng.random() < 0.2:
        lines.insert(i, 'kv_cache_dtype: str = "fp8"')
    else:
        lines.insert(i, f"y_{i} = {rng.randint(0, 99)}")
    return "\n".join(lines) + "\n"


def build(repo: Path, seed: int = 5) -> None:
    """A repository of FILES files and COMMITS commits, written by one `git fast-import`."""
    rng = random.Random(seed)
    paths = _paths(rng)
    state = {p: _content(p, 0, rng) for p in paths}
    out: list[bytes] = []

    def data(text: str) -> None:
        raw = text.encode()
        out.append(b"data %d\n" % len(raw) + raw + b"\n")

    def commit(n: int, subject: str, files: dict[str, str]) -> None:
        when = 1788220800 + 3600 * n
        out.append(
            f"commit refs/heads/main\nmark :{n + 1}\n"
            f"author Dev <dev@example.invalid> {when} +0000\n"
            f"committer GitHub <noreply@github.com> {when} +0000\n".encode()
        )
        data(subject + "\n")
        if n:
            out.append(f"from :{n}\n".encode())
        for path, text in files.items():
            out.append(f"M 100644 inline {path}\n".encode())
            data(text)
        out.append(b"\n")

    commit(0, "Initial import (#1)", state)
    release = rng.sample(paths, 2 * RELEASE_COMMITS)
    for n in range(1, COMMITS):
        if n >= COMMITS - RELEASE_COMMITS:
            k = n - (COMMITS - RELEASE_COMMITS)
            touched = release[2 * k : 2 * k + 2]
        else:
            touched = rng.sample(paths, rng.randint(1, 4))
        for path in touched:
            state[path] = _edit(state[path], rng)
        kind = rng.choice(TYPES)
        sep = " " if kind.startswith("[") else ": "
        commit(n, f"{kind}{sep}change {n} (#{2000 + n})", {p: state[p] for p in touched})
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(out), check=True
    )


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


def main() -> list[str]:
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="relpipe-bench-precision-") as tmp:
        repo = Path(tmp) / "atom"
        t0 = time.perf_counter()
        build(repo)
        built = time.perf_counter() - t0
        files = len(_git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
        lines += [
            f"Synthetic repository: {files} files, {COMMITS} commits, built in {built:.2f} s "
            "(git fast-import).",
            "",
        ]
        rules = precision.load_rules()

        old, new = f"HEAD~{NIGHTLY_COMMITS}", "HEAD"
        old_sha, new_sha = _git(repo, "rev-parse", old, new).decode().split()

        def raw() -> None:
            _git(repo, "diff", "--raw", "-z", "-M", old_sha, new_sha)
            _git(repo, "log", "--raw", "-z", "-M", f"{old_sha}..{new_sha}")

        def ours() -> None:
            precision.diff(repo, old_sha, new_sha, rules)

        ours()  # warm the OS cache for both sides alike
        raw()
        t_raw, t_ours = best(raw, 15), best(ours, 15)
        c_raw, c_ours = _cpu(raw, 9), _cpu(ours, 9)
        nightly = precision.diff(repo, old_sha, new_sha, rules).summary()
        ratio = t_ours / t_raw
        lines += [
            "| measurement | time | target | result |",
            "|---|---:|---|---|",
            f"| raw `git diff --raw` + `git log --raw`, {NIGHTLY_COMMITS}-commit pair "
            f"({nightly['files']} files) | {t_raw * 1000:.1f} ms | reference | |",
            f"| `precision.diff` in-process, same pair ({nightly['relevant']} relevant, "
            f"{nightly['cosmetic']} cosmetic) | {t_ours * 1000:.1f} ms | within 2x | "
            f"{ratio:.2f}x {'ok' if ratio <= 2 else 'MISS'} |",
            f"| (CPU time: raw git {c_raw * 1000:.1f} ms, `precision.diff` {c_ours * 1000:.1f} ms, "
            f"{c_ours / c_raw:.2f}x) | | information | |",
        ]

        rel_old = f"HEAD~{RELEASE_COMMITS}"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cmd = [
            sys.executable,
            "-m",
            "relpipe.pipeline.cli",
            "diff",
            rel_old,
            "HEAD",
            "--repo",
            str(repo),
            "--json",
        ]

        def whole() -> bytes:
            return subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True).stdout

        report = json.loads(whole())  # warm-up; also writes bytecode like an installed package
        t_whole = best(whole, 7)
        c_whole = _cpu(whole, 5)
        t_python = best(
            lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True), 7
        )
        n = report["summary"]["files"]
        lines += [
            f"| interpreter start-up (`python -c pass`) | {t_python * 1000:.0f} ms | reference | |",
            f"| `relpipe diff --json` whole process, {RELEASE_COMMITS}-commit pair ({n} files, "
            f"{report['summary']['relevant']} relevant) | {t_whole * 1000:.0f} ms | under 1 s | "
            f"{'ok' if t_whole < 1 and n >= 600 else 'MISS'} |",
            f"| (CPU time of that process: {c_whole * 1000:.0f} ms) | | information | |",
        ]
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
