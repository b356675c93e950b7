"""Fault injection through a proxy in front of the real registry: every case ends in success
after bounded retries or a one-line error, and no case ever writes a wrong digest to the lock.

Each case runs on both drivers (httpx and the light stdlib driver of `images resolve`): they
share the engine and the auth flow, and these tests keep them equal."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_support import Fault, FaultProxy, push_image, push_index, unique_repo

from relpipe.images.errors import ImageError
from relpipe.images.lock import load, update
from relpipe.images.manifest import OCI_INDEX, OCI_MANIFEST
from relpipe.images.registry import (
    DigestMismatch,
    Limits,
    RegistryClient,
    RegistryError,
    RetryPolicy,
    Timeouts,
)
from relpipe.pipeline.cli import main as cli

pytestmark = pytest.mark.services

MANIFEST = r"/manifests/"


@pytest.fixture(scope="module")
def image(registry: str) -> tuple[str, str, str, dict[str, str]]:
    """(repository path, tag, good digest, children of the index tag 'multi')."""
    with RegistryClient() as client:
        repo = unique_repo(registry, "faults")
        pushed = push_image(client, repo, "nightly_202610070333")
        multi = push_index(client, repo, "multi")
    return repo.split("/", 1)[1], "nightly_202610070333", pushed.digest, dict(multi.children)


@pytest.fixture(params=[False, True], ids=["httpx", "light"])
def light(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def proxy(registry: str) -> FaultProxy:
    p = FaultProxy(registry)
    yield p
    p.close()


class Sleeps(list[float]):
    """Records backoff sleeps instead of sleeping (fast suite, assertable delays)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _client(sleeps: Sleeps, light: bool = False, **kw: object) -> RegistryClient:
    return RegistryClient(
        retry=RetryPolicy(attempts=4, base_s=0.01, max_s=0.05, max_retry_after_s=30),
        # short enough to keep the timeout case fast, long enough for a loaded 2-core CI runner
        timeout=Timeouts(connect_s=2.0, read_s=1.0, total_s=20.0),
        sleep=sleeps,
        light=light,
        **kw,
    )  # type: ignore[arg-type]


RECOVERABLE = [
    pytest.param(method, faults, id=f"{method}-{name}")
    for name, faults in [
        ("429-retry-after", [Fault("status", 429, retry_after="2")]),
        ("500-502-503", [Fault("status", 500), Fault("status", 502), Fault("status", 503)]),
        ("connection-reset", [Fault("reset")]),
        ("timeout", [Fault("timeout", delay=1.5)]),
        ("truncated-body", [Fault("truncate")]),
    ]
    for method in ("HEAD", "GET")
    if not (method == "HEAD" and name == "truncated-body")  # a HEAD has no body to truncate
]


@pytest.mark.parametrize(("method", "faults"), RECOVERABLE)
def test_recoverable_faults_end_in_the_right_pin(
    image: tuple[str, str, str, dict[str, str]],
    proxy: FaultProxy,
    tmp_path: Path,
    method: str,
    faults: list[Fault],
    light: bool,
) -> None:
    repo, tag, good, _ = image
    proxy.program(MANIFEST, *faults, method=method)
    sleeps = Sleeps()
    lock = tmp_path / "images.lock.yaml"
    with _client(sleeps, light) as client:
        pin = client.pin(f"{proxy.addr}/{repo}:{tag}")
    update(lock, [pin])
    assert load(lock)[f"{proxy.addr}/{repo}:{tag}"].digest == good
    # every programmed fault cost one retry (an unprogrammed slow answer may cost another)
    assert len(sleeps) >= len(faults)
    if faults[0].retry_after:
        assert sleeps[0] == 2.0  # Retry-After honoured, not the tiny backoff
    assert [k for _, _, k in proxy.log if k != "pass"] == [f.kind for f in faults]


def test_persistent_503_gives_up_after_bounded_attempts(
    image: tuple[str, str, str, dict[str, str]], proxy: FaultProxy, light: bool
) -> None:
    repo, tag, _, _ = image
    proxy.program(MANIFEST, *[Fault("status", 503)] * 10)
    sleeps = Sleeps()
    with (
        _client(sleeps, light) as client,
        pytest.raises(RegistryError, match="failed after 4 attempts") as info,
    ):
        client.resolve(f"{proxy.addr}/{repo}:{tag}")
    assert "\n" not in str(info.value) and len(sleeps) == 3
    assert all(s <= 0.05 for s in sleeps)  # bounded backoff


def test_retry_after_is_capped(
    image: tuple[str, str, str, dict[str, str]], proxy: FaultProxy
) -> None:
    repo, tag, good, _ = image
    proxy.program(MANIFEST, Fault("status", 429, retry_after="86400"))
    sleeps = Sleeps()
    with RegistryClient(
        retry=RetryPolicy(base_s=0.01, max_retry_after_s=0.5), sleep=sleeps
    ) as client:
        assert client.resolve(f"{proxy.addr}/{repo}:{tag}").digest == good
    assert sleeps == [0.5]


def test_head_without_digest_header_falls_back_to_get_and_hash(
    image: tuple[str, str, str, dict[str, str]], proxy: FaultProxy
) -> None:
    repo, tag, good, _ = image
    proxy.program(MANIFEST, Fault("strip-digest"), method="HEAD")
    with _client(Sleeps()) as client:
        assert client.resolve(f"{proxy.addr}/{repo}:{tag}").digest == good
        assert client.requests["GET manifest"] == 1


BIG = 5 * 1024 * 1024
FATAL = [
    pytest.param([("GET", Fault("lie-digest"))], DigestMismatch, "hash to", id="lying-digest-get"),
    pytest.param(
        [("HEAD", Fault("lie-digest"))], RegistryError, "not found", id="lying-digest-head"
    ),
    pytest.param(
        [("GET", Fault("oversize", size=BIG))], RegistryError, "cap", id="oversize-length"
    ),
    pytest.param(
        [("GET", Fault("oversize", size=BIG, chunked=True))],
        RegistryError,
        "cap",
        id="oversize-chunked",
    ),
    # consistent header + garbage body: only parsing can catch it (GET-by-tag fallback path)
    pytest.param(
        [("HEAD", Fault("strip-digest")), ("GET", Fault("invalid-json"))],
        ImageError,
        "not valid JSON",
        id="invalid-json",
    ),
    # CVE-2021-41190 class: a document with both `manifests` and `config`/`layers` and no
    # mediaType is refused whatever the Content-Type says (containerd's rule)
    pytest.param(
        [("HEAD", Fault("strip-digest")), ("GET", Fault("ambiguous", media_type=OCI_INDEX))],
        ImageError,
        "ambiguous",
        id="ambiguous-as-index",
    ),
    pytest.param(
        [("HEAD", Fault("strip-digest")), ("GET", Fault("ambiguous", media_type=OCI_MANIFEST))],
        ImageError,
        "ambiguous",
        id="ambiguous-as-manifest",
    ),
    # the same garbage fetched by digest fails the re-hash first
    pytest.param(
        [("GET", Fault("invalid-json"))], DigestMismatch, "hashes to", id="invalid-json-by-digest"
    ),
]


@pytest.mark.parametrize(("faults", "error", "message"), FATAL)
def test_fatal_faults_never_reach_the_lock(
    image: tuple[str, str, str, dict[str, str]],
    proxy: FaultProxy,
    tmp_path: Path,
    faults: list[tuple[str, Fault]],
    error: type[Exception],
    message: str,
    light: bool,
) -> None:
    repo, tag, good, _ = image
    lock = tmp_path / "images.lock.yaml"
    ref = f"{proxy.addr}/{repo}:{tag}"
    with _client(Sleeps(), light) as client:
        update(lock, [client.pin(ref)])
        before = lock.read_bytes()
        for method, fault in faults:
            proxy.program(MANIFEST, fault, method=method)
        with pytest.raises(error, match=message) as info:
            update(lock, [client.pin(ref)])
    assert "\n" not in str(info.value)
    assert lock.read_bytes() == before and load(lock)[ref].digest == good


def test_lying_child_manifest_in_index_is_refused(
    image: tuple[str, str, str, dict[str, str]], proxy: FaultProxy
) -> None:
    repo, _, _, children = image
    proxy.program(rf"/manifests/{children['linux/amd64']}", Fault("lie-digest"), method="GET")
    with _client(Sleeps()) as client, pytest.raises(DigestMismatch):
        client.pin(f"{proxy.addr}/{repo}:multi")


def test_small_config_cap_is_enforced(
    image: tuple[str, str, str, dict[str, str]], registry: str
) -> None:
    repo, tag, _, _ = image
    with (
        RegistryClient(limits=Limits(config_bytes=16)) as client,
        pytest.raises(RegistryError, match="cap"),
    ):
        client.pin(f"{registry}/{repo}:{tag}")


def test_cli_pin_with_lying_registry_exits_1_and_writes_nothing(
    image: tuple[str, str, str, dict[str, str]],
    proxy: FaultProxy,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, tag, _, _ = image
    proxy.program(MANIFEST, Fault("lie-digest"), method="GET")
    lock = tmp_path / "images.lock.yaml"
    assert cli(["images", "pin", f"{proxy.addr}/{repo}:{tag}", "--lock", str(lock)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not pinned" in err
    assert not lock.exists()


@pytest.mark.parametrize("kind", ["drip", "drip-headers"])
def test_dripping_server_cannot_outlast_the_overall_deadline(
    image: tuple[str, str, str, dict[str, str]], proxy: FaultProxy, light: bool, kind: str
) -> None:
    """17.8: one byte every 0.8 s never trips a 2 s read timeout; the overall deadline does,
    whether the body or the status line and headers drip."""
    import time

    repo, tag, _, _ = image
    proxy.program(MANIFEST, *[Fault(kind, delay=0.8)] * 4, method="GET")
    with RegistryClient(timeout=2.0, light=light) as client:
        started = time.monotonic()
        with pytest.raises(RegistryError, match="deadline") as info:
            client.pin(f"{proxy.addr}/{repo}:{tag}")
        elapsed = time.monotonic() - started
    assert elapsed < 4.0, f"a 2 s request lasted {elapsed:.1f} s"
    assert "\n" not in str(info.value) and info.value.exit_code == 2
