"""Batched git access (validate.gitio) on real repositories: parsing, refs, URLs, image copies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support import commit_files, git

from relpipe.validate import precision
from relpipe.validate.errors import ValidateError
from relpipe.validate.precision import gitio


@pytest.mark.parametrize(
    ("text", "rev"),
    [
        ("0.1.7.dev60+g7fc0926c6", "7fc0926c6"),
        ("0.1.7.dev43+gaa0c5c3a1.d20260101", "aa0c5c3a1"),
        ("v0.1.6", "v0.1.6"),
        ("HEAD~3", "HEAD~3"),
        ("release/0.1^{commit}", "release/0.1^{commit}"),
        (" 7fc0926c6 ", "7fc0926c6"),
    ],
)
def test_commit_of_accepts_refs_and_versions(text: str, rev: str) -> None:
    assert gitio.commit_of(text) == rev


@pytest.mark.parametrize(
    "text",
    [
        "--output=/tmp/pwned",
        "-h",
        "a..b",
        "HEAD:atom/config.py",
        "a b",
        "x\nHEAD",
        "",
        "a/",
        "x.lock",
        "$(id)",
        "`id`",
    ],
)
def test_commit_of_rejects_injection(text: str) -> None:
    with pytest.raises(ValidateError, match="not a commit, tag or version"):
        gitio.commit_of(text)


HOSTILE_PATHS = [
    "atom/new\nline.py",
    "atom/tab\there.py",
    "atom/pi|pe.py",
    "-rf.py",
    "atom/ünï😀.py",
    'atom/"quoted".py',
    "atom/ M.py",
]


def test_hostile_paths_round_trip_through_diff_and_log(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"README": "x\n"}, "init")
    b = commit_files(
        repo,
        {p: f"# {i}\n" for i, p in enumerate(HOSTILE_PATHS)},
        "feat: hostile names\n\n:100644 100644 abc M\nM\nbody\x1eline\n",
    )
    changes = gitio.diff_raw(repo, a, b)
    assert sorted(c.path for c in changes) == sorted(HOSTILE_PATHS)
    assert {c.status for c in changes} == {"A"}
    log = gitio.log(repo, a, b)
    (entry,) = log.commits
    assert sorted(t.path for t in log.touches[entry.sha]) == sorted(HOSTILE_PATHS)
    assert entry.body == ":100644 100644 abc M\nM\nbody\x1eline\n"
    assert (entry.sha, entry.parents, entry.side) == (b, (a,), "new")


def test_non_utf8_path_is_replaced_not_crashing(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"README": "x\n"}, "init")
    (repo / "atom").mkdir()
    (repo / "atom").joinpath(b"caf\xe9.py".decode("utf-8", "surrogateescape")).write_text("x\n")
    git(repo, "add", "-A")
    b = commit_files(repo, {}, "latin-1 name")
    (change,) = gitio.diff_raw(repo, a, b)
    assert change.path == "atom/caf\ufffd.py"


def test_resolve_tags_branches_and_versions_in_one_call(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"a": "1\n"}, "one")
    git(repo, "tag", "-a", "v0.1.6", "-m", "release")
    b = commit_files(repo, {"a": "2\n"}, "two")
    assert gitio.resolve(repo, ["v0.1.6", f"0.1.7.dev1+g{b[:9]}", "main"]) == [a, b, b]
    with pytest.raises(
        ValidateError, match=r"^'nope' is missing in .*force-pushed away is in no history\)$"
    ):
        gitio.resolve(repo, ["main", "nope"])
    with pytest.raises(ValidateError, match="not a git repository"):
        gitio.resolve(tmp_path, ["main"])


def test_read_blobs_batches_and_reports_missing(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    commit_files(repo, {"a": "one\n", "b": b"\0bin\n"}, "init")
    shas = git(repo, "rev-parse", "HEAD:a", "HEAD:b").split()
    assert gitio.read_blobs(repo, [*shas, shas[0]]) == {shas[0]: b"one\n", shas[1]: b"\0bin\n"}
    with pytest.raises(ValidateError, match="missing from"):
        gitio.read_blobs(repo, ["0" * 39 + "1"])


def test_url_repository_is_cached_and_fetched_only_when_needed(tmp_path: Path) -> None:
    source = tmp_path / "upstream"
    a = commit_files(source, {"atom/config.py": "X = 1\n"}, "one")
    b = commit_files(source, {"atom/config.py": "X = 2\n"}, "two (#2)")
    url = source.as_uri()
    cache = tmp_path / "cache"
    repo = gitio.open_url(url, [a, b], cache=cache)
    assert repo.parent == cache and (repo / "HEAD").is_file()
    report = precision.diff(repo, a, b, display=url)
    assert [c.pr for c in report.commits] == [2]
    # Cached: with the source gone, a pair it already has needs no network.
    shutil.move(source, tmp_path / "moved")
    assert gitio.open_url(url, [a[:10], "main"], cache=cache) == repo
    shutil.move(tmp_path / "moved", source)
    # A commit that only a non-branch ref reaches (like GitHub's refs/pull/N/head) is fetched by id.
    git(source, "checkout", "-q", "-b", "pr")
    c = commit_files(source, {"atom/config.py": "X = 3\n"}, "three (#3)")
    git(source, "update-ref", "refs/pull/3/head", c)
    git(source, "checkout", "-q", "main")
    git(source, "branch", "-D", "pr")
    assert gitio.open_url(url, [b, c], cache=cache) == repo
    assert gitio.resolve(repo, [c]) == [c]


def test_url_errors_are_one_line_and_never_show_credentials(tmp_path: Path) -> None:
    with pytest.raises(ValidateError) as err:
        gitio.open_url("http://user:s3cret@127.0.0.1:1/atom.git", ["main"], cache=tmp_path)
    assert str(err.value).startswith("cannot fetch from http://***@127.0.0.1:1/atom.git: ")
    assert "s3cret" not in str(err.value)
    assert "\n" not in str(err.value)
    for bad in ("ext::sh -c touch% /tmp/pwned", "--upload-pack=touch /tmp/x", "/not/a/url"):
        with pytest.raises(ValidateError, match="not a repository URL"):
            gitio.open_url(bad, ["main"], cache=tmp_path)


def test_image_git_dir_is_sanitised_before_use(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/model_ops/linear.py": "y = x\n"}, "one")
    b = commit_files(repo, {"atom/model_ops/linear.py": "y = 2 * x\n"}, "two (#2)")
    git_dir = tmp_path / "copied.git"
    shutil.copytree(repo / ".git", git_dir)
    marker = tmp_path / "pwned"
    with open(git_dir / "config", "a") as config:
        config.write(
            f"[core]\n\tfsmonitor = touch {marker}\n\tpager = touch {marker}\n"
            f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = touch {marker}\n"
        )
    (git_dir / "hooks").mkdir(exist_ok=True)
    (git_dir / "objects" / "info" / "alternates").write_text("/etc\n")
    gitio.sanitize_git_dir(git_dir)
    assert "fsmonitor" not in (git_dir / "config").read_text()
    assert not (git_dir / "objects" / "info" / "alternates").exists()
    assert not (git_dir / "hooks").exists()
    report = precision.diff(git_dir, a, b)
    assert [f.verdict for f in report.files] == ["relevant"]
    assert not marker.exists()
    with pytest.raises(ValidateError, match="not a git directory"):
        gitio.sanitize_git_dir(tmp_path)


@pytest.mark.parametrize("kind", ["folder", "link to a host file", "fifo"])
def test_an_image_git_config_that_is_not_a_file_is_replaced_not_a_traceback(
    tmp_path: Path, kind: str
) -> None:
    """Issue 17.8: a `.git/config` that is a folder made sanitising raise IsADirectoryError; a
    link would have had our config written through it onto the host file it names."""
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/model_ops/linear.py": "y = x\n"}, "one")
    b = commit_files(repo, {"atom/model_ops/linear.py": "y = 2 * x\n"}, "two (#2)")
    git_dir = tmp_path / "copied.git"
    shutil.copytree(repo / ".git", git_dir)
    config = git_dir / "config"
    config.unlink()
    host_file = tmp_path / "host-file"
    host_file.write_text("the user's file\n")
    if kind == "folder":
        (config / "nested").mkdir(parents=True)
    elif kind == "fifo":
        os.mkfifo(config)
    else:
        config.symlink_to(host_file)
    gitio.sanitize_git_dir(git_dir)
    assert config.is_file() and not config.is_symlink()
    assert host_file.read_text() == "the user's file\n"
    assert [f.verdict for f in precision.diff(git_dir, a, b).files] == ["relevant"]


def test_callers_git_environment_cannot_redirect_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As inside a git hook: GIT_DIR & co. name the user's repository, not the one we asked for.
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    a = commit_files(ours, {"atom/model_ops/linear.py": "y = x\n"}, "one")
    b = commit_files(ours, {"atom/model_ops/linear.py": "y = 2 * x\n"}, "two (#2)")
    other = commit_files(theirs, {"README": "user's repository\n"}, "theirs")
    refs_before = git(theirs, "for-each-ref")
    monkeypatch.setenv("GIT_DIR", str(theirs / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(theirs))
    monkeypatch.setenv("GIT_INDEX_FILE", str(theirs / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(theirs / ".git" / "objects"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.bare")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "nonsense")
    assert gitio.resolve(ours, ["main"]) == [b]
    report = precision.diff(ours, a, b)
    assert [c.sha for c in report.commits] == [b] and report.files[0].verdict == "relevant"
    gitio.run(ours, "update-ref", "refs/relpipe/x", a, what="update-ref")
    assert "GIT_DIR" not in gitio.environment() and "GIT_CONFIG_COUNT" not in gitio.environment()
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_OBJECT_DIRECTORY")
    monkeypatch.delenv("GIT_CONFIG_COUNT")
    assert git(ours, "rev-parse", "refs/relpipe/x").strip() == a
    assert git(theirs, "for-each-ref") == refs_before
    assert git(theirs, "rev-parse", "HEAD").strip() == other


def test_sanitised_git_dir_has_refs_so_git_never_walks_up(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"a": "1\n"}, "one")
    git(repo, "pack-refs", "--all")
    # The copy lives inside another repository (the user's checkout, say) and has no refs/.
    outer = tmp_path / "outer"
    commit_files(outer, {"b": "2\n"}, "outer")
    git_dir = outer / "copied.git"
    shutil.copytree(repo / ".git", git_dir)
    shutil.rmtree(git_dir / "refs")
    gitio.sanitize_git_dir(git_dir)
    assert all((git_dir / d).is_dir() for d in ("refs", "refs/heads", "refs/tags"))
    assert gitio.resolve(git_dir, ["main"]) == [a]
    (git_dir / "refs" / "tags").rmdir()
    (git_dir / "refs" / "tags").symlink_to(tmp_path)
    with pytest.raises(ValidateError, match=r"refs/tags is not a folder"):
        gitio.sanitize_git_dir(git_dir)


def test_shallow_clone_is_flagged(tmp_path: Path) -> None:
    source = tmp_path / "src"
    commit_files(source, {"a": "1\n"}, "one")
    commit_files(source, {"a": "2\n"}, "two")
    b = commit_files(source, {"a": "3\n"}, "three")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", source.as_uri(), str(shallow))
    report = precision.diff(shallow, "HEAD~1", b)
    assert report.shallow is True
    assert "shallow clone" in precision.render_markdown(report)
