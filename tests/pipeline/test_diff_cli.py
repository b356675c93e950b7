"""`relpipe diff` end to end: fixture engine histories (the ones fixture nightlies carry), as a
whole process, through a file:// URL, and out of a real fixture image on dockerd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relpipe.images import build
from relpipe.images import fixture_repo as fx
from relpipe.pipeline.commands import diff as diff_cmd

ROOT = Path(__file__).resolve().parents[2]


def _write(repo_build: build.RepoBuild, root: Path, dest: str) -> Path:
    """Lay a fixture repository (worktree + .git) out on disk, as the image layer would."""
    for entry in repo_build.entries:
        path = root / entry.path.lstrip("/")
        if entry.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entry.data or b"")
    return root / dest.lstrip("/")


class Fixture:
    def __init__(self, root: Path) -> None:
        builds = [
            build.build_repo(fx.ATOM_HISTORY, fx.atom_commits(i, "good"), "/app/ATOM")
            for i in range(4)
        ]
        self.versions = [b.version for b in builds]
        self.commits = [b.commit for b in builds]
        self.atom = _write(builds[-1], root, "/app/ATOM")
        aiter = build.build_repo(fx.AITER_HISTORY, fx.AITER_COMMITS, "/app/aiter-test")
        self.aiter = _write(aiter, root, "/app/aiter-test")


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return Fixture(tmp_path_factory.mktemp("fixture"))


def relpipe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline.cli", "diff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_json_names_the_precision_commits_and_the_watch_evidence(fixture: Fixture) -> None:
    # nightly 2 -> 3 of the fixture: rms_norm numerics, kv-cache dtype default, a linear.py comment.
    proc = relpipe(fixture.versions[1], fixture.versions[2], "--repo", str(fixture.atom), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["old"] == fixture.commits[1] and report["new"] == fixture.commits[2]
    assert report["ancestor"] is True
    files = {f["path"]: f for f in report["files"]}
    assert (
        files["atom/model_ops/layernorm.py"]["verdict"],
        files["atom/model_ops/layernorm.py"]["category"],
    ) == ("relevant", "norm")
    assert (files["atom/config.py"]["verdict"], files["atom/config.py"]["category"]) == (
        "relevant",
        "kv-cache",
    )
    assert files["atom/model_ops/linear.py"]["verdict"] == "cosmetic"
    prs = {c["pr"]: c["precision"] for c in report["commits"]}
    assert prs == {2479: ["norm"], 2483: ["kv-cache"], 2485: []}
    assert report["summary"]["relevant"] == 2 and report["summary"]["cosmetic"] == 1
    watch = {w["label"]: w["state"] for w in report["watch"]}
    assert watch == {
        "atom/models/eagle3_llama.py": "unchanged",
        "atom/model_ops/linear.py": "cosmetic",
        "atom/quant_spec.py": "unchanged",
        "model loader": "unchanged",
        "atom/model_ops/layernorm.py": "changed",
        "architecture mapping in config.py": "unchanged",
        "atom/spec_decode/eagle_proposer.py": "unchanged",
        "atom/spec_decode/drafter.py": "unchanged",
        # Watched in ATOM's real tree; the fixture engine has no such files.
        "DSpark draft models": "missing",
        "atom/model_ops/rejection_sampler.py": "missing",
        "architecture mapping in model_runner.py": "missing",
    }


def test_markdown_is_the_default_and_links_prs(fixture: Fixture) -> None:
    proc = relpipe(fixture.versions[2], fixture.versions[3], "--repo", str(fixture.atom))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[ROCm/ATOM\\#2501](https://github.com/ROCm/ATOM/pull/2501)" in out
    assert "| `atom/config.py` | modified | kv-cache | not-relevant |" in out  # the DP option
    assert "| `atom/spec_decode/eagle_proposer.py` | **changed** |" in out


def test_upstream_checks_set_the_exit_code(fixture: Fixture) -> None:
    args = [fixture.versions[0], fixture.versions[3], "--repo", str(fixture.atom), "--json"]
    ok = relpipe(*args, "--must-contain", "#2479", "--must-not-contain", "#2530")
    assert ok.returncode == 0, ok.stderr
    missing = relpipe(*args, "--must-contain", "ROCm/ATOM#2530")
    assert missing.returncode == 0  # a missing fix is a risk (C6 WARN) ...
    assert (
        relpipe(*args, "--must-contain", "#2530", "--strict").returncode == 1
    )  # ... unless strict
    present = relpipe(*args, "--must-not-contain", "#2479")
    assert present.returncode == 1  # a change that must not be there is a failure
    assert json.loads(missing.stdout)["upstream"][0] == {
        "kind": "must-contain",
        "ref": "#2530",
        "why": "",
        "found": False,
        "commit": None,
        "ok": False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "--markdown"], "not allowed with argument"),
        (["--rules", "/nonexistent/rules.yaml"], "cannot read rules file"),
        (["--must-contain", "zzz"], "neither a commit sha"),
    ],
)
def test_usage_errors_are_one_line_exit_2(fixture: Fixture, args: list[str], message: str) -> None:
    proc = relpipe("HEAD~1", "HEAD", "--repo", str(fixture.atom), *args)
    assert proc.returncode == 2
    assert (
        message in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    )


def test_unknown_commit_is_one_line_exit_2(fixture: Fixture) -> None:
    proc = relpipe("0.1.7.dev1+gdeadbeef0", "HEAD", "--repo", str(fixture.atom))
    assert proc.returncode == 2
    assert proc.stderr.startswith("relpipe diff: error: '0.1.7.dev1+gdeadbeef0' is missing in ")


def test_file_url_repository(fixture: Fixture, tmp_path: Path) -> None:
    env = dict(os.environ, RELPIPE_CACHE=str(tmp_path))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relpipe.pipeline.cli",
            "diff",
            fixture.versions[0],
            fixture.versions[1],
            "--repo",
            fixture.atom.as_uri(),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["repo"] == fixture.atom.as_uri()
    assert [c["pr"] for c in report["commits"]] == [2468, 2466, 2461]
    assert report["summary"]["relevant"] == 0  # docs, tests and the entrypoint only
    assert list((tmp_path / "repos").iterdir())


def test_aiter_repository_with_its_rules(fixture: Fixture) -> None:
    proc = relpipe("v0.1.5", "main", "--repo", str(fixture.aiter), "--rules", "aiter", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rules"] == "aiter" and report["project"] == "ROCm/aiter"
    assert [(f["path"], f["category"], f["verdict"]) for f in report["files"]] == [
        ("aiter/ops/mha.py", "kernel", "relevant")
    ]
    assert report["commits"][0]["pr"] == 1012


@pytest.mark.services
@pytest.mark.slow
def test_image_repository_through_dockerd(
    registry: str,
    docker_host: str,
    fixture_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    images = build.build_fixtures(
        registry, "relpipe-precision-test/atom-dev", count=4, cache_dir=fixture_cache
    )
    old, new = images[1], images[2]
    code = diff_cmd.main(
        [old.engine_version, new.engine_version, "--repo", f"image:{new.reference}", "--json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["new"] == new.engine_commit and report["old"] == old.engine_commit
    assert report["repo"] == f"image:{new.reference}:/app/ATOM"
    assert {c["pr"] for c in report["commits"] if c["precision"]} == {2479, 2483}
    # The second repository of the same image, diffed the same way with the AITER rules.
    code = diff_cmd.main(
        [
            "v0.1.5",
            new.aiter_commit,
            "--repo",
            f"image:{new.reference}",
            "--image-path",
            "/app/aiter-test",
            "--rules",
            "aiter",
            "--json",
        ]
    )
    assert code == 0
    aiter = json.loads(capsys.readouterr().out)
    assert aiter["new"] == new.aiter_commit and aiter["rules"] == "aiter"
