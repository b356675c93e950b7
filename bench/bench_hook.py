"""validate_perf_changelog speed (DESIGN.md "Performance"; issue 2 targets), whole processes.

Measured in one run, each as the best of several (the minimum is the least noisy estimate of
a process's cost on a shared machine):
- the hook (the venv's console script) for the real changelog + 1 appended entry, base -> head
  from git refs in a temp repository with the real masters (config keys resolved);
- reference (o): InferenceX's own strict validator on the same base and head, whole process, in
  its own Python (pydantic, PyYAML): `parse_changelog` of both, `compare_entries`,
  `validate_raw_change` and process_changelog's config-key resolution, imported from the real
  tree by tests/oracles/changelog_gate.py (issue 12 target: hook <= (o)/15);
- the same with an append-only entry that adds a point (information: it reads and compares the
  masters at both refs);
- reference (a): plain PyYAML `SafeLoader` full parse of base and head in one process;
- reference (b): `python -c pass`;
- reference (f): the floor of any Python hook reading both versions from git (the interpreter,
  `re`, `subprocess` and one `git cat-file --batch`); target hook <= 2 x (f) (issue 31: it replaces
  issue 22's 3 x (b), which no Python hook can meet: (f) alone is about 2.8 x (b));
- a 20,000-entry synthetic changelog: `--full` audit and base -> head with one appended entry.
Every command gets one untimed warm-up run (bytecode caches written, files in the page cache).
- a 9 MB changelog of entries in a non-house style (2-space items, comments, `yes`): `--full`
  whole process, wall time (best of 3) and peak memory (largest of the 3) (issue 12 target:
  < 2 s and < 300 MB).
- the hook with its defaults in a 2026-10 layout repository (`inferencex-e2e/`), PR #3750's
  base -> head from `tree-2026-10/_derived/`, against (e): the 2026-10 validator's library call
  (`parse_changelog` x2, `compare_entries`, `validate_raw_change`) timed inside its process
  (target: hook <= (e)/15).
Targets: hook <= (o)/15, hook <= (e)/15, hook <= (a)/10, hook <= 2 x (f), 20k entries < 0.5 s.
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

from relpipe.changelog.entry import Entry, render  # noqa: E402

CORPUS = Path(os.environ.get("RELPIPE_CORPUS", ROOT.parent / "shared" / "data" / "inferencex"))
REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
RUNS = 9
APPENDED = Entry(
    config_keys=("dsr1-fp4-mi355x-atom",),
    description=("Bump ATOM to rocm/atom-dev:nightly_202610070333",),
    pr_link=f"{REPO_URL}/pull/2500",
)
# Measured as installed code runs: with bytecode caches (pip and pre-commit compile them at
# install; PYTHONDONTWRITEBYTECODE would make every run recompile the sources, ~100 ms).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@b",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@b",
    )
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def _time(
    cmd: list[str], cwd: Path, expect: int = 0, env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU user+sys incl. child processes such as git), seconds.

    CPU time is reported next to wall time because on a shared machine it is the steadier one;
    targets are judged on wall time, as DESIGN.md states them."""
    samples, cpu = [], []
    subprocess.run(
        cmd,
        cwd=cwd,
        env=env or ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )  # warm-up
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            cmd,
            cwd=cwd,
            env=env or ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        samples.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != expect:
            raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {done.stdout.decode()[-400:]}")
    return min(samples), statistics.median(samples), min(cpu)


def _hook() -> list[str]:
    script = Path(sys.executable).parent / "validate_perf_changelog"
    return [str(script)] if script.exists() else [sys.executable, "-m", "relpipe.validate.gate.cli"]


def _repo(tmp: Path, name: str, base: bytes, appended: Entry, masters: bool) -> Path:
    repo = tmp / name
    repo.mkdir()
    (repo / "perf-changelog.yaml").write_bytes(base)
    if masters:
        (repo / "configs").mkdir()
        for master in ("amd-master.yaml", "nvidia-master.yaml"):
            shutil.copy(CORPUS / master, repo / "configs" / master)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "remote", "add", "origin", REPO_URL + ".git")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "perf-changelog.yaml").write_bytes(base + b"\n" + render(appended).encode())
    _git(repo, "commit", "-q", "-am", "append")
    return repo


def _append_only(tmp: Path, base: bytes) -> Path:
    """A repository whose head appends an append-only entry and the point it adds (a
    concurrency on the TP8 curve of a real AMD key): the hook reads the masters at both refs."""
    entry = Entry(
        config_keys=("dsr1-fp4-mi355x-atom",),
        description=("Add concurrency 8 to the TP8 curve",),
        pr_link=f"{REPO_URL}/pull/2501",
        append_only=True,
    )
    repo = _repo(tmp, "append-only", base, entry, masters=True)
    master = repo / "configs" / "amd-master.yaml"
    old = "{ tp: 8, ep: 1, conc-start: 4, conc-end: 4 }"
    master.write_text(master.read_text().replace(old, "{ tp: 8, ep: 1, conc-list: [4, 8] }", 1))
    _git(repo, "commit", "-q", "--amend", "-am", "append-only")
    return repo


def _synthetic(n: int) -> bytes:
    parts = []
    for i in range(n):
        parts.append(
            render(
                Entry(
                    config_keys=(f"dsr1-fp8-mi355x-atom-{i % 50}",)
                    + (("gptoss-*",) if i % 3 == 0 else ()),
                    description=(
                        f"Bump image to rocm/atom-dev:nightly_2026{i:08d}",
                        '精度不变; "quoted" text',
                    )
                    if i % 2
                    else (f"Update run {i}",),
                    pr_link=f"{REPO_URL}/pull/{1000 + i}",
                    scenario_type=("agentic-coding",) if i % 5 == 0 else None,
                    evals_only=i % 11 == 0,
                )
            )
        )
    return "\n".join(parts).encode()


ORACLE_ENV = dict(ENV)
PYYAML_BOTH = (
    "import yaml\nfor f in ('base.yaml', 'head.yaml'):\n"
    "    yaml.load(open(f, 'rb'), Loader=yaml.SafeLoader)"
)
# What any Python hook that reads the base and the head from git pays before it checks a byte:
# the interpreter, `re` and `subprocess` (and what they load), and one git process for both blobs.
FLOOR = (
    "import re, subprocess\n"
    "subprocess.run(['git', 'cat-file', '--batch'], capture_output=True, check=True,\n"
    "    input=b'HEAD~1:perf-changelog.yaml\\nHEAD:perf-changelog.yaml\\n')"
)


def _oracle(tmp: Path, base: bytes, head: bytes) -> list[str] | None:
    """The command running InferenceX's strict validator on base -> head (None: no corpus)."""
    import base64
    import json

    sys.path.insert(0, str(ROOT / "tests"))
    import corpus

    tree = CORPUS / "tree"
    if not (tree / "utils" / "validate_perf_changelog.py").is_file():
        return None
    case = {
        "base": base64.b64encode(base).decode(),
        "head": base64.b64encode(head).decode(),
        "pr": None,
        "all_evals": False,
        "evals_only": False,
        "resolve": True,
    }
    (tmp / "case.json").write_text(json.dumps([case]))
    utils = tree / "utils"
    ORACLE_ENV["PYTHONPATH"] = os.pathsep.join([str(utils), str(utils / "matrix_logic")])
    masters = sorted(str(p) for p in (tree / "configs").glob("*-master.yaml"))
    script = f"import sys; sys.stdin = open({str(tmp / 'case.json')!r}); " + (
        f"sys.argv = ['changelog_gate', *{masters!r}]; "
        f"exec(compile(open({str(ROOT / 'tests/oracles/changelog_gate.py')!r}).read(), "
        "'changelog_gate.py', 'exec'))"
    )
    return [corpus.oracle_python(), "-c", script]


E2E = CORPUS / "tree-2026-10"
# The 2026-10 validator's library call as its tree's SOURCE.md makes it, timed in its own process
# (interpreter and import excluded), best of RUNS.
E2E_CALL = """
import sys, time
from pathlib import Path
from infx.workflows.validate_perf_changelog import (
    compare_entries, parse_changelog, validate_raw_change)
b = Path(sys.argv[1]).read_bytes(); h = Path(sys.argv[2]).read_bytes()
walls, cpus = [], []
for _ in range(int(sys.argv[3])):
    t, c = time.perf_counter(), time.process_time()
    adds, corr = compare_entries(parse_changelog(b, "base"), parse_changelog(h, "head"), None)
    validate_raw_change(b, h, len(adds), corr)
    walls.append(time.perf_counter() - t)
    cpus.append(time.process_time() - c)
print(min(walls), sorted(walls)[len(walls) // 2], min(cpus))
"""


def _e2e(tmp: Path) -> list[str]:
    """The hook with its defaults in a 2026-10 layout repository (the masters under
    inferencex-e2e/configs, PR #3750's base -> head) against the 2026-10 validator's library
    call on the same bytes: target hook <= call / 15, both measured in this run."""
    derived = E2E / "_derived"
    if not (derived / "perf-changelog.head-3750.yaml").is_file():
        return ["", "(2026-10 tree not found: the 2026-10 ratio is not measured)"]
    sys.path.insert(0, str(ROOT / "tests"))
    import corpus

    base = (derived / "perf-changelog.base-before-3750.yaml").read_bytes()
    head = (derived / "perf-changelog.head-3750.yaml").read_bytes()
    repo = tmp / "e2e"
    (repo / "inferencex-e2e" / "configs").mkdir(parents=True)
    for master in (E2E / "inferencex-e2e" / "configs").glob("*.yaml"):
        shutil.copy(master, repo / "inferencex-e2e" / "configs" / master.name)
    (repo / "inferencex-e2e" / "perf-changelog.yaml").write_bytes(base)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "remote", "add", "origin", REPO_URL + ".git")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "inferencex-e2e" / "perf-changelog.yaml").write_bytes(head)
    _git(repo, "add", "-A")  # the hook's default: HEAD -> index, the changelog found by layout
    hook = _time(_hook(), repo, env={**ENV, "RELPIPE_HOOK_CACHE": str(tmp / "bases")})
    (tmp / "e2e-base.yaml").write_bytes(base)
    (tmp / "e2e-head.yaml").write_bytes(head)
    env = {**ENV, "PYTHONPATH": str(E2E / "inferencex-e2e"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [corpus.oracle_python(), "-c", E2E_CALL, str(tmp / "e2e-base.yaml"),
         str(tmp / "e2e-head.yaml"), "3"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    call, median, cpu = (float(x) for x in done.stdout.split()[-3:])
    return [
        _row(
            "hook, defaults, 2026-10 layout: 1,088 entries + PR #3750's (HEAD -> index)",
            *hook,
            f"<= (e)/15 = {call * 1000 / 15:.0f} ms",
            hook[0] <= call / 15,
        ),
        _row(
            "(e) 2026-10 validator's library call, same bytes", call, median, cpu, "reference", None
        ),
        "",
        f"hook (2026-10) / (e) = 1/{call / hook[0]:.1f} wall, 1/{cpu / hook[2]:.1f} CPU (whole "
        "hook process, git included, against the validator's library call alone)",
    ]


def _nonstandard(size: int) -> bytes:
    """`size` bytes of valid entries that miss the house style (the grammar of its variants
    proves them; each has four style warnings, printed)."""
    one = (
        "- config-keys:\n  - dsr1-fp4-mi355x-atom  # key\n  description:\n"
        "  - Bump the image\n  - 'quoted'\n  pr-link: {REPO_URL}/pull/{n}\n"
        "  evals-only: yes\n"
    )
    parts, total, n = [], 0, 1
    while total < size:
        text = one.format(REPO_URL=REPO_URL, n=n)
        parts.append(text)
        total += len(text) + 1
        n += 1
    return "\n".join(parts).encode()


def _peak(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds) of one run of `cmd`, measured by a fresh child."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
        "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, use.ru_maxrss / 1024, use.ru_utime + use.ru_stime)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *cmd], cwd=cwd, env=ENV, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def _row(name: str, best: float, median: float, cpu: float, target: str, ok: bool | None) -> str:
    verdict = "" if ok is None else ("ok" if ok else "MISS")
    times = f"{best * 1000:.0f} | {median * 1000:.0f} | {cpu * 1000:.0f}"
    return f"| {name} | {times} | {target} | {verdict} |"


def main() -> list[str]:
    lines = [
        "| measurement | best ms | median ms | CPU ms | target | |",
        "|---|---:|---:|---:|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp_name:
        tmp = Path(tmp_name)
        summary = _real_changelog(tmp, lines)
        lines.extend(_large_files(tmp))
        lines.extend(_e2e(tmp))
    lines.append("")
    lines.extend(summary)
    return lines


def _real_changelog(tmp: Path, lines: list[str]) -> list[str]:
    """The hook on the real 2026-08 changelog + 1 entry against references (o), (a), (b), (f);
    its rows go to `lines`; returns the summary lines."""
    base = (CORPUS / "perf-changelog.yaml").read_bytes()
    repo = _repo(tmp, "corpus", base, APPENDED, masters=True)
    hook_cmd = [*_hook(), "--base-ref", "HEAD~1", "--head-ref", "HEAD"]
    # The usual commit: its base was the previous commit's head, already checked then
    # (validate.basecache remembers it; the warm-up run of _time plays that commit). The
    # first commit on a base the hook has never seen scans it whole: measured as well.
    cached = {**ENV, "RELPIPE_HOOK_CACHE": str(tmp / "bases")}
    hook = _time(hook_cmd, repo, env=cached)
    cold = _time(hook_cmd, repo, env={**ENV, "RELPIPE_HOOK_CACHE": "off"})
    append_only = _time(hook_cmd, _append_only(tmp, base), env=cached)
    (tmp / "base.yaml").write_bytes(base)
    (tmp / "head.yaml").write_bytes((repo / "perf-changelog.yaml").read_bytes())
    ref_a = _time([sys.executable, "-c", PYYAML_BOTH], tmp)
    ref_b = _time([sys.executable, "-c", "pass"], tmp)
    ref_f = _time([sys.executable, "-c", FLOOR], repo)
    oracle_cmd = _oracle(tmp, base, (repo / "perf-changelog.yaml").read_bytes())
    ref_o = _time(oracle_cmd, tmp, env=ORACLE_ENV) if oracle_cmd else None
    name = "hook, 772 entries + 1 appended (base -> head refs, keys resolved)"
    if ref_o is not None:
        target_o = f"<= (o)/15 = {ref_o[0] * 1000 / 15:.0f} ms"
        lines.append(_row(name, *hook, target_o, hook[0] <= ref_o[0] / 15))
    target_a = f"<= (a)/10 = {ref_a[0] * 100:.0f} ms"
    lines += [
        _row(name, *hook, target_a, hook[0] <= ref_a[0] / 10),
        _row(
            "same, first commit on a base never checked before (no base cache)",
            *cold,
            "information",
            None,
        ),
        _row(
            "same with an append-only entry adding a point (masters read at both refs; "
            "scope and generated-points checks)",
            *append_only,
            "information",
            None,
        ),
        _row("", *hook, f"<= 2 x (f) = {ref_f[0] * 2000:.0f} ms", hook[0] <= 2 * ref_f[0]),
        _row(
            "(a) PyYAML SafeLoader full parse of base + head, one process",
            *ref_a,
            "reference",
            None,
        ),
        _row("(b) python -c pass", *ref_b, "reference", None),
        _row(
            "(f) floor: `import re, subprocess` and one `git cat-file --batch` of base + head",
            *ref_f,
            f"reference: (f) = {ref_f[0] / ref_b[0]:.1f} x (b); "
            f"hook = {hook[0] / ref_f[0]:.1f} x (f)",
            None,
        ),
    ]
    if ref_o is not None:
        lines.append(
            _row("(o) InferenceX's strict validator, same inputs", *ref_o, "reference", None)
        )
    summary = []
    if ref_o is not None:
        summary.append(f"hook / (o) = 1/{ref_o[0] / hook[0]:.1f} (InferenceX's strict validator)")
    summary.append(
        f"hook / (a) = 1/{ref_a[0] / hook[0]:.1f}; hook / (b) = {hook[0] / ref_b[0]:.2f}x "
        f"(best of {RUNS} whole-process runs each, same run)"
    )
    return summary


def _large_files(tmp: Path) -> list[str]:
    """20,000 synthetic entries (--full and base -> head) and 9 MB of non-house-style entries."""
    big = _synthetic(20_000)
    repo20k = _repo(tmp, "synthetic", big, APPENDED, masters=False)
    full = _time([*_hook(), "--full"], repo20k)
    diff = _time(
        [*_hook(), "--base-ref", "HEAD~1", "--head-ref", "HEAD", "--skip-config-keys"], repo20k
    )
    size = len(big) / 1e6
    odd = tmp / "nonstandard"
    odd.mkdir()
    (odd / "perf-changelog.yaml").write_bytes(_nonstandard(9 * 1024 * 1024))
    runs = [_peak([*_hook(), "--full", "--repo-url", REPO_URL], odd) for _ in range(3)]
    walls = [run[0] for run in runs]
    wall, peak = min(walls), max(run[1] for run in runs)
    return [
        _row(
            f"20,000 synthetic entries ({size:.1f} MB), --full audit",
            *full,
            "< 500 ms",
            full[0] < 0.5,
        ),
        _row("20,000 synthetic entries + 1, base -> head", *diff, "< 500 ms", diff[0] < 0.5),
        _row(
            "9 MB of non-house-style entries, --full (best of 3; peak RSS "
            f"{peak:.0f} MB, target < 300 MB)",
            wall,
            statistics.median(walls),
            min(run[2] for run in runs),
            "< 2000 ms, < 300 MB",
            wall < 2 and peak < 300,
        ),
    ]


if __name__ == "__main__":
    print("\n".join(main()))
