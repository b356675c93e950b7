"""relpipe.images.build and `relpipe fixtures build`: reproducible digests, cache hits, layer
hygiene, and the fixture histories the precision diff and the pipeline rely on (real git, real
registry)."""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from relpipe.images import fixture_repo as fx
from relpipe.images.build import BuildError, FixtureBuilder, build_fixtures, build_repo, nightly_tag
from relpipe.images.manifest import sha256_digest
from relpipe.images.registry import RegistryClient
from relpipe.pipeline import cli

SUBJECT = re.compile(r"^(?:[a-z]+(?:\([a-z_]+\))?: |\[[A-Za-z]+\] |Initial ).+ \(#\d{3,5}\)$")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _materialise(
    tmp: Path, commits: tuple[fx.CommitSpec, ...], name: str = "ATOM"
) -> tuple[Path, str, str]:
    """Write a fixture repository's layer entries to disk (as the image has them)."""
    built = build_repo(fx.ATOM_HISTORY, commits, name)
    for entry in built.entries:
        path = tmp / entry.path
        if entry.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entry.data or b"")
    return tmp / name, built.commit, built.version


def _changed(repo: Path, old: str, new: str) -> set[str]:
    return set(_git(repo, "diff", "--name-only", old, new).split())


# -- histories (no services needed) ------------------------------------------------------------


def test_atom_history_is_real_git_with_stable_shas_and_scm_versions(tmp_path: Path) -> None:
    one, sha1, version1 = _materialise(tmp_path / "a", fx.atom_commits(3, "good"))
    _two, sha2, _ = _materialise(tmp_path / "b", fx.atom_commits(3, "good"))
    assert sha1 == sha2 == _git(one, "rev-parse", "HEAD").strip()
    assert _git(one, "status", "--porcelain") == ""  # the index matches the work tree
    since = fx.NIGHTLY_POINTS[3] - fx.ATOM_HISTORY.tag_index
    assert version1 == f"0.1.7.dev{since}+g{sha1[:9]}"
    assert _git(one, "describe", "--tags", "--long").startswith(f"v0.1.6-{since}-g")
    subjects = _git(one, "log", "--format=%s").splitlines()
    assert len(subjects) == fx.NIGHTLY_POINTS[3] + 1
    assert all(SUBJECT.match(s) for s in subjects), subjects
    assert any(s.startswith("[") for s in subjects) and any(s.startswith("fix(") for s in subjects)


def test_successive_nightlies_differ_as_the_precision_diff_needs(tmp_path: Path) -> None:
    repo, _, _ = _materialise(tmp_path, fx.atom_commits(fx.MAX_NIGHTLIES - 1, "good"))
    heads = _git(repo, "rev-list", "--reverse", "HEAD").split()
    n1, n2, n3, n4 = (heads[i] for i in fx.NIGHTLY_POINTS[:4])
    changed_12 = _changed(repo, n1, n2)
    assert changed_12 and all(
        p.startswith(("docs/", "tests/", "atom/entrypoints/")) for p in changed_12
    )
    assert {"atom/model_ops/layernorm.py", "atom/config.py"} <= _changed(repo, n2, n3)
    assert "kv_cache_dtype" in _git(repo, "diff", n2, n3, "--", "atom/config.py")
    assert _changed(repo, n3, n4) >= {
        "atom/spec_decode/drafter.py",
        "atom/spec_decode/eagle_proposer.py",
    }
    assert "(#2479)" in _git(
        repo, "log", "--format=%s", f"{n2}..{n3}", "--", "atom/model_ops/layernorm.py"
    )


@pytest.mark.parametrize(
    ("variant", "path"),
    [("broken", "atom/model_ops/layernorm.py"), ("hang", "atom/model_ops/activation.py")],
)
def test_bad_variants_add_one_commit_on_top_of_the_good_history(
    tmp_path: Path, variant: str, path: str
) -> None:
    repo, _, _ = _materialise(tmp_path, fx.atom_commits(1, variant))
    good = _git(repo, "rev-list", "HEAD~1").split()
    assert good[0] == build_repo(fx.ATOM_HISTORY, fx.atom_commits(1, "good"), "x").commit
    assert _changed(repo, "HEAD~1", "HEAD") == {path}


def test_bad_options_are_one_line_usage_errors(tmp_path: Path) -> None:
    builder = FixtureBuilder(cache_dir=tmp_path)
    with pytest.raises(BuildError, match="unknown fixture variant"):
        builder.plan(2, "flaky")
    with pytest.raises(BuildError, match="between 1 and"):
        builder.plan(fx.MAX_NIGHTLIES + 1, "good")


# -- images in a registry ----------------------------------------------------------------------


@pytest.mark.services
def test_builds_are_reproducible_and_the_second_is_a_cache_hit(
    registry: str,
    tmp_path: Path,
    fixture_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = f"relpipe-test-build/atom-{uuid.uuid4().hex[:8]}"
    first = build_fixtures(registry, repo, count=3, cache_dir=fixture_cache)
    assert [i.tag for i in first] == [nightly_tag(i) for i in range(3)]
    assert all(i.pushed for i in first) and len({i.digest for i in first}) == 3
    with RegistryClient() as client:
        for image in first:
            assert client.resolve(image.tagged).digest == image.digest
            pin = client.pin(image.reference)
            assert dict(pin.labels)["org.opencontainers.image.revision"] == image.engine_commit
            assert pin.created == image.created

    # From an empty layer cache, every byte is rebuilt: the digests must not move.
    fresh = FixtureBuilder(cache_dir=tmp_path / "fresh-cache")
    planned, _ = fresh.plan(3, "good")
    assert fresh.layer_hits == 0
    assert [sha256_digest(p.manifest) for p in planned] == [i.digest for i in first]

    # The second CLI build finds every manifest under its tag: nothing is pushed.
    capsys.readouterr()
    code = cli.main(
        [
            "fixtures",
            "build",
            "--registry",
            registry,
            "--repository",
            repo,
            "--count",
            "3",
            "--cache-dir",
            str(fixture_cache),
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line.split()[1] for line in out] == [i.digest for i in first]
    assert all(line.endswith("cache hit") for line in out)


@pytest.mark.services
def test_layers_are_normalised_tars(registry: str, fixture_cache: Path) -> None:
    builder = FixtureBuilder(cache_dir=fixture_cache)
    planned, _ = builder.plan(1, "good")
    base, vendor, atom = planned[0].layers
    for layer in (vendor, atom):
        raw = layer.blob.read_bytes()
        assert raw[4:8] == b"\0\0\0\0"  # gzip header mtime
        with tarfile.open(fileobj=gzip.GzipFile(fileobj=io.BytesIO(raw))) as tar:
            members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 for m in members)
        assert all(m.mode in (0o644, 0o755, 0o777) for m in members)
    with tarfile.open(base.blob) as tar:
        names = set(tar.getnames())
    assert "usr/local/bin/python3.11" in names and "usr/bin/git" in names
    assert not any("/test/" in n or "/tkinter/" in n or "site-packages/torch" in n for n in names)


def test_fixtures_cli_rejects_a_bad_count_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["fixtures", "build", "--registry", "127.0.0.1:1", "--repository", "x/y", "--count", "99"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--count must be between" in err and len(err.strip().splitlines()) == 1
