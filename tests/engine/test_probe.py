"""`python -m relpipe.engine probe` on real git repositories and a real installed
distribution's metadata."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import git

from relpipe.engine import probe


def _repo(path: Path, commits: int = 2) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for i in range(commits):
        (path / "f.txt").write_text(str(i))
        git(path, "add", "f.txt")
        git(path, "commit", "-q", "-m", f"c{i}")
    return git(path, "rev-parse", "HEAD").strip()


def _dist(site: Path, name: str, version: str) -> Path:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


@pytest.fixture
def image(tmp_path: Path) -> dict[str, object]:
    atom_sha = _repo(tmp_path / "app" / "ATOM")
    aiter_sha = _repo(tmp_path / "app" / "aiter-test", commits=1)
    site = tmp_path / "site"
    _dist(site, "atom", f"0.1.7.dev60+g{atom_sha[:9]}")
    _dist(site, "lmcache", "0.3.9")
    _dist(site, "amd-aiter", "0.1.5")
    rocm = tmp_path / "rocm-version"
    rocm.write_text("7.2.4-123\n")
    return {"atom": atom_sha, "aiter": aiter_sha, "site": site, "root": tmp_path, "rocm": rocm}


def _args(image: dict[str, object]) -> list[str]:
    root = image["root"]
    return [
        "probe",
        "--atom-dir",
        f"{root}/app/ATOM",
        "--aiter-dir",
        f"{root}/app/aiter-test",
        "--rocm-version-file",
        str(image["rocm"]),
    ]


def test_probe_reports_every_fact(cli, image) -> None:  # type: ignore[no-untyped-def]
    r = cli(*_args(image), extra_path=[image["site"]])
    d = r.doc
    assert r.code == 0 and d["schema"] == 1 and d["command"] == "probe" and d["status"] == "pass"
    assert d["engine"]["name"] == "atom" and d["engine"]["commit"] == image["atom"]
    assert d["engine"]["version"] == f"0.1.7.dev60+g{image['atom'][:9]}"
    assert d["engine"]["version_commit"] == image["atom"][:9]
    assert d["aiter"]["commit"] == image["aiter"] and d["aiter"]["version"] == "0.1.5"
    assert d["packages"]["lmcache"] == "0.3.9" and d["packages"]["triton"] == "3.8.0"
    assert d["rocm"] == {"version": "7.2.4", "build": "123", "file": str(image["rocm"])}
    assert d["torch"]["version"].startswith("2.13.0") and d["python"].count(".") == 2
    # on this CPU host the GPU is the one missing fact, and it says why
    assert d["gpu"] is None and d["errors"] == ["gpu: torch sees no GPU"]


def test_commit_without_git_binary_reads_refs_and_packed_refs(image, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = Path(str(image["root"])) / "app" / "ATOM"
    assert probe.read_head(str(repo)) == image["atom"]  # loose ref
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert probe.read_head(str(repo)) == image["atom"]  # packed-refs
    errors: list[str] = []
    old = os.environ["PATH"]
    os.environ["PATH"] = str(tmp_path / "no-bin")  # git is absent
    try:
        assert probe.git_commit(str(repo), errors, "engine commit") == image["atom"]
    finally:
        os.environ["PATH"] = old
    assert errors == []
    git(repo, "checkout", "-q", "--detach")
    assert probe.read_head(str(repo)) == image["atom"]  # detached HEAD holds the sha itself


def test_mismatched_version_and_commit_is_reported(image) -> None:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    repo = f"{image['root']}/app/ATOM"
    facts = probe.engine_facts("relpipe", repo, errors)  # a distribution with no +g version
    assert facts["version"] == "0.1.0" and facts["version_commit"] is None
    assert errors == [f"engine version 0.1.0 carries no +g<sha>; commit comes from {repo} only"]
    assert probe.scm_sha("0.1.7.dev60+g7fc0926c6") == "7fc0926c6"
    assert probe.scm_sha("0.1.7.dev60+g7fc0926c6.d20261007") == "7fc0926c6"
    assert probe.scm_sha("1.0.0") is None


def test_missing_facts_are_null_with_reasons(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "rocm").write_text("not a version\n")
    notgit = tmp_path / "plain"
    notgit.mkdir()
    r = cli(
        "probe",
        "--atom-dir",
        str(notgit),
        "--aiter-dir",
        str(tmp_path / "none"),
        "--rocm-version-file",
        str(tmp_path / "rocm"),
    )
    d = r.doc
    assert r.code == 0 and d["engine"]["version"] is None and d["engine"]["commit"] is None
    assert d["rocm"] is None and d["aiter"]["commit"] is None
    errs = "\n".join(d["errors"])
    assert "engine version: no installed distribution named atom" in errs
    assert f"engine commit: no commit for {notgit}" in errs
    assert f"aiter commit: {tmp_path / 'none'} does not exist" in errs
    assert "rocm: " in errs and "'not a version'" in errs


def test_hostile_git_files_are_capped_and_refused(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("x" * 10_000)
    with pytest.raises(OSError, match="larger than"):
        probe.read_head(str(repo))
    (repo / ".git" / "HEAD").write_text("ref: refs/../../etc/passwd\n")
    with pytest.raises(OSError, match="refusing ref path"):
        probe.read_head(str(repo))
