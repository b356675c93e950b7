"""Keep what is pinned: copy a pinned image to a registry the team controls, and use that copy
when upstream has deleted the tag or the digest (vLLM keeps nightlies about two weeks).

`archive` copies every byte a digest names (the index, every platform's manifest, configs and
layers, attestations included) to the same repository path on the archive registry, so the copy
has the same digests, and records the archive in the lock file (`archive: {registry,
archived-at}`). Every manifest and blob is re-hashed on the way. `pin_or_archived` pins a
reference as usual and, when upstream answers 404, pins the locked digest from the archive
instead and routes the registry to the archive as a mirror (`RELPIPE_REGISTRY_MIRRORS`), so
that dockerd pulls the same digest from there; names stay canonical everywhere. `stale_pins`
says which pinned tags have disappeared upstream or are older than a retention.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ..core import instant
from ..core.pin import Pin
from ..core.reference import Reference, parse
from . import lock as lockfile
from .manifest import Index, parse_manifest
from .options import MIRRORS_ENV, format_mirrors, mirrors_from_env, parse_mirror
from .registry import NotFound, Pinned, RegistryClient

MIB = 1024 * 1024
MAX_BLOB = 64 * 1024 * MIB  # a layer over 64 GiB is refused, not copied


@dataclass(frozen=True, kw_only=True)
class Archived:
    """What one `archive` call copied."""

    source: str  # canonical reference, digest-qualified
    archive: str  # the archive registry (host[:port])
    digest: str
    manifests: int
    blobs: int
    bytes: int


def archive(client: RegistryClient, ref: str | Reference, to: str) -> Archived:
    """Copy the image `ref` names (tag or digest; verified) to registry `to`, byte for byte."""
    source = parse(ref)
    pin = client.pin(source)  # the digest to keep: verified here
    dest = Reference(registry=to, repository=source.repository)
    counts = {"manifests": 0, "blobs": 0, "bytes": 0}
    _copy_manifest(client, source, dest, pin.digest, counts, top=True)
    if source.tag:  # the tag too, so the archive reads like the source
        body, media_type, _ = client.manifest(source, pin.digest)
        client.put_manifest(dest.name, source.tag, body, media_type or pin.media_type)
    return Archived(
        source=str(source.with_digest(pin.digest)),
        archive=to,
        digest=pin.digest,
        manifests=counts["manifests"],
        blobs=counts["blobs"],
        bytes=counts["bytes"],
    )


def _copy_manifest(
    client: RegistryClient,
    source: Reference,
    dest: Reference,
    digest: str,
    counts: dict[str, int],
    top: bool = False,
) -> None:
    body, media_type, _ = client.manifest(source, digest)
    doc = parse_manifest(body, media_type)
    if isinstance(doc, Index):
        for child in doc.manifests:  # every platform and attestation: all of it is the image
            _copy_manifest(client, source, dest, child.digest, counts)
    else:
        for desc in (doc.config, *doc.layers):
            data = client.blob(source, desc.digest, desc.size, MAX_BLOB)
            client.upload_blob(dest.name, data)
            counts["blobs"] += 1
            counts["bytes"] += len(data)
    client.put_manifest(dest.name, digest, body, media_type or doc.media_type)
    counts["manifests"] += 1


def record(lock_path: str | os.PathLike[str], ref: str | Reference, copy: Archived) -> None:
    """Record `copy` in the lock entry of `ref` (which must pin the archived digest)."""
    lockfile.set_archive(lock_path, ref, copy.digest, copy.archive)


def pin_or_archived(
    client: RegistryClient, ref: str | Reference, pinned: Mapping[str, Pin] | None
) -> Pinned:
    """`client.pin(ref)`, or, when upstream no longer has it, the pinned digest from the
    archive its pin names (verified; the canonical name kept). `pinned`: the pins relpipe keeps
    (its state, or a lock file), keyed as `images.lock` keys them."""
    try:
        return client.pin(ref)
    except NotFound:
        entry = _archived_entry(ref, pinned)
        if entry is None:
            raise
    archive_host = str(entry.archive["registry"])  # type: ignore[index]
    reference = parse(ref)
    _route(reference.registry, archive_host)
    with RegistryClient() as from_archive:
        pin = replace(from_archive.pin(reference.with_digest(entry.digest)), ref=str(ref))
    print(
        f"relpipe: {reference.name}: gone upstream; using the archived copy of {entry.digest} "
        f"at {archive_host}",
        file=sys.stderr,
    )
    return pin


def _archived_entry(ref: str | Reference, entries: Mapping[str, Pin] | None) -> Pin | None:
    if not entries:
        return None
    reference = parse(ref)
    entry = lockfile.lookup(entries, reference)
    if entry is None and reference.digest:
        same = [e for e in entries.values() if reference.digest in (e.digest, e.platform_digest)]
        entry = same[0] if same else None
    if entry is None or entry.archive is None:
        return None
    if reference.digest and reference.digest not in (entry.digest, entry.platform_digest):
        return None
    return entry


def _route(registry: str, archive_host: str) -> None:
    """Send `registry` to the archive for the rest of this process (dockerd pulls included)."""
    mirrors = mirrors_from_env(os.environ)
    mirrors[registry] = parse_mirror(f"{registry}={archive_host}")
    os.environ[MIRRORS_ENV] = format_mirrors(mirrors)


@dataclass(frozen=True, kw_only=True)
class Stale:
    key: str
    reason: str


def stale_pins(
    client: RegistryClient,
    entries: Mapping[str, Pin],
    retention_days: float,
    now: datetime | None = None,
) -> list[Stale]:
    """Pinned tags that disappeared upstream (or moved away from their digest), and pins
    older than `retention_days` (by `resolved-at`) that have no archive."""
    now = now or instant.now()
    out = []
    for key, entry in sorted(entries.items()):
        ref = parse(key)
        if ref.tag:
            try:
                client.resolve(ref)
            except NotFound:
                where = f"; archived at {entry.archive['registry']}" if entry.archive else ""
                out.append(Stale(key=key, reason=f"the tag is gone upstream{where}"))
                continue
        when = instant.parse_or_none(entry.resolved_at)
        if entry.archive is None and when and now - when > timedelta(days=retention_days):
            age = (now - when).days
            out.append(
                Stale(
                    key=key,
                    reason=f"pinned {age} days ago (retention {retention_days:g} days) and not "
                    "archived; run `relpipe images archive`",
                )
            )
    return out
