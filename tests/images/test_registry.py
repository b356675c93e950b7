"""RegistryClient against the real distribution registry: push, resolve, pin, list, skopeo."""

from __future__ import annotations

import json

import httpx
import pytest
from registry_support import FaultProxy, push_image, push_index, skopeo_digest, unique_repo

from relpipe.images.manifest import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    ManifestError,
    sha256_digest,
)
from relpipe.images.registry import RegistryClient, RegistryError
from relpipe.pipeline.cli import main as cli

pytestmark = pytest.mark.services


@pytest.fixture
def client() -> RegistryClient:
    with RegistryClient() as c:
        yield c


def _raw_get(registry: str, repo_path: str, reference: str, accept: str) -> bytes:
    url = f"http://{registry}/v2/{repo_path}/manifests/{reference}"
    return httpx.get(url, headers={"Accept": accept}).content


@pytest.mark.parametrize("oci", [False, True], ids=["docker-v2", "oci"])
def test_single_manifest_digest_matches_skopeo_and_raw_bytes(
    registry: str, client: RegistryClient, oci: bool
) -> None:
    repo = unique_repo(registry, "single")
    pushed = push_image(client, repo, "nightly_202610070333", oci=oci, labels={"a": "b"})
    ref = f"{repo}:nightly_202610070333"
    resolved = client.resolve(ref)
    raw = _raw_get(registry, repo.split("/", 1)[1], "nightly_202610070333", pushed.media_type)
    assert resolved.digest == pushed.digest == sha256_digest(raw) == skopeo_digest(ref)
    assert resolved.media_type == (OCI_MANIFEST if oci else DOCKER_MANIFEST)
    assert resolved.platform is None and resolved.platform_digest == pushed.digest
    pin = client.pin(ref)
    assert pin.digest == pushed.digest and pin.platform_digest == pushed.digest
    assert pin.platform == "linux/amd64"
    assert pin.config_digest == pushed.config_digest
    assert pin.created == "2026-10-07T03:33:00Z"
    assert pin.labels == (("a", "b"),)
    assert "PATH=/usr/bin" in pin.env
    assert str(pin.reference) == f"{ref}@{pushed.digest}"


@pytest.mark.parametrize("oci", [True, False], ids=["oci-index", "docker-list"])
def test_index_selects_platform_and_skips_attestation(
    registry: str, client: RegistryClient, oci: bool
) -> None:
    repo = unique_repo(registry, "index")
    pushed = push_index(client, repo, "multi", oci=oci, attestation=oci)
    children = dict(pushed.children)
    ref = f"{repo}:multi"
    resolved = client.resolve(ref)
    assert resolved.digest == pushed.digest == skopeo_digest(ref)
    assert resolved.media_type == (OCI_INDEX if oci else DOCKER_LIST)
    assert (resolved.platform, resolved.platform_digest) == ("linux/amd64", children["linux/amd64"])
    pin = client.pin(ref, platform="linux/arm64")
    assert pin.digest == pushed.digest  # what `docker pull repo@digest` uses
    assert (pin.platform, pin.platform_digest) == ("linux/arm64", children["linux/arm64"])
    # skopeo's per-platform choice agrees with ours
    assert skopeo_digest(f"{repo}@{children['linux/arm64']}") == children["linux/arm64"]
    with pytest.raises(ManifestError, match="no manifest for platform unknown/unknown"):
        client.pin(ref, platform="unknown/unknown")


def test_resolve_by_digest_and_unknown_tag(registry: str, client: RegistryClient) -> None:
    repo = unique_repo(registry, "bydigest")
    pushed = push_image(client, repo, "t1")
    by_digest = client.pin(f"{repo}@{pushed.digest}")
    assert by_digest.digest == pushed.digest
    with pytest.raises(RegistryError, match=r"manifest nope not found \(HTTP 404\)") as info:
        client.resolve(f"{repo}:nope")
    assert info.value.exit_code == 1 and "\n" not in str(info.value)


@pytest.mark.parametrize("light", [False, True], ids=["httpx", "light"])
def test_resolve_many_is_one_head_per_tag(registry: str, light: bool) -> None:
    with RegistryClient() as pusher:
        repo = unique_repo(registry, "many")
        pushed = [
            push_image(pusher, repo, f"nightly_2026100{i}0000", seed=str(i)) for i in range(1, 9)
        ]
    with RegistryClient(light=light) as client:
        results = client.resolve_many([f"{repo}:nightly_2026100{i}0000" for i in range(1, 9)])
        assert [r.digest for r in results] == [p.digest for p in pushed]
        # no ping: an anonymous registry answers the HEADs; a challenge is learned from a 401
        assert client.requests == {"HEAD manifest": 8}


def test_list_tags_follows_link_pagination(registry: str, client: RegistryClient) -> None:
    repo = unique_repo(registry, "pages")
    first = push_image(client, repo, "t000")
    for i in range(1, 23):  # re-tag the same manifest: pagination is about tags
        client.put_manifest(repo, f"t{i:03d}", first.data, DOCKER_MANIFEST)
    proxy = FaultProxy(registry, paginate_tags=True)
    try:
        with RegistryClient() as via_proxy:
            tags = via_proxy.list_tags(repo.replace(registry, proxy.addr), page_size=5)
            assert tags == [f"t{i:03d}" for i in range(23)]
            assert via_proxy.requests["GET tags"] == 5
    finally:
        proxy.close()
    # the real registry (distribution 2.8) answers in one page, in its own order
    assert sorted(client.list_tags(repo, page_size=5)) == [f"t{i:03d}" for i in range(23)]


def test_cli_resolve_json(
    registry: str, client: RegistryClient, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = unique_repo(registry, "cli")
    single = push_image(client, repo, "one")
    multi = push_index(client, repo, "two")
    assert cli(["images", "resolve", f"{repo}:one", f"{repo}:two", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == [
        {
            "ref": f"{repo}:one",
            "digest": single.digest,
            "media-type": DOCKER_MANIFEST,
            "platform": None,
            "platform-digest": single.digest,
        },
        {
            "ref": f"{repo}:two",
            "digest": multi.digest,
            "media-type": OCI_INDEX,
            "platform": "linux/amd64",
            "platform-digest": dict(multi.children)["linux/amd64"],
        },
    ]


def test_cli_errors_are_one_line(registry: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["images", "resolve", "Bad/Name:x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "must be lowercase" in err
    repo = unique_repo(registry, "missing")
    assert cli(["images", "resolve", f"{repo}:gone"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not found" in err


def test_put_manifest_refuses_when_registry_digest_differs(
    registry: str, client: RegistryClient
) -> None:
    repo = unique_repo(registry, "refuse")
    with pytest.raises(RegistryError, match="HTTP 400"):
        client.put_manifest(repo, "bad", b'{"schemaVersion": 2}', DOCKER_MANIFEST)
