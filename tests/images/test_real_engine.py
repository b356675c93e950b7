"""Fixture nightlies from ATOM's real history: versions as setuptools-scm computes them (checked
against setuptools-scm itself), nightly tags from commit dates, and `/app/ATOM` laid out as
ATOM's release Dockerfile leaves it."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import corpus
import pytest

from relpipe.images import real_engine
from relpipe.images.real_engine import EngineRepoError

HEAD = "ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _sample(repo: Path) -> list[str]:
    """24 real commits: every tag, the first commit (no tag before it), commits just after and
    well after tags, and commits on release branches (the nearest tag is not the newest)."""
    tags = _git(repo, "tag", "--list").split()
    picks = [*tags, "HEAD", "HEAD~1", "HEAD~40", "HEAD~200"]
    picks += [f"{t}~1" for t in tags if t != "v0.1.2"]
    picks += [_git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]]
    picks += [f"v0.1.5~{n}" for n in (2, 3, 30)]
    picks += [_git(repo, "rev-list", "-n1", "--skip=3", "v0.1.3..v0.1.4")]
    return list(dict.fromkeys(picks))


def test_scm_version_equals_setuptools_scm_on_real_commits(tmp_path: Path, atom_repo: Path) -> None:
    python = corpus.scm_python()
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(atom_repo), str(work)], check=True)
    commits = _sample(work)
    assert len(commits) >= 20
    seen_exact = seen_dev = 0
    for rev in commits:
        _git(work, "checkout", "-q", "--detach", rev)
        expected = subprocess.run(
            [python, "-m", "setuptools_scm"], cwd=work, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert real_engine.scm_version(atom_repo, _git(work, "rev-parse", "HEAD")) == expected, rev
        seen_exact += ".dev" not in expected
        seen_dev += ".dev" in expected
    assert seen_exact >= 5 and seen_dev >= 12
    assert real_engine.scm_version(atom_repo, HEAD) == "0.1.6rc1.dev323+gffdf3bb5d"


def test_engine_commits_name_their_nightlies_from_commit_dates(atom_repo: Path) -> None:
    head, tagged = real_engine.engine_commits(atom_repo, [HEAD, "v0.1.6-rc0"])
    assert head.sha == HEAD and head.version == "0.1.6rc1.dev323+gffdf3bb5d"
    date = _git(atom_repo, "log", "-1", "--format=%cd", "--date=format-local:%Y%m%d%H%M", HEAD)
    assert head.tag == f"nightly_{date}"
    assert tagged.version == "0.1.6rc0" and tagged.tag.startswith("nightly_2026")


@pytest.mark.parametrize(
    ("revs", "message"),
    [
        (["0123456789abcdef0123456789abcdef01234567"], "is not in .*force-pushed"),
        (["--upload-pack=x"], "is not a commit or tag"),
        ([HEAD, HEAD], "would both be nightly_"),
        ([], "names no commit"),
    ],
)
def test_bad_engine_commits_fail_with_one_line(
    atom_repo: Path, revs: list[str], message: str
) -> None:
    with pytest.raises(EngineRepoError, match=message) as err:
        real_engine.engine_commits(atom_repo, revs)
    assert "\n" not in str(err.value)


def test_checkout_has_the_history_up_to_the_commit_only(tmp_path: Path, atom_repo: Path) -> None:
    (commit,) = real_engine.engine_commits(atom_repo, ["v0.1.5~3"])
    dest = tmp_path / "ATOM"
    real_engine.checkout(atom_repo, commit, dest)
    assert _git(dest, "rev-parse", "HEAD") == commit.sha
    assert _git(dest, "status", "--porcelain") == ""
    assert _git(dest, "describe", "--tags", "--long") == "v0.1.3-117-g7b89da9"
    assert _git(dest, "tag").split() == ["v0.1.2", "v0.1.3"]  # tags after it are not there
    assert int(_git(dest, "rev-list", "--count", "HEAD")) == int(
        _git(atom_repo, "rev-list", "--count", commit.sha)
    )
    assert real_engine.scm_version(dest, "HEAD") == commit.version
    assert (dest / "atom" / "model_engine" / "model_runner.py").is_file()


@pytest.mark.services
@pytest.mark.slow
def test_nightlies_from_real_commits_probe_as_setuptools_scm_says(
    atom_repo: Path, registry: str, docker_host: str, fixture_cache: Path, tmp_path: Path
) -> None:
    from relpipe.images.build import build_fixtures
    from relpipe.images.runtime import Runtime

    revs = ["v0.1.5~3", HEAD]
    images = build_fixtures(
        registry,
        f"relpipe-test-real/atom-{uuid.uuid4().hex[:8]}",
        cache_dir=fixture_cache,
        engine_repo=atom_repo,
        engine_commits=revs,
    )
    commits = real_engine.engine_commits(atom_repo, revs)
    assert [i.tag for i in images] == [c.tag for c in commits]
    assert [i.engine_version for i in images] == [
        "0.1.4.dev117+g7b89da977",
        "0.1.6rc1.dev323+gffdf3bb5d",
    ]
    runtime = Runtime.from_env(docker_host=docker_host, gpu="none")
    engine = Path(__file__).resolve().parents[2] / "engine"
    for image, commit in zip(images, commits, strict=True):
        out = tmp_path / image.tag
        facts = runtime.run_engine(
            image.reference, "probe", (), engine_dir=engine, out_dir=out, timeout_s=300
        ).require()
        assert facts["engine"]["version"] == commit.version
        assert facts["engine"]["commit"] == commit.sha
        assert image.created == commit.created
