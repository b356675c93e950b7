"""Shared fixtures: the real corpus, real services (registry, dockerd), real git repositories.

A test that needs a service asks for the `registry` or `docker_host` fixture; one that builds
fixture nightlies passes `fixture_cache` as their layer cache. Services named
by the environment (as `nox -s tests` does through `images.services run`) are reused; otherwise
they are started once per test session. When a service cannot be had, the test is skipped on a
developer machine, and FAILS in CI (CI=true): CI never silently skips.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import corpus
import github_api
import pr_support
import pytest

from relpipe.images import services as svc

ROOT = Path(__file__).resolve().parent.parent


_unavailable = corpus.unavailable


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real InferenceX data (read at run time, never copied): ../shared/data/inferencex."""
    return corpus.inferencex_dir()


@pytest.fixture(scope="session")
def inferencex_tree() -> Path:
    """InferenceX's whole tree at one commit (read-only; copy it to change it)."""
    return corpus.inferencex_tree()


@pytest.fixture(scope="session")
def inferencex_tree_2026_10() -> Path:
    """InferenceX at the base of PR #3750 (2026-10 layout; read-only; copy it to change it)."""
    return corpus.inferencex_tree_2026_10()


@pytest.fixture(scope="session")
def atom_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of ATOM's real history, one per worker (read-only use: clone again to change it)."""
    return corpus.atom_clone(tmp_path_factory.mktemp("atom") / "ATOM")


@pytest.fixture(scope="session")
def oracle_python() -> str:
    """A Python with InferenceX's own dependencies, for running its utils/ as an oracle."""
    return corpus.oracle_python()


@pytest.fixture(scope="session")
def _services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[svc.Services]:
    state = tmp_path_factory.mktemp("services")
    try:
        started = svc.start(state)
    except svc.ServiceError as exc:
        _unavailable(str(exc))
        raise
    try:
        yield started
    finally:
        svc.stop(started)


@pytest.fixture(scope="session")
def registry(_services: svc.Services) -> str:
    """host:port of a plain-HTTP distribution registry on 127.0.0.1."""
    assert _services.registry
    return _services.registry


@pytest.fixture(scope="session")
def docker_host(_services: svc.Services) -> str:
    """DOCKER_HOST of a dockerd with no networking (unix socket)."""
    assert _services.docker_host
    return _services.docker_host


@pytest.fixture(scope="session")
def slurm_conf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SLURM_CONF of a one-node Slurm cluster on loopback (`nox -s tests` starts it once)."""
    if os.environ.get(svc.SLURM_ENV):
        started = svc.start(need_registry=False, need_docker=False, need_slurm=True)
    else:
        try:
            started = svc.start(
                tmp_path_factory.mktemp("slurm"),
                need_registry=False,
                need_docker=False,
                need_slurm=True,
            )
        except svc.ServiceError as exc:
            _unavailable(str(exc))
            raise
    try:
        assert started.slurm_conf
        yield started.slurm_conf
    finally:
        svc.stop(started)


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Layer cache for fixture nightlies, one per test run and shared by its xdist workers.

    The base layer (host Python + git, gzipped) takes seconds of CPU to build: the first worker to
    ask builds the common layers under a file lock while the others wait, then all hit the cache
    (its writes are atomic, so concurrent variant builds are safe).
    """
    from relpipe.images.build import FixtureBuilder

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder above the workers' own
    cache = root / "fixture-cache"
    with open(root / "fixture-cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        FixtureBuilder(cache_dir=cache).plan(1, "good")
    return cache


@pytest.fixture(scope="session")
def prism(tmp_path_factory: pytest.TempPathFactory) -> Iterator[github_api.Prism]:
    """Prism serving GitHub's OpenAPI description on loopback, once per session (github_api.py)."""
    yield from github_api.prism_session(tmp_path_factory.mktemp("prism"))


@pytest.fixture
def api(prism: github_api.Prism) -> Iterator[github_api.GitHubDouble]:
    """The stateful proxy in front of Prism; the test fails if a request broke the contract."""
    yield from pr_support.github_double(prism)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone of the example benchmark repository with a bare remote; the user's git identity."""
    return pr_support.benchmark_clone(tmp_path, monkeypatch)
