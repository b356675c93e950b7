"""`images.lock.yaml`: the record of pinned images in a benchmark repository.

One mapping per pinned `registry/repository:tag` (sorted), each with `digest` (what
`docker pull repo@digest` uses: the index digest for multi-platform tags), `platform`,
`platform-digest`, `media-type`, `resolved-at`, `created` and `facts` (merged in later by the
probe). Only `Pinned` records (digests re-hashed from fetched bytes) can enter the file; writes are
atomic (temp file + fsync + rename) under an exclusive lock so concurrent pins never lose entries.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from ..core import instant
from ..core.files import file_lock, write_atomic
from ..core.pin import Pin
from ..core.reference import InvalidReference, Reference, parse
from ..core.yamlload import load_yaml
from .errors import ImageError
from .registry import Pinned

DEFAULT_LOCK = "images.lock.yaml"
HEADER = (
    "# images.lock.yaml: written by `relpipe images pin`; digests are verified, "
    "do not edit by hand.\n"
)
MAX_LOCK_BYTES = 16 * 1024 * 1024
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_FIELDS = (
    "digest",
    "platform",
    "platform-digest",
    "media-type",
    "resolved-at",
    "created",
    "facts",
    "archive",
)


class LockError(ImageError):
    """The lock file is malformed or disagrees with what is being merged (checked failure)."""

    exit_code = 1


def key_for(ref: Reference) -> str:
    """Lock key of a reference: by tag when it has one, else by digest."""
    if ref.tag or not ref.digest:
        return ref.tagged()
    return f"{ref.name}@{ref.digest}"


def entry_from_pin(pin: Pinned) -> Pin:
    return Pin(
        key=key_for(pin.reference),
        digest=pin.digest,
        platform=pin.platform,
        platform_digest=pin.platform_digest,
        media_type=pin.media_type,
        resolved_at=pin.resolved_at,
        created=pin.created,
        facts={},
    )


def _opt_str(raw: Mapping[str, Any], name: str, key: str) -> str | None:
    value = raw.get(name)
    if value is not None and not isinstance(value, str):
        raise LockError(f"lock entry {key}: {name} must be a string")
    return value


def _digest_field(raw: Mapping[str, Any], name: str, key: str, path: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise LockError(f"{path}: entry {key}: {name} must be sha256:<64 hex>")
    return value


def _archive_field(value: Any, key: str, path: str) -> dict[str, str] | None:
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or set(value) != {"registry", "archived-at"}
        or not all(isinstance(v, str) for v in value.values())
    ):
        raise LockError(
            f"{path}: entry {key}: archive must map registry and archived-at to strings"
        )
    try:
        parse(f"{value['registry']}/x")
    except InvalidReference:
        raise LockError(f"{path}: entry {key}: archive registry {value['registry']!r}") from None
    return dict(value)


def parse_lock(data: bytes, path: str = DEFAULT_LOCK) -> dict[str, Pin]:
    """Parse and validate lock bytes; every digest is checked for shape."""
    if len(data) > MAX_LOCK_BYTES:
        raise LockError(f"{path}: larger than {MAX_LOCK_BYTES} bytes; refusing")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"{path}: not UTF-8") from None
    doc = load_yaml(text, path, max_bytes=MAX_LOCK_BYTES, error=LockError)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise LockError(f"{path}: top level must be a mapping of repository:tag to entries")
    out: dict[str, Pin] = {}
    for key, raw in doc.items():
        if not isinstance(key, str) or not isinstance(raw, dict):
            raise LockError(f"{path}: entry {key!r} must map a reference string to a mapping")
        unknown = set(raw) - set(_FIELDS)
        if unknown:
            raise LockError(f"{path}: entry {key}: unknown fields {sorted(unknown)}")
        digest = _digest_field(raw, "digest", key, path)
        pdigest = _digest_field(raw, "platform-digest", key, path)
        try:
            ref = parse(key)
        except InvalidReference as exc:
            raise LockError(f"{path}: entry key {key!r}: {exc}") from None
        if key != key_for(ref):
            raise LockError(
                f"{path}: entry key {key!r} is not normalised (expected {key_for(ref)!r})"
            )
        if ref.digest and ref.digest != digest:
            raise LockError(f"{path}: entry {key}: digest does not match the key's digest")
        facts = raw.get("facts") or {}
        if not isinstance(facts, dict):
            raise LockError(f"{path}: entry {key}: facts must be a mapping")
        media_type = raw.get("media-type")
        resolved_at = raw.get("resolved-at")
        if not isinstance(media_type, str) or not isinstance(resolved_at, str):
            raise LockError(f"{path}: entry {key}: media-type and resolved-at are required strings")
        out[key] = Pin(
            key=key,
            digest=digest,
            platform=_opt_str(raw, "platform", key),
            platform_digest=pdigest,
            media_type=media_type,
            resolved_at=resolved_at,
            created=_opt_str(raw, "created", key),
            facts=facts,
            archive=_archive_field(raw.get("archive"), key, path),
        )
    return out


def render(entries: Mapping[str, Pin]) -> str:
    """Deterministic text: sorted keys, fixed field order, sorted facts."""
    doc = {key: entries[key].to_yaml() for key in sorted(entries)}
    body = (
        yaml.safe_dump(
            doc, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000
        )
        if doc
        else ""
    )
    return HEADER + body


def load(path: str | os.PathLike[str]) -> dict[str, Pin]:
    p = Path(path)
    if not p.exists():
        return {}
    return parse_lock(p.read_bytes(), str(p))


def lookup(entries: Mapping[str, Pin], ref: str | Reference) -> Pin | None:
    return entries.get(key_for(parse(ref)))


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def locked(path: str | os.PathLike[str]) -> AbstractContextManager[None]:
    """The lock `update` and `merge_facts` hold, for a writer that replaces the file whole with
    other files in one change (a release); it must not call `update` while holding it."""
    return file_lock(_lock_path(Path(path)), what="lock-file lock", error=LockError)


def update(path: str | os.PathLike[str], pins: Iterable[Pinned]) -> dict[str, Pin]:
    """Add or replace entries for `pins`; facts survive only when the digest is unchanged."""
    p = Path(path)
    with locked(p):
        entries = load(p)
        for pin in pins:
            new = entry_from_pin(pin)
            old = entries.get(new.key)
            if old is not None and old.digest == new.digest:
                new = replace(new, facts=old.facts, archive=old.archive)
            entries[new.key] = new
        write_atomic(p, render(entries).encode("utf-8"))
    return entries


def merge_facts(
    path: str | os.PathLike[str], ref: str | Reference, digest: str, facts: Mapping[str, Any]
) -> Pin:
    """Merge probe facts into the entry of `ref`, refusing when the probed digest differs."""

    def merged(p: Path, key: str, entry: Pin) -> Pin:
        if digest not in (entry.digest, entry.platform_digest):
            raise LockError(
                f"{p}: facts are for {digest} but {key} is pinned to {entry.digest}; re-pin first"
            )
        return replace(entry, facts={**entry.facts, **facts})

    return _update(path, ref, merged)


def set_archive(
    path: str | os.PathLike[str], ref: str | Reference, digest: str, registry: str
) -> Pin:
    """Record that `ref`'s pinned `digest` is kept byte for byte on `registry`."""

    def archived(p: Path, key: str, entry: Pin) -> Pin:
        if digest != entry.digest:
            raise LockError(f"{p}: {key} is pinned to {entry.digest}, not the archived {digest}")
        when = instant.text(instant.now())
        return replace(entry, archive={"registry": registry, "archived-at": when})

    return _update(path, ref, archived)


def _update(
    path: str | os.PathLike[str],
    ref: str | Reference,
    change: Callable[[Path, str, Pin], Pin],
) -> Pin:
    """Replace the pinned entry of `ref` with `change(path, key, entry)`, under the lock file's
    lock, atomically; a ref with no entry is refused."""
    p = Path(path)
    with locked(p):
        entries = load(p)
        key = key_for(parse(ref))
        entry = entries.get(key)
        if entry is None:
            raise LockError(f"{p}: no entry for {key}; run `relpipe images pin {key}` first")
        entries[key] = change(p, key, entry)
        write_atomic(p, render(entries).encode("utf-8"))
    return entries[key]
