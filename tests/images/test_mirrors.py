"""Registry mirrors and the shared registry options, against the real loopback registry.

The loopback registry plays a mirror of docker.io: images are pushed under their canonical
repository names, resolved and pinned by those names, and nothing recorded names the mirror.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from registry_support import FaultProxy, push_image, unique_repo

from relpipe.images.lock import load
from relpipe.images.options import (
    MIRRORS_ENV,
    Mirror,
    OptionError,
    add_registry_args,
    apply_registry_args,
    mirrors_from_env,
    parse_mirror,
    physical,
)
from relpipe.images.registry import RegistryClient, RegistryError, RetryPolicy
from relpipe.pipeline.cli import main as cli

pytestmark = pytest.mark.services


def test_parse_mirror_forms() -> None:
    assert parse_mirror("docker.io=127.0.0.1:5000") == Mirror(
        source="docker.io", host="127.0.0.1:5000"
    )
    assert parse_mirror("index.docker.io=https://mirror.example.com/") == Mirror(
        source="docker.io", host="mirror.example.com", scheme="https"
    )
    assert parse_mirror("ghcr.io=http://cache.lan:5000").scheme == "http"
    for bad in ("docker.io", "=x", "docker.io=h/path", "docker.io=UPPER CASE"):
        with pytest.raises(OptionError):
            parse_mirror(bad)


def test_precedence_daemon_json_then_env(tmp_path: Path) -> None:
    daemon = tmp_path / "daemon.json"
    daemon.write_text(json.dumps({"registry-mirrors": ["https://mirror.gcr.io", "https://b.io"]}))
    env = {"RELPIPE_DOCKER_DAEMON_CONFIG": str(daemon)}
    assert mirrors_from_env(env)["docker.io"].host == "mirror.gcr.io"
    env[MIRRORS_ENV] = "docker.io=127.0.0.1:1,quay.io=127.0.0.1:2"
    found = mirrors_from_env(env)
    assert (found["docker.io"].host, found["quay.io"].host) == ("127.0.0.1:1", "127.0.0.1:2")
    daemon.write_text("{not json")
    with pytest.raises(OptionError, match="not valid JSON"):
        mirrors_from_env({"RELPIPE_DOCKER_DAEMON_CONFIG": str(daemon)})


def test_cli_options_reach_the_environment(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_registry_args(parser)
    args = parser.parse_args(
        [
            "--registry-mirror",
            "docker.io=127.0.0.1:9",
            "--insecure-registry",
            "h:1",
            "--platform",
            "linux/arm64",
        ]
    )
    env: dict[str, str] = {"RELPIPE_DOCKER_DAEMON_CONFIG": str(tmp_path / "none.json")}
    apply_registry_args(args, env)
    assert env[MIRRORS_ENV] == "docker.io=127.0.0.1:9"
    assert env["RELPIPE_INSECURE_REGISTRIES"] == "h:1"
    assert env["RELPIPE_PLATFORM"] == "linux/arm64"
    assert physical("rocm/atom-dev@sha256:" + "a" * 64, env) == (
        "127.0.0.1:9/rocm/atom-dev@sha256:" + "a" * 64
    )
    assert physical("ghcr.io/x/y:1", env) == "ghcr.io/x/y:1"
    with pytest.raises(OptionError, match="--ca-bundle"):
        apply_registry_args(parser.parse_args(["--ca-bundle", str(tmp_path / "no.pem")]), env)


def _canonical(registry: str, name: str) -> tuple[str, str]:
    """(path pushed to the mirror, canonical docker.io name without registry)."""
    repo = unique_repo(registry, name)
    return repo, repo.split("/", 1)[1]


@pytest.mark.parametrize("light", [False, True], ids=["httpx", "light"])
def test_mirror_serves_canonical_names(registry: str, light: bool) -> None:
    mirror_path, name = _canonical(registry, "mirror")
    with RegistryClient() as pusher:
        pushed = push_image(pusher, mirror_path, "nightly_202610070333")
    with RegistryClient(mirrors={"docker.io": registry}, light=light) as client:
        resolved = client.resolve(f"{name}:nightly_202610070333")
        assert resolved.digest == pushed.digest
        assert resolved.ref == f"{name}:nightly_202610070333"
        assert resolved.reference.registry == "docker.io"
        if not light:
            pin = client.pin(f"{name}:nightly_202610070333")
            assert pin.digest == pushed.digest
            assert str(pin.reference) == f"docker.io/{name}:nightly_202610070333@{pushed.digest}"


def test_cli_pin_through_mirror_records_only_canonical_names(
    registry: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(MIRRORS_ENV, raising=False)  # restored after the CLI exported it
    mirror_path, name = _canonical(registry, "mirror-cli")
    with RegistryClient() as pusher:
        pushed = push_image(pusher, mirror_path, "nightly_202610070333")
    lock = tmp_path / "images.lock.yaml"
    ref = f"{name}:nightly_202610070333"
    code = cli(
        ["images", "pin", ref, "--lock", str(lock), "--registry-mirror", f"docker.io={registry}"]
    )
    assert code == 0, capsys.readouterr().err
    text = lock.read_text()
    assert "127.0.0.1" not in text and registry not in capsys.readouterr().out
    assert load(lock)[f"docker.io/{ref}"].digest == pushed.digest


def test_docker_hub_credentials_never_go_to_its_mirror(registry: str) -> None:
    proxy = FaultProxy(registry, basic=("mirror-user", "mirror-pass"))
    try:
        env = {
            "RELPIPE_REGISTRY_USERNAME": "hub-user",
            "RELPIPE_REGISTRY_PASSWORD": "hub-Secret-9",
            "RELPIPE_REGISTRY_AUTH_HOST": "docker.io",
            "HOME": "/nonexistent",
        }
        with (
            RegistryClient(
                mirrors={"docker.io": proxy.addr}, env=env, retry=RetryPolicy(attempts=1)
            ) as client,
            pytest.raises(RegistryError, match="needs credentials") as info,
        ):
            client.resolve("relpipe-t3/anything:v1")
    finally:
        proxy.close()
    assert proxy.addr in str(info.value) and "hub-Secret-9" not in str(info.value)


@pytest.mark.parametrize(
    "command",
    [
        ["images", "resolve"],
        ["images", "pin"],
        ["images", "latest"],
        ["qualify"],
        ["nightly"],
        ["release"],
        ["fixtures", "build"],
        ["diff"],
    ],
    ids=" ".join,
)
def test_every_registry_command_offers_the_registry_options(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The TLS error says "pass --ca-bundle": every command that talks to a registry has it."""
    with pytest.raises(SystemExit) as info:
        cli([*command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in (
        "--registry-mirror SRC=DST",
        "--ca-bundle PEM",
        "--insecure-registry",
        "--platform",
    ):
        assert option in out, f"relpipe {' '.join(command)} lacks {option}"
