"""Issue 17.1 against the real registry: credentials go only to the registry's own origin.

The registry's origin is a FaultProxy that demands Basic credentials in front of the shared
loopback registry; blob GETs are redirected to a StorageServer on another port (as S3 or a CDN
is). Whatever that other origin answers, it never sees a credential, and its challenge never
replaces the registry's. Both drivers (httpx and the light one) are held to it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from registry_support import Fault, FaultProxy, StorageServer, push_image, unique_repo

from relpipe.images.registry import RegistryClient, RegistryError, RetryPolicy

pytestmark = pytest.mark.services

USER, PASSWORD = "relpipe", "0rigin-Pa55word"
FAST = RetryPolicy(attempts=2, base_s=0.01, max_s=0.02)


@pytest.fixture(params=[False, True], ids=["httpx", "light"])
def light(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def proxy(registry: str) -> Iterator[FaultProxy]:
    p = FaultProxy(registry, basic=(USER, PASSWORD))
    yield p
    p.close()


def _client(proxy: FaultProxy, light: bool) -> RegistryClient:
    env = {
        "RELPIPE_REGISTRY_USERNAME": USER,
        "RELPIPE_REGISTRY_PASSWORD": PASSWORD,
        "RELPIPE_REGISTRY_AUTH_HOST": proxy.addr,
        "HOME": "/nonexistent",
    }
    return RegistryClient(env=env, retry=FAST, light=light)


def _image(registry: str) -> tuple[str, str]:
    with RegistryClient() as client:
        repo = unique_repo(registry, "origin")
        return repo.split("/", 1)[1], push_image(client, repo, "v1").digest


def test_foreign_challenge_after_redirect_gets_no_credentials(
    registry: str, proxy: FaultProxy, light: bool
) -> None:
    repo, good = _image(registry)
    storage = StorageServer(registry, challenge=True)
    try:
        proxy.program(r"/blobs/", Fault("redirect", location=storage.url), method="GET")
        ref = f"{proxy.addr}/{repo}:v1"
        with _client(proxy, light) as client:
            with pytest.raises(RegistryError, match="unauthorized") as info:
                client.pin(ref)
            # the registry's own challenge survived: the next request authenticates as before
            assert client.resolve(ref).digest == good
            assert "token" not in client.requests
    finally:
        storage.close()
    assert "\n" not in str(info.value) and PASSWORD not in str(info.value)
    assert storage.seen, "the redirect was followed"
    assert storage.credentials_seen() == []
    assert not [path for _, path, _ in storage.seen if path.startswith("/token")]


def test_redirect_to_storage_succeeds_without_credentials(
    registry: str, proxy: FaultProxy, light: bool
) -> None:
    repo, good = _image(registry)
    storage = StorageServer(registry)
    try:
        proxy.program(r"/blobs/", Fault("redirect", location=storage.url), method="GET")
        with _client(proxy, light) as client:
            pin = client.pin(f"{proxy.addr}/{repo}:v1")
    finally:
        storage.close()
    assert pin.digest == good
    assert [m for m, _, _ in storage.seen] == ["GET"]
    assert storage.credentials_seen() == []
