"""Qualification of two nightlies built from ATOM's real history (`relpipe fixtures build
--engine-repo`): C5 and the report name the real ATOM commits and PRs between them, each with its
precision category. Engine settings are the tiny ones of test_qualify.py; ATOM's own ops cannot be
bound against the fixture's AITER stub, so smoke and evals fail closed (not what is asserted)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from relpipe.images.build import build_fixtures
from relpipe.validate import precision

pytestmark = [pytest.mark.services, pytest.mark.slow]
HEAD = "ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21"
QUICK = ["--max-batch", "1", "--max-new", "2", "--prompt-bytes", "8", "--kv-dtypes", "fp32"]


def test_c5_and_the_report_name_the_real_atom_prs_with_their_categories(
    atom_repo: Path, registry: str, docker_host: str, fixture_cache: Path, tmp_path: Path
) -> None:
    old, new = build_fixtures(
        registry,
        f"relpipe-test-real/atom-{uuid.uuid4().hex[:8]}",
        cache_dir=fixture_cache,
        engine_repo=atom_repo,
        engine_commits=[f"{HEAD}~3", HEAD],
    )
    env = dict(
        os.environ,
        RELPIPE_REGISTRY=registry,
        DOCKER_HOST=docker_host,
        TRITON_INTERPRET="1",
        TMPDIR=str(tmp_path),
    )
    state = tmp_path / "state"
    proc = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "qualify", new.tagged]
        + ["--baseline", old.tagged, "--state", str(state), "--timeout", "180", "--json", *QUICK],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    c5 = next(c for c in report["verdict"]["checks"] if c["id"] == "C5")
    assert c5["status"] == "WARN"

    # What the precision diff of the real history says, computed here from the repository.
    expected = precision.diff(atom_repo, old.engine_commit, new.engine_commit)
    relevant = expected.relevant_commits()
    assert relevant, "the span has precision-relevant commits"
    by_sha = {c.sha: c for c in expected.commits}
    for sha in relevant:
        commit = by_sha[sha]
        pr = re.search(r"\(#(\d+)\)", commit.subject)
        assert pr is not None, commit.subject
        assert f"{sha[:9]} " in c5["reason"] and f"(#{pr.group(1)})" in c5["reason"]
    for category in {f.category for f in expected.files if f.verdict == "relevant"}:
        assert category in c5["reason"]

    # The report (its Markdown) names each relevant file with its category and the PRs.
    (run,) = (state / "runs").iterdir()
    notes = (run / "report.md").read_text()
    for f in expected.files:
        if f.verdict != "relevant":
            continue
        row = next(line for line in notes.splitlines() if line.startswith(f"| {_md(f.path)} "))
        assert f"\\[{f.category}\\]" in row or f"[{f.category}]" in row
        for sha in f.commits:
            pr = by_sha[sha].pr
            assert pr is None or f"#{pr}" in row
    assert "ROCm/ATOM" in notes or "#1987" in notes


def _md(path: str) -> str:
    return path.replace("_", "\\_")
