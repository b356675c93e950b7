"""Keep what is pinned (`relpipe images archive`, `images.archive`): two loopback registries of
our own (a source and the team's archive; the shared one is left alone), a multi-platform image
with an attestation copied byte for byte, the source deleted upstream, and qualification and
release still pinning it, from the archive, under its canonical name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from registry_support import push_index

from relpipe.core.reference import parse
from relpipe.images import archive, services
from relpipe.images.manifest import parse_manifest
from relpipe.images.options import MIRRORS_ENV
from relpipe.images.registry import NotFound, RegistryClient
from relpipe.pipeline import pins
from relpipe.pipeline.commands.nightly import warn_stale_pins

pytestmark = pytest.mark.services
REPO = "rocm/vllm-openai-rocm"
TAG = "nightly-36768d1bfd39094681cdbc8cb37d4b31c0729c89"


@pytest.fixture(scope="module")
def two_registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("registries")
    source, source_pid = services.start_registry(root / "source", name="source")
    try:
        kept, kept_pid = services.start_registry(root / "archive", name="archive")
    except BaseException:
        services.stop_pid(source_pid)
        raise
    try:
        yield source, kept
    finally:
        services.stop_pid(kept_pid)
        services.stop_pid(source_pid)


def _everything(client: RegistryClient, ref: str, digest: str) -> dict[str, bytes]:
    """Every manifest and blob `digest` names, by digest, as the registry serves them."""
    out: dict[str, bytes] = {}
    body, media_type, _ = client.manifest(ref, digest)
    out[digest] = body
    doc = parse_manifest(body, media_type)
    for child in getattr(doc, "manifests", ()):
        out.update(_everything(client, ref, child.digest))
    for desc in (getattr(doc, "config", None), *getattr(doc, "layers", ())):
        if desc is not None:
            out[desc.digest] = client.blob(ref, desc.digest, desc.size, 1 << 20)
    return out


def _relpipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if k != MIRRORS_ENV},
    )


def _bench_repo(tmp_path: Path) -> Path:
    """A benchmark repository in InferenceX's layout (changelog.repository), with no keys."""
    work = tmp_path / "bench-repo"
    (work / "configs").mkdir(parents=True)
    (work / "configs" / "x-master.yaml").write_text("{}\n")
    return work


def test_archive_copies_every_byte_and_survives_upstream_deletion(
    two_registries: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, kept = two_registries
    canonical = f"{source}/{REPO}:{TAG}"
    with RegistryClient() as client:
        pushed = push_index(client, f"{source}/{REPO}", TAG, seed="archive")
    work = _bench_repo(tmp_path)
    assert _relpipe("images", "pin", canonical, cwd=work).returncode == 0
    proc = _relpipe("images", "archive", canonical, "--to", kept, "--json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    (copy,) = json.loads(proc.stdout)
    assert copy["digest"] == pushed.digest and copy["archive"] == kept
    assert copy["manifests"] == 4 and copy["blobs"] == 6  # index, 2 platforms + attestation
    # The pin and its archive are relpipe's state, not a file of the benchmark repository.
    assert not (work / "images.lock.yaml").exists()
    state = work / ".relpipe"
    entry = pins.load(None, state)[f"{source}/{REPO}:{TAG}"]
    assert entry.archive is not None and entry.archive["registry"] == kept
    with RegistryClient() as client:
        there = _everything(client, f"{source}/{REPO}", pushed.digest)
        here = _everything(client, f"{kept}/{REPO}", pushed.digest)
        assert here == there and len(here) == 10  # byte-identical, every platform
        # upstream deletes the nightly (by digest: the tag goes with it)
        client._request(  # noqa: SLF001 - the registry API has no client verb for deleting
            "DELETE",
            parse(f"{source}/{REPO}"),
            f"/v2/{REPO}/manifests/{pushed.digest}",
            kind="DELETE manifest",
        )
        with pytest.raises(NotFound):
            client.pin(canonical)

    # The nightly run says so.
    args = SimpleNamespace(repo=work, retention_days=14.0, state=None)
    warnings = warn_stale_pins(args)  # type: ignore[arg-type]
    assert warnings == [
        f"warning: pin {source}/{REPO}:{TAG}: the tag is gone upstream; archived at {kept}"
    ]

    # Qualification's pin and the release's re-pin take the archived copy, names canonical.
    monkeypatch.setenv(MIRRORS_ENV, "")  # restored after: the fallback routes this process
    with RegistryClient() as client:
        pin = archive.pin_or_archived(client, canonical, pins.load(None, state))
    assert pin.digest == pushed.digest and str(pin.reference).startswith(f"{source}/{REPO}:")
    assert os.environ[MIRRORS_ENV] == f"{source}={kept}"  # dockerd pulls it from the archive
    pins.record(None, state, [pin])  # the release's re-pin
    after = pins.load(None, state)
    assert list(after) == [f"{source}/{REPO}:{TAG}"]  # canonical key, no archive host in it
    assert after[f"{source}/{REPO}:{TAG}"].archive == entry.archive


def test_without_an_archive_a_deleted_pin_stays_an_error(
    two_registries: tuple[str, str], tmp_path: Path
) -> None:
    source, _ = two_registries
    ref = f"{source}/{REPO}:missing"
    with RegistryClient() as client, pytest.raises(NotFound):
        archive.pin_or_archived(client, ref, {})


def test_qualify_plan_pins_from_the_archive(
    two_registries: tuple[str, str], tmp_path: Path
) -> None:
    """`relpipe qualify REF --plan`: the plan names the canonical reference and the digest the
    lock recorded, read from the archive after upstream deleted it."""
    source, kept = two_registries
    tag = "nightly-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
    canonical = f"{source}/{REPO}:{tag}"
    with RegistryClient() as client:
        pushed = push_index(client, f"{source}/{REPO}", tag, seed="plan")
    work = _bench_repo(tmp_path)
    assert _relpipe("images", "pin", canonical, cwd=work).returncode == 0
    assert _relpipe("images", "archive", canonical, "--to", kept, cwd=work).returncode == 0
    with RegistryClient() as client:
        client._request(  # noqa: SLF001 - no client verb for deleting
            "DELETE",
            parse(f"{source}/{REPO}"),
            f"/v2/{REPO}/manifests/{pushed.digest}",
            kind="DELETE manifest",
        )
    out = tmp_path / "plan"
    proc = _relpipe(
        "qualify", canonical, "--plan", "--out", str(out), "--repo", str(work), cwd=work
    )
    assert proc.returncode == 0, proc.stderr
    assert f"gone upstream; using the archived copy of {pushed.digest} at {kept}" in proc.stderr
    plan = json.loads((out / "run.json").read_text())
    assert plan["image"]["digest"] == pushed.digest and plan["image"]["ref"] == canonical
    assert plan["image"]["pinned"] == f"{canonical}@{pushed.digest}"
