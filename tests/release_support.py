"""What the real-tree release tests share: the quick run options, a unified diff's lines, and the
git copy of the real tree with the environment its releases run in."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import corpus
from qualify_support import QUICK as QUALIFY_QUICK
from qualify_support import run_env
from support import git

REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
PR = 2500  # the release PR: its entry links /pull/2500, as InferenceX's PR gate expects
MASTER = "configs/amd-master.yaml"
GATE = Path(__file__).resolve().parent / "oracles" / "changelog_gate.py"
# Tiny grids for the CPU interpreter: the qualification tests' QUICK, with a longer timeout.
QUICK = (*QUALIFY_QUICK[:-1], "300")


def diff_files(diff: str) -> dict[str, tuple[list[str], list[str]]]:
    """path -> (removed lines, added lines) of a unified diff."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = re.sub(r"^\+\+\+ (?:b/)?", "", line).split("\t")[0]
            out[current] = ([], [])
        elif line.startswith("--- ") or current is None:
            continue
        elif line.startswith("-"):
            out[current][0].append(line[1:])
        elif line.startswith("+"):
            out[current][1].append(line[1:])
    return out


def tree_world(
    tree: Path, base: Path, registry: str, docker_host: str
) -> tuple[Path, dict[str, str]]:
    """A git copy of the InferenceX tree under `base`, and the environment a release runs in
    there: the loopback registry as docker.io's mirror, the interpreter for Triton, a TMPDIR of
    its own."""
    repo = base / "InferenceX"
    shutil.copytree(tree, repo)
    (repo / ".gitignore").write_text(".relpipe/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "InferenceX at 843c6254f")
    return repo, run_env(registry, docker_host, base / "tmp")


def mirror_copy(registry: str, source: str, target: str) -> None:
    """Push `source` (registry-local) to `target` (a canonical name) on the loopback mirror,
    digests preserved (skopeo)."""
    subprocess.run(
        ["skopeo", "copy", "--quiet", "--preserve-digests", "--src-tls-verify=false"]
        + ["--dest-tls-verify=false", f"docker://{registry}/{source}"]
        + [f"docker://{registry}/{target.removeprefix('docker.io/')}"],
        check=True,
        capture_output=True,
        timeout=300,
    )


def inferencex_accepts(base: bytes, head: bytes, masters: list[Path]) -> tuple[bool, str]:
    """InferenceX's own changelog validator (its oracle environment) on base -> head, PR mode."""
    payload = [
        {
            "base": base64.b64encode(base).decode(),
            "head": base64.b64encode(head).decode(),
            "pr": PR,
            "all_evals": False,
            "evals_only": False,
            "resolve": True,
        }
    ]
    done = corpus.run_oracle(GATE, *map(str, masters), input=json.dumps(payload))
    assert done.returncode == 0, done.stderr[-2000:]
    [(ok, why)] = json.loads(done.stdout)
    return ok, why
