"""A release of N keys on one image costs at most one qualification of the image plus the keys'
points (DESIGN.md, Performance), for N = 1, 2, 4.

Real data: a git copy of InferenceX's 2026-08 tree, whose six `dsv4-*-vllm*` keys run one vLLM
nightly (`vllm/vllm-openai-rocm:nightly-09663abde...`), released to a newer real nightly; both are
fixture nightlies with vLLM's layout in the loopback registry (a mirror of docker.io). Measured as
whole processes, each release cold (a fresh state folder: nothing cached):

* Q: `relpipe qualify IMAGE --config-key K1`, cold: one qualification of the image plus K1's points;
* P_k: `relpipe qualify IMAGE --config-key Kk` in Q's state (the image's stages are cache hits):
  what key k adds (its points, golden AL, precision scope, reports);
* R_N: `relpipe release --dry-run` of K1..KN, cold.

Target: R_N <= Q + P_2 + ... + P_N, with a 25% allowance for the release's own work (staging,
the hook, notes and their checks, the reports of every key and of the release). The image stages
(pull, probe, smoke, the baseline probe) must run once per release, whatever N.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from qualify_support import QUICK as TESTS_QUICK  # noqa: E402

QUICK = [*TESTS_QUICK[:-1], "300"]
CORPUS = Path(os.environ.get("RELPIPE_CORPUS", ROOT.parent / "shared" / "data" / "inferencex"))
ALLOWANCE = 1.25
KEYS = (
    "dsv4-fp8-mi300x-vllm",
    "dsv4-fp8-mi300x-vllm-mtp",
    "dsv4-fp4-mi355x-vllm",
    "dsv4-fp4-mi355x-vllm-mtp",
)
OLD = ("nightly-09663abde0f50944a8d5ea30120666024b503faa", "2026-07-02T06:00:00Z")
NEW = ("nightly-0ba2aa35a81dcc3246b26291368b53fa2389c7d7", "2026-07-26T06:00:00Z")
IMAGE_STAGES = {"pull", "probe", "smoke", "probe baseline"}


def _run(args: list[str], repo: Path, env: dict[str, str]) -> tuple[float, dict]:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", *args, "--json", *QUICK],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"relpipe {args[0]} exited {proc.returncode}: {proc.stderr[-400:]}")
    return elapsed, json.loads(proc.stdout)


def main() -> list[str]:
    from relpipe.images import family_fixtures as ff
    from relpipe.pipeline.demo import mirror_env

    registry = os.environ.get("RELPIPE_REGISTRY")
    if not registry or not os.environ.get("DOCKER_HOST"):
        return ["MISS: bench_release_keys needs RELPIPE_REGISTRY and DOCKER_HOST (`nox -s bench`)"]
    tree = CORPUS / "tree"
    if not (tree / "configs" / "amd-master.yaml").is_file():
        return [f"MISS: bench_release_keys needs the InferenceX tree at {tree} (RELPIPE_CORPUS)"]
    nightlies = [
        ff.EngineNightly(tag=t, created=c, commits=n) for (t, c), n in ((OLD, 2), (NEW, 4))
    ]
    cache = ROOT / ".relpipe" / "bench" / "fixtures"
    ff.build_engine_fixtures(registry, "vllm", nightlies, cache_dir=cache)
    image = f"vllm/vllm-openai-rocm:{NEW[0]}"
    with tempfile.TemporaryDirectory(prefix="relpipe-bench-keys-") as tmp:
        repo = Path(tmp) / "InferenceX"
        shutil.copytree(tree, repo)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
            subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
        env = dict(
            os.environ,
            TRITON_INTERPRET="1",
            RELPIPE_STATE="",
            TMPDIR=tmp,
            GIT_AUTHOR_NAME="bench",
            GIT_AUTHOR_EMAIL="bench@example.invalid",
            **mirror_env(registry),
        )
        state = Path(tmp) / "state-q"
        q, _ = _run(["qualify", image, "--config-key", KEYS[0], "--state", str(state)], repo, env)
        extra = [
            _run(["qualify", image, "--config-key", k, "--state", str(state)], repo, env)[0]
            for k in KEYS[1:]
        ]
        rows, missed = [], 0
        for n in (1, 2, 4):
            keyed = [a for k in KEYS[:n] for a in ("--config-key", k)]
            fresh = Path(tmp) / f"state-r{n}"
            r, doc = _run(
                ["release", *keyed, "--image", image, "--pr-number", "2500"]
                + ["--repo-url", "https://github.com/SemiAnalysisAI/InferenceX"]
                + ["--dry-run", "--state", str(fresh)],
                repo,
                env,
            )
            ran = [set(k["ran"]) & IMAGE_STAGES for k in doc["release"]["keys"]]
            once = sum(1 for stages in ran if stages) == 1
            budget = q + sum(extra[: n - 1])
            ok = r <= ALLOWANCE * budget and once
            missed += not ok
            rows.append(
                f"| {n} | {r:.1f} | {budget:.1f} | {r / budget:.2f} | "
                f"{'once' if once else 'MORE THAN ONCE'} | {'ok' if ok else 'MISS'} |"
            )
    return [
        f"Q (cold qualification of the image for {KEYS[0]}): {q:.1f} s; what each further key "
        f"adds (P_k, image cached): {', '.join(f'{p:.1f}' for p in extra)} s",
        "",
        "| N keys | release, cold (s) | Q + P_2..P_N (s) | ratio | image stages ran | target |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"target: release <= {ALLOWANCE:g} x (Q + P_2..P_N) and the image qualified once: "
        + ("ok" if not missed else f"MISS ({missed})"),
    ]


if __name__ == "__main__":
    print("\n".join(main()))
