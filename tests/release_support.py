"""What the real-tree release tests share: the quick run options and a unified diff's lines."""

from __future__ import annotations

import re

REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
PR = 2500  # the release PR: its entry links /pull/2500, as InferenceX's PR gate expects
MASTER = "configs/amd-master.yaml"
# Tiny grids for the CPU interpreter (tests/pipeline/test_qualify.py's QUICK, with a timeout).
QUICK = (
    "--max-batch",
    "1",
    "--max-new",
    "2",
    "--prompt-bytes",
    "8",
    "--kv-dtypes",
    "fp32",
    "--timeout",
    "300",
)


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
