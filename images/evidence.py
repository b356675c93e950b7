"""The image's own evidence of when it was built: the config's `created`, cached by digest.

Commit-addressed tags (`vllm/vllm-openai-rocm:nightly-<sha>`) say nothing about their order, so
the newest is the one whose image config says it was created last. Tags move, digests do not:
every candidate costs one GET of its manifest (bytes and digest; concurrently, bounded by the
client's `concurrency`), and only a digest not yet in the cache costs the rest of a verified pin
(the platform manifest of an index, one config blob). The cache is a JSON file
`{digest: created}` written atomically; a damaged cache is ignored (rebuilt), never trusted.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import instant, jsonload
from ..core.files import write_atomic
from ..core.reference import Reference
from .nightly import NightlyTag, matching, newest_of
from .registry import RegistryClient

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_ENTRIES = 100_000


def load_cache(path: Path | None) -> dict[str, str]:
    """The cache at `path`, or empty when absent or unreadable (it is only a cache)."""
    if path is None or not path.is_file():
        return {}
    try:
        doc = jsonload.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(doc, dict):
        return {}
    items = list(doc.items())[:_MAX_ENTRIES]
    return {
        k: v
        for k, v in items
        if isinstance(k, str) and isinstance(v, str) and _DIGEST.fullmatch(k) and _utc(v) == v
    }


def created_times(
    client: RegistryClient,
    repository: Reference,
    tags: Sequence[str],
    cache: dict[str, str],
    platform: str | None = None,
) -> dict[str, str | None]:
    """`{tag: created}` for `tags` of `repository`; fills `cache` with what it fetched.

    A created time that is absent or not an RFC 3339 timestamp is None (that tag is never the
    newest on no evidence).
    """

    def created_of(tag: str) -> tuple[str, str | None]:
        ref = repository.with_tag(tag)
        body, media_type, digest = client.manifest(ref, tag)  # one GET: bytes and digest
        if digest not in cache:
            pin = client.pin_manifest(str(ref), ref, body, media_type, digest, platform)
            when = _utc(pin.created) if pin.created else None
            if when is not None:
                with lock:
                    cache[digest] = when
        return digest, cache.get(digest)

    lock = threading.Lock()
    found = client.map(created_of, list(tags))
    return {tag: created for tag, (_, created) in zip(tags, found, strict=True)}


def _utc(created: str) -> str | None:
    """RFC 3339 -> UTC `YYYY-MM-DDTHH:MM:SS.ffffffZ` (the cache's one spelling, through the one
    parser of instants, `core.instant`); None for a time that is not one (nanoseconds, which
    docker writes, are cut to microseconds)."""
    when = instant.parse_or_none(created)
    return None if when is None else when.replace(tzinfo=None).isoformat("T", "microseconds") + "Z"


def save_cache(path: Path | None, cache: Mapping[str, str]) -> None:
    if path is None:
        return
    os.makedirs(path.parent, exist_ok=True)
    write_atomic(path, json.dumps(dict(sorted(cache.items())), indent=0) + "\n")


def default_cache_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/relpipe/image-created.json` (default `~/.cache`)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "relpipe" / "image-created.json"


@dataclass(frozen=True, kw_only=True)
class Choice:
    """The newest build of a family in a repository, and what it was chosen among."""

    best: NightlyTag | None
    matching: int
    total: int


def choose_newest(
    client: RegistryClient,
    repository: Reference,
    selector: str,
    *,
    page_size: int = 1000,
    cache_path: Path | None = None,
    platform: str | None = None,
) -> Choice:
    """List the tags (all pages), keep the family's, order them (by `created` where the family
    says so: one config fetch per digest not in the cache) and take the newest."""
    tags = client.list_tags(repository, page_size=page_size)
    cache = load_cache(cache_path)
    before = len(cache)

    def evidence(found: list[str]) -> dict[str, str | None]:
        return created_times(client, repository, found, cache, platform)

    found = matching(tags, selector, evidence)
    best = newest_of(found, selector)
    if len(cache) != before:
        save_cache(cache_path, cache)
    return Choice(best=best, matching=len(found), total=len(tags))
