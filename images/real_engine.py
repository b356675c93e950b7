"""Fixture nightlies from a real engine repository: ATOM's own history at chosen commits.

`relpipe fixtures build --engine-repo PATH --engine-commits A,B,...` lays `/app/ATOM` out as ATOM's
release Dockerfile leaves it (`git clone` + `git checkout COMMIT` + `pip install -e .`): the
worktree at the commit with its `.git` (the commit's history and the tags in it, nothing after
it), the `atom/_version.py` setuptools-scm writes, and an editable `atom` distribution whose
version is the one setuptools-scm computes for that commit (`scm_version`). Each nightly's tag is
named from its commit's committer date (`nightly_YYYYMMDDHHMM`, UTC).

`scm_version` follows setuptools-scm's defaults (guess-next-dev, node-and-date) as ATOM uses them
(`[tool.setuptools_scm]` with no scheme options): `git describe --tags --long --match *[0-9]*`,
an exact tag gives its normalised version (`v0.1.6-rc0` -> `0.1.6rc0`); otherwise the next
version (`0.1.5` -> `0.1.6`, `rc0` -> `rc1`) with `.devN+g<sha9>`. tests/images/test_real_engine.py
compares it with setuptools-scm itself on real ATOM commits.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import process
from .errors import ImageError

# A PEP 440 release with an optional pre-release, as tags spell it (v0.1.6, v0.1.6-rc0, 1.2b1).
_TAG = re.compile(
    r"v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?",
    re.IGNORECASE,
)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc"}
_PRE["preview"] = "rc"
_SHA = re.compile(r"[0-9a-f]{40}")


class EngineRepoError(ImageError):
    """The engine repository or a commit in it cannot be used for a fixture nightly."""


@dataclass(frozen=True, kw_only=True)
class EngineCommit:
    """One commit a nightly is built from: its sha, committer date and setuptools-scm version."""

    sha: str
    date: str  # committer date, ISO 8601 UTC
    version: str

    @property
    def tag(self) -> str:
        when = dt.datetime.fromisoformat(self.date).astimezone(dt.UTC)
        return f"nightly_{when:%Y%m%d%H%M}"

    @property
    def created(self) -> str:
        when = dt.datetime.fromisoformat(self.date).astimezone(dt.UTC)
        return f"{when:%Y-%m-%dT%H:%M:%SZ}"


def git_env(home: Path) -> dict[str, str]:
    """A git environment that reads no user or system configuration (reproducible output)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
        "TZ": "UTC",
    }


def _git(repo: Path, *args: str, home: Path, check: bool = True) -> str:
    try:
        done = process.run(["git", "-C", str(repo), *args], env=git_env(home), check=False)
    except process.ProcessError as exc:
        raise EngineRepoError(str(exc)) from None
    if done.returncode != 0 and check:
        err = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        name = next(a for i, a in enumerate(args) if a[0] != "-" and args[i - 1 : i] != ("-c",))
        raise EngineRepoError(f"git {name} failed in {repo}: {err[0][:200]}")
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def tag_version(tag: str) -> tuple[tuple[int, ...], str | None, int]:
    """(release, pre-release kind or None, pre-release number) of a version tag."""
    match = _TAG.fullmatch(tag)
    if match is None:
        raise EngineRepoError(f"tag {tag!r} is not a version setuptools-scm can read")
    release = tuple(int(part) for part in match["release"].split("."))
    pre = _PRE[match["pre"].lower()] if match["pre"] else None
    return release, pre, int(match["pre_n"] or 0)


def _format(release: tuple[int, ...], pre: str | None, pre_n: int) -> str:
    return ".".join(map(str, release)) + (f"{pre}{pre_n}" if pre else "")


def scm_version(repo: Path, commit: str) -> str:
    """The version setuptools-scm gives a clean checkout of `commit` in `repo`."""
    with tempfile.TemporaryDirectory(prefix="relpipe-scm-") as home:
        sha = _git(repo, "rev-parse", "--verify", f"{commit}^{{commit}}", home=Path(home))
        sha = sha.strip()
        described = _git(
            repo,
            "describe",
            "--tags",
            "--long",
            "--match",
            "*[0-9]*",
            sha,
            home=Path(home),
            check=False,
        ).strip()
        if not described:  # no tag in the history: setuptools-scm counts every commit
            count = _git(repo, "rev-list", "--count", sha, home=Path(home)).strip()
            return f"0.1.dev{count}+g{sha[:9]}"
    tag, distance, _ = described.rsplit("-", 2)
    release, pre, pre_n = tag_version(tag)
    if int(distance) == 0:
        return _format(release, pre, pre_n)
    if pre is not None:
        upcoming = _format(release, pre, pre_n + 1)
    else:
        upcoming = _format((*release[:-1], release[-1] + 1), None, 0)
    return f"{upcoming}.dev{int(distance)}+g{sha[:9]}"


def engine_commits(repo: Path, revs: Sequence[str]) -> list[EngineCommit]:
    """The commits named by `revs` (shas, tags, branches), each with its date and version; the
    nightlies' tags must differ, so two commits in the same minute are refused."""
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        raise EngineRepoError(f"--engine-repo {repo} is not a git repository")
    if not revs:
        raise EngineRepoError("--engine-commits names no commit")
    out: list[EngineCommit] = []
    with tempfile.TemporaryDirectory(prefix="relpipe-engine-") as home:
        for rev in revs:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/~^-]{0,200}", rev):
                raise EngineRepoError(f"--engine-commits: {rev[:80]!r} is not a commit or tag")
            line = _git(
                repo,
                "log",
                "-1",
                "--format=%H %cI",
                f"{rev}^{{commit}}",
                "--",
                home=Path(home),
                check=False,
            ).strip()
            if not line:
                raise EngineRepoError(
                    f"commit {rev!r} is not in {repo} (missing, or force-pushed away); "
                    "fetch it or name another"
                )
            sha, date = line.split(" ", 1)
            out.append(EngineCommit(sha=sha, date=date, version=scm_version(repo, sha)))
    tags: dict[str, str] = {}
    for commit in out:
        if commit.tag in tags:
            raise EngineRepoError(
                f"commits {tags[commit.tag][:9]} and {commit.sha[:9]} would both be "
                f"{commit.tag}: their dates fall in the same minute"
            )
        tags[commit.tag] = commit.sha
    return out


def checkout(source: Path, commit: EngineCommit, dest: Path) -> None:
    """`dest`: a repository whose `main` is `commit`, with exactly its history and the tags in
    it, checked out (what `git clone` + `git checkout COMMIT` leaves, without later history).
    The index carries no stat data, so the same commit gives the same bytes."""
    home = dest.parent
    dest.mkdir(parents=True)
    _git(dest, "init", "-q", "--template=", "-b", "main", ".", home=home)
    _git(dest, "config", "core.logAllRefUpdates", "false", home=home)
    tags = _git(
        source,
        "for-each-ref",
        "--merged",
        commit.sha,
        "--format=%(refname)",
        "refs/tags",
        home=home,
    ).split()
    _git(
        dest,
        "-c",
        "protocol.file.allow=always",
        "-c",
        "uploadpack.allowAnySHA1InWant=true",
        "-c",
        "pack.threads=1",
        "fetch",
        "-q",
        "--no-tags",
        "--no-write-fetch-head",
        "--update-head-ok",  # main is the (unborn) current branch
        str(source.resolve()),
        f"{commit.sha}:refs/heads/main",
        *(f"{t}:{t}" for t in tags),
        home=home,
    )
    _git(dest, "read-tree", "HEAD", home=home)
    _git(dest, "checkout-index", "-a", home=home)
    _git(dest, "read-tree", "HEAD", home=home)  # drop the stat data checkout-index may record
    if not _SHA.fullmatch(_git(dest, "rev-parse", "HEAD", home=home).strip()):
        raise EngineRepoError(f"{commit.sha[:9]}: the checkout has no HEAD")
