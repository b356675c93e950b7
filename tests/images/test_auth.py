"""Authentication against real registries: TLS (self-signed CA) + htpasswd basic auth, and
`auth: token` with a test token server (Docker Hub-style bearer flow, per-scope token cache).
Credentials must never appear in errors or reprs."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_support import (
    ExtraRegistry,
    TokenServer,
    push_image,
    skopeo_digest,
    start_tls_htpasswd_registry,
    start_token_registry,
    stop_registry,
    unique_repo,
)

from relpipe.images.registry import (
    Credentials,
    RegistryClient,
    RegistryError,
    RetryPolicy,
    load_credentials,
)

pytestmark = pytest.mark.services

USER, PASSWORD = "relpipe", "s3cret-Pa55word"
FAST = RetryPolicy(attempts=2, base_s=0.01, max_s=0.02)


def _env(addr: str, password: str = PASSWORD) -> dict[str, str]:
    return {
        "RELPIPE_REGISTRY_USERNAME": USER,
        "RELPIPE_REGISTRY_PASSWORD": password,
        "RELPIPE_REGISTRY_AUTH_HOST": addr,
        "HOME": "/nonexistent",
    }


@pytest.fixture(scope="module")
def tls_registry(
    tmp_path_factory: pytest.TempPathFactory, registry: str
) -> Iterator[ExtraRegistry]:
    del registry  # the main services must be up first (and fail in CI when they cannot be)
    reg = start_tls_htpasswd_registry(tmp_path_factory.mktemp("tls"), {USER: PASSWORD})
    yield reg
    stop_registry(reg)


@pytest.fixture(scope="module")
def token_setup(
    tmp_path_factory: pytest.TempPathFactory, registry: str
) -> Iterator[tuple[ExtraRegistry, TokenServer]]:
    del registry
    folder = tmp_path_factory.mktemp("token")
    server = TokenServer(folder, {USER: PASSWORD})
    reg = start_token_registry(folder, server)
    yield reg, server
    stop_registry(reg)
    server.close()


def _tls_client(reg: ExtraRegistry, env: dict[str, str]) -> RegistryClient:
    assert reg.ca is not None
    return RegistryClient(secure=[reg.addr], ca_bundle=reg.ca, env=env, retry=FAST)


def test_tls_basic_auth_push_resolve_pin(tls_registry: ExtraRegistry) -> None:
    with _tls_client(tls_registry, _env(tls_registry.addr)) as client:
        assert client.ping(tls_registry.addr + "/x") == "basic"
        repo = unique_repo(tls_registry.addr, "basic")
        pushed = push_image(client, repo, "v1")
        assert client.resolve(f"{repo}:v1").digest == pushed.digest
        assert client.pin(f"{repo}:v1").digest == pushed.digest
    # skopeo, with the same CA and credentials, sees the same digest
    certs = tls_registry.ca.parent / "certs.d"  # type: ignore[union-attr]
    certs.mkdir(exist_ok=True)
    (certs / "ca.crt").write_bytes(tls_registry.ca.read_bytes())  # type: ignore[union-attr]
    digest = skopeo_digest(f"{repo}:v1", f"--creds={USER}:{PASSWORD}", f"--cert-dir={certs}")
    assert digest == pushed.digest


def test_docker_config_auths_are_used(tls_registry: ExtraRegistry, tmp_path: Path) -> None:
    encoded = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    (tmp_path / "config.json").write_text(
        json.dumps({"auths": {tls_registry.addr: {"auth": encoded}}})
    )
    env = {"DOCKER_CONFIG": str(tmp_path)}
    assert load_credentials(tls_registry.addr, env) == Credentials(USER, PASSWORD)
    with _tls_client(tls_registry, env) as client:
        repo = unique_repo(tls_registry.addr, "dockercfg")
        pushed = push_image(client, repo, "v1")
        assert client.resolve(f"{repo}:v1").digest == pushed.digest


def test_missing_and_wrong_credentials_fail_in_one_line_without_the_password(
    tls_registry: ExtraRegistry,
) -> None:
    repo = f"{tls_registry.addr}/relpipe-t3/none:v1"
    with (
        _tls_client(tls_registry, {"HOME": "/nonexistent"}) as client,
        pytest.raises(RegistryError) as info,
    ):
        client.resolve(repo)
    assert "needs credentials" in str(info.value) and info.value.exit_code == 2
    wrong = "wr0ng-Pa55word-xyz"
    with _tls_client(tls_registry, _env(tls_registry.addr, wrong)) as client:
        with pytest.raises(RegistryError) as info:
            client.resolve(repo)
        creds = load_credentials(tls_registry.addr, _env(tls_registry.addr, wrong))
        text = f"{info.value} {info.value!r} {client!r} {creds!r}"
    assert "unauthorized" in str(info.value) and "\n" not in str(info.value)
    assert wrong not in text and PASSWORD not in text
    assert base64.b64encode(f"{USER}:{wrong}".encode()).decode() not in text


def test_tls_without_the_ca_is_refused(tls_registry: ExtraRegistry) -> None:
    with RegistryClient(
        secure=[tls_registry.addr], env=_env(tls_registry.addr), retry=FAST
    ) as client:
        with pytest.raises(RegistryError, match="TLS certificate not trusted.*--ca-bundle") as info:
            client.resolve(f"{tls_registry.addr}/relpipe-t3/x:v1")
    assert info.value.exit_code == 2


def test_token_flow_caches_one_token_per_scope(
    token_setup: tuple[ExtraRegistry, TokenServer],
) -> None:
    reg, server = token_setup
    repo = unique_repo(reg.addr, "token")
    other = unique_repo(reg.addr, "token-other")
    with RegistryClient(env=_env(reg.addr), retry=FAST) as client:
        assert client.ping(repo) == "bearer"
        pushed = [
            push_image(client, repo, f"nightly_2026100{i}0000", seed=str(i)) for i in range(5)
        ]
        results = client.resolve_many([f"{repo}:nightly_2026100{i}0000" for i in range(5)])
        assert [r.digest for r in results] == [p.digest for p in pushed]
        client.pin(f"{repo}:nightly_202610000000")
        push_image(client, other, "v1")
        client.resolve(f"{other}:v1")
        heads = client.requests["HEAD manifest"]
    name, other_name = repo.split("/", 1)[1], other.split("/", 1)[1]
    counts = server.scope_counts()
    assert counts[f"repository:{name}:pull,push"] == 1
    assert counts[f"repository:{name}:pull"] == 1
    assert counts[f"repository:{other_name}:pull"] == 1
    assert heads == 6 + 1  # one HEAD per resolved tag, plus the pin's


def test_token_server_access_token_field_and_expiry(tmp_path: Path, registry: str) -> None:
    del registry
    server = TokenServer(tmp_path, {USER: PASSWORD}, field="access_token", expires_in=3)
    reg = start_token_registry(tmp_path, server)
    try:
        repo = unique_repo(reg.addr, "access")
        with RegistryClient(env=_env(reg.addr), retry=FAST) as client:
            push_image(client, repo, "v1")
            client.resolve(f"{repo}:v1")
            client.resolve(f"{repo}:v1")
        # a token that expires within the safety margin is never reused
        assert server.scope_counts()[f"repository:{repo.split('/', 1)[1]}:pull"] == 2
    finally:
        stop_registry(reg)
        server.close()


def test_token_refused_is_one_line(token_setup: tuple[ExtraRegistry, TokenServer]) -> None:
    reg, _ = token_setup
    with (
        RegistryClient(env=_env(reg.addr, "nope-nope"), retry=FAST) as client,
        pytest.raises(RegistryError, match="token server refused") as info,
    ):
        client.resolve(f"{reg.addr}/relpipe-t3/x:v1")
    assert "nope-nope" not in str(info.value)


def test_env_credentials_need_a_host() -> None:
    with pytest.raises(RegistryError, match="RELPIPE_REGISTRY_AUTH_HOST"):
        load_credentials(
            "example.com", {"RELPIPE_REGISTRY_USERNAME": "u", "RELPIPE_REGISTRY_PASSWORD": "p"}
        )
    assert "p4ss" not in repr(Credentials("u", "p4ss"))


# -- credential helpers (credsStore / credHelpers), through the docker SDK ---------------------

HELPER = """#!/bin/sh
# A docker credential helper (the protocol of docker-credential-helpers): `get` reads the
# server URL on stdin and prints its credentials, or says they are not there.
read -r server
echo "$1 $server" >> "{log}"
if [ "$1" = get ] && [ "$server" = "{addr}" ]; then
  printf '{{"ServerURL":"%s","Username":"{user}","Secret":"{secret}"}}' "$server"
  exit 0
fi
echo "credentials not found in native keychain"
exit 1
"""


@pytest.mark.parametrize("kind", ["credsStore", "credHelpers"])
def test_docker_credential_helper_on_path_is_used(
    tls_registry: ExtraRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    bin_dir, log = tmp_path / "bin", tmp_path / "helper.log"
    bin_dir.mkdir()
    helper = bin_dir / "docker-credential-relpipetest"
    helper.write_text(HELPER.format(log=log, addr=tls_registry.addr, user=USER, secret=PASSWORD))
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = (
        {"credsStore": "relpipetest"}
        if kind == "credsStore"
        else {"credHelpers": {tls_registry.addr: "relpipetest"}}
    )
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {"DOCKER_CONFIG": str(tmp_path), "PATH": os.environ["PATH"]}
    assert load_credentials(tls_registry.addr, env) == Credentials(USER, PASSWORD)
    with _tls_client(tls_registry, env) as client:
        repo = unique_repo(tls_registry.addr, "helper")
        pushed = push_image(client, repo, "v1")
        assert client.pin(f"{repo}:v1").digest == pushed.digest
        text = repr(client)
    assert f"get {tls_registry.addr}" in log.read_text()
    assert PASSWORD not in text
    # a registry the helper does not know has no credentials (not an error)
    assert load_credentials("127.0.0.2:1", env) is None


def test_failing_credential_helper_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"credsStore": "relpipe-missing"}))
    env = {"DOCKER_CONFIG": str(tmp_path), "PATH": "/nonexistent"}
    with pytest.raises(RegistryError, match="credential helper") as info:
        load_credentials("example.com", env)
    assert "\n" not in str(info.value) and info.value.exit_code == 2
