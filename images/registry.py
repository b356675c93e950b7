"""Registry client: the distribution HTTP API v2 (resolve, verified pins, tags, pushes).

The stack follows go-containerregistry's split: `reference` (names), `manifest` (documents),
`transport` (the HTTP engine: retries, overall deadline, size caps), `auth` (challenges, tokens,
credentials) and this module, the client: tag -> digest resolution, verified pinning (every
recorded digest is the sha256 of bytes fetched here), tag listing with pagination, and the push
side used by the fixture builder (`upload_blob`, `put_manifest`). How a request reaches a registry
(mirrors, schemes, credentials, the two drivers, redirects) is `images.connection`, which
`RegistryClient` extends.

Mirrors: `mirrors={"docker.io": "127.0.0.1:5000"}` sends every request for a docker.io reference
to the mirror; references, results, lock keys and messages keep the canonical name, and digests
are verified exactly as without a mirror.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from ..core import instant, jsoncodec, jsonload
from . import manifest
from .auth import (
    CAP_EXT,
    KIND_EXT,
    REGISTRY_EXT,
    Credentials,
    load_credentials,
    parse_challenge,
)
from .connection import RegistryConnection
from .mediatypes import ACCEPT, DEFAULT_PLATFORM, INDEX_TYPES, MANIFEST_TYPES

if TYPE_CHECKING:
    from .manifest import Platform
from ..core.reference import Reference, parse
from .options import CA_ENV
from .transport import (
    MIB,
    Limits,
    RegistryError,
    Request,
    Response,
    RetryPolicy,
    Timeouts,
    parse_retry_after,
    safe_url,
)

__all__ = [
    "CA_ENV",
    "Credentials",
    "DigestMismatch",
    "Limits",
    "NotFound",
    "Pinned",
    "RegistryClient",
    "RegistryError",
    "Resolved",
    "RetryPolicy",
    "Timeouts",
    "load_credentials",
    "parse_challenge",
    "parse_retry_after",
]

_T = TypeVar("_T")
_R = TypeVar("_R")


class DigestMismatch(RegistryError):
    """Fetched bytes do not hash to the digest the registry claimed: never pinned."""


class NotFound(RegistryError):
    """The registry answered 404: the tag, digest or repository is not (or no longer) there."""


# -- records ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """What `resolve` found for one reference (the header digest; `pin` re-hashes)."""

    ref: str  # as given
    reference: Reference
    digest: str
    media_type: str = field(metadata=jsoncodec.spec(key="media-type"))
    platform: str | None  # for indexes: the selected entry; for a single manifest: unknown (None)
    platform_digest: str = field(metadata=jsoncodec.spec(key="platform-digest"))

    def to_json(self) -> dict[str, Any]:
        """`relpipe images resolve --json`, spelled as the lock file spells it (less `reference`,
        which is `ref` parsed)."""
        return jsoncodec.fields_to_json(self, exclude=("reference",))


@dataclass(frozen=True, kw_only=True)
class Pinned:
    """A verified pin: every digest here is the sha256 of bytes fetched in this call."""

    ref: str
    reference: Reference  # with the digest set
    digest: str
    media_type: str
    platform: str | None
    platform_digest: str
    config_digest: str
    created: str | None
    labels: tuple[tuple[str, str], ...]
    env: tuple[str, ...]
    resolved_at: str


def _media_type(headers: Mapping[str, str]) -> str | None:
    value = headers.get("content-type")
    return value.split(";", 1)[0].strip() if value else None


def _now_utc() -> str:
    return instant.text(instant.now())


def _m() -> ModuleType:
    """`images.manifest`, imported on first use: a HEAD-only resolve never parses a document,
    and creating its records is a measurable part of `relpipe images resolve`'s start-up."""

    return manifest


_LINK_NEXT = r'<([^>]+)>\s*;\s*rel="?next"?'  # compiled by `re` on first use (start-up)


# -- the client -------------------------------------------------------------------------------


class RegistryClient(RegistryConnection):
    """One client for any number of registries; thread-safe; use as a context manager."""

    def __repr__(self) -> str:
        return f"RegistryClient(mirrors={self.mirrors}, auth={self._auth!r})"

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self, ref: str | Reference) -> str:
        """Check the registry answers the v2 API; returns its auth scheme (none/basic/bearer)."""
        reference = _registry_ref(ref)
        host = self.endpoint(reference.registry)
        self._auth.forget(host)
        base = self._base(reference)
        ext = {CAP_EXT: MIB, KIND_EXT: "ping", REGISTRY_EXT: host}
        resp = self._exchange(
            Request(method="GET", url=f"{base}/v2/", headers={}, content=None, extensions=ext)
        )
        if resp.status_code not in (200, 401):
            raise RegistryError(
                f"{reference.registry}: GET /v2/ answered HTTP {resp.status_code}; "
                "is it an OCI registry?",
                2,
            )
        challenge = self._auth.challenge(host)
        return challenge.scheme if challenge else "none"

    # -- reading ----------------------------------------------------------------------------

    def _get_manifest(self, ref: Reference, reference: str) -> tuple[bytes, str | None, str]:
        """GET a manifest: (bytes, media type, sha256 of the bytes). A lying header fails."""
        resp = self._request(
            "GET",
            ref,
            f"/v2/{ref.repository}/manifests/{reference}",
            headers={"Accept": ACCEPT},
            cap=self.limits.manifest_bytes,
            kind="GET manifest",
        )
        _expect(resp, 200, ref, f"manifest {reference}")
        digest = _m().sha256_digest(resp.body)
        claimed = resp.headers.get("docker-content-digest")
        if claimed and claimed != digest:
            raise DigestMismatch(
                f"{ref.name}: registry said {reference} is {claimed} but its bytes hash to "
                f"{digest}; not pinned (registry or proxy is corrupting responses)"
            )
        if reference.startswith("sha256:") and digest != reference:
            raise DigestMismatch(
                f"{ref.name}: manifest fetched by {reference} hashes to {digest}; not pinned"
            )
        return resp.body, _media_type(resp.headers), digest

    def _head(self, ref: Reference) -> tuple[str, str]:
        """HEAD the manifest: (digest, media type); GET + sha256 when the headers lack them."""
        resp = self._request(
            "HEAD",
            ref,
            f"/v2/{ref.repository}/manifests/{ref.reference}",
            headers={"Accept": ACCEPT},
            kind="HEAD manifest",
        )
        _expect(resp, 200, ref, f"manifest {ref.reference}")
        digest = resp.headers.get("docker-content-digest")
        media_type = _media_type(resp.headers)
        if digest and media_type is not None and media_type in INDEX_TYPES + MANIFEST_TYPES:
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                raise RegistryError(
                    f"{ref.name}: registry sent an invalid digest header {digest!r}", 1
                )
            if ref.digest and digest != ref.digest:
                raise DigestMismatch(f"{ref.name}: registry answered {digest} for {ref.digest}")
            return digest, media_type
        body, media_type, digest = self._get_manifest(ref, ref.reference)
        parsed = _m().parse_manifest(body, media_type)
        return digest, parsed.media_type

    def resolve(self, ref: str | Reference, platform: str | None = None) -> Resolved:
        """Tag -> digest with one HEAD (an index also gets a verified GET to pick the platform)."""
        given = str(ref)
        reference = parse(ref)
        digest, media_type = self._head(reference)
        plat, plat_digest = None, digest
        if media_type in INDEX_TYPES:
            body, header_type, _ = self._get_manifest(reference, digest)
            m = _m()
            index = m.parse_manifest(body, header_type)
            assert isinstance(index, m.Index)
            desc = index.select(m.Platform.parse(platform or self.platform or DEFAULT_PLATFORM))
            plat, plat_digest = str(desc.platform), desc.digest
        return Resolved(
            ref=given,
            reference=reference,
            digest=digest,
            media_type=media_type,
            platform=plat,
            platform_digest=plat_digest,
        )

    def resolve_many(
        self, refs: Sequence[str | Reference], platform: str | None = None
    ) -> list[Resolved]:
        """Resolve concurrently (bounded), results in input order; the first error is raised."""
        for r in refs:
            parse(r)  # fail on a bad reference before any network
        return self.map(lambda r: self.resolve(r, platform), refs)

    def map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """`fn` over `items` on at most `concurrency` threads, results in input order; the
        first error (by position) is raised and no new item starts after one."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        # Plain threads over a shared index, not concurrent.futures: its import (logging and
        # more) is a measurable part of `relpipe images resolve`, which is mostly start-up.
        results: list[Any] = [None] * len(items)
        errors: list[tuple[int, BaseException]] = []
        next_index = iter(range(len(items)))
        take = threading.Lock()

        def work() -> None:
            while True:
                with take:
                    i = next(next_index, None)
                    if i is None or errors:
                        return
                try:
                    results[i] = fn(items[i])
                except BaseException as exc:  # noqa: BLE001 - re-raised below, in order
                    with take:
                        errors.append((i, exc))

        workers = [
            threading.Thread(target=work, daemon=True)
            for _ in range(min(self.concurrency, len(items)))
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            raise min(errors, key=lambda e: e[0])[1]
        return results

    def manifest(self, ref: str | Reference, reference: str) -> tuple[bytes, str | None, str]:
        """A manifest's exact bytes, media type and (re-hashed) digest, by tag or digest."""
        return self._get_manifest(parse(ref), reference)

    def blob(self, ref: str | Reference, digest: str, size: int, cap: int) -> bytes:
        """A blob's exact bytes, re-hashed against `digest` and `size`, at most `cap` bytes."""
        return self._get_blob(parse(ref), digest, size, cap)

    def _get_blob(self, ref: Reference, digest: str, size: int, cap: int) -> bytes:
        if size > cap:
            raise RegistryError(
                f"{ref.name}: blob {digest} is {size} bytes, over the {cap}-byte cap"
            )
        resp = self._request(
            "GET", ref, f"/v2/{ref.repository}/blobs/{digest}", cap=cap, kind="GET blob"
        )
        _expect(resp, 200, ref, f"blob {digest}")
        actual = _m().sha256_digest(resp.body)
        if actual != digest or len(resp.body) != size:
            raise DigestMismatch(
                f"{ref.name}: blob {digest} came back as {actual} ({len(resp.body)} bytes); "
                "not pinned"
            )
        return resp.body

    def pin(self, ref: str | Reference, platform: str | None = None) -> Pinned:
        """Resolve and verify: index, platform manifest and config blob read and re-hashed."""
        given = str(ref)
        reference = parse(ref)
        if reference.digest:
            top_body, top_type, digest = self._get_manifest(reference, reference.digest)
        else:
            head_digest, _ = self._head(reference)
            top_body, top_type, digest = self._get_manifest(reference, head_digest)
        return self.pin_manifest(given, reference, top_body, top_type, digest, platform)

    def pin_manifest(
        self,
        given: str,
        reference: Reference,
        top_body: bytes,
        top_type: str | None,
        digest: str,
        platform: str | None = None,
    ) -> Pinned:
        """`pin`'s verification from a top manifest already fetched (by `manifest`, which
        re-hashed it into `digest`): the platform manifest and config blob are read here."""
        m = _m()
        top = m.parse_manifest(top_body, top_type)
        platform = platform or self.platform
        wanted = m.Platform.parse(platform or DEFAULT_PLATFORM)
        plat: Platform | None
        if isinstance(top, m.Index):
            desc = top.select(wanted)
            if desc.media_type not in MANIFEST_TYPES:
                raise m.ManifestError(
                    f"{reference.name}: index entry {desc.digest} is a {desc.media_type}, "
                    "not an image manifest"
                )
            body, child_type, child_digest = self._get_manifest(reference, desc.digest)
            if len(body) != desc.size:
                raise DigestMismatch(
                    f"{reference.name}: manifest {desc.digest} is {len(body)} bytes, "
                    f"index says {desc.size}"
                )
            child = m.parse_manifest(body, child_type)
            if not isinstance(child, m.Manifest):
                raise m.ManifestError(
                    f"{reference.name}: index entry {desc.digest} is not an image manifest"
                )
            manifest, plat, plat_digest = child, desc.platform, child_digest
        else:
            manifest, plat, plat_digest = top, None, digest
        config_blob = self._get_blob(
            reference, manifest.config.digest, manifest.config.size, self.limits.config_bytes
        )
        config = m.parse_config(config_blob)
        if plat is None:
            plat = config.platform
            if platform and plat and not plat.matches(wanted):
                raise m.ManifestError(
                    f"{reference.name}: image is {plat}, not the requested {wanted}"
                )
        return Pinned(
            ref=given,
            reference=reference.with_digest(digest),
            digest=digest,
            media_type=top.media_type,
            platform=str(plat) if plat else None,
            platform_digest=plat_digest,
            config_digest=manifest.config.digest,
            created=config.created,
            labels=config.labels,
            env=config.env,
            resolved_at=_now_utc(),
        )

    def list_tags(self, repository: str | Reference, page_size: int = 1000) -> list[str]:
        """All tags of a repository, following `Link` pagination (same host only)."""
        ref = _registry_ref(repository)
        url: str | None = f"{self._base(ref)}/v2/{ref.repository}/tags/list?n={page_size}"
        tags: list[str] = []
        pages = 0
        while url:
            pages += 1
            if pages > self.limits.max_pages:
                raise RegistryError(
                    f"{ref.name}: more than {self.limits.max_pages} tag pages; refusing"
                )
            resp = self._request(
                "GET", ref, "", url=url, cap=self.limits.tags_page_bytes, kind="GET tags"
            )
            _expect(resp, 200, ref, "tag list")
            try:
                doc = jsonload.loads(resp.body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise RegistryError(f"{ref.name}: tag list is not valid JSON", 1) from None
            page = doc.get("tags") if isinstance(doc, dict) else None
            if page is None:
                page = []
            if not isinstance(page, list) or not all(isinstance(t, str) for t in page):
                raise RegistryError(f"{ref.name}: tag list 'tags' must be a list of strings", 1)
            tags += page
            if len(tags) > self.limits.max_tags:
                raise RegistryError(f"{ref.name}: more than {self.limits.max_tags} tags; refusing")
            url = self._next_link(ref, resp)
        return tags

    def _next_link(self, ref: Reference, resp: Response) -> str | None:
        match = re.search(_LINK_NEXT, resp.headers.get("link") or "")
        if not match:
            return None
        target = urllib.parse.urljoin(resp.url, match.group(1))
        here, there = urllib.parse.urlsplit(resp.url), urllib.parse.urlsplit(target)
        if (here.scheme, here.netloc) != (there.scheme, there.netloc) or not there.path.startswith(
            "/v2/"
        ):
            raise RegistryError(
                f"{ref.name}: tag list Link points elsewhere ({safe_url(target)}); refusing", 1
            )
        return target

    # -- pushing ----------------------------------------------------------------------------

    def upload_blob(self, repository: str | Reference, data: bytes) -> str:
        """Upload a blob (monolithic POST + PUT) unless it exists; returns its digest."""
        ref = _registry_ref(repository)
        digest = _m().sha256_digest(data)
        head = self._request(
            "HEAD", ref, f"/v2/{ref.repository}/blobs/{digest}", push=True, kind="HEAD blob"
        )
        if head.status == 200:
            return digest
        start = self._request(
            "POST",
            ref,
            f"/v2/{ref.repository}/blobs/uploads/",
            push=True,
            content=b"",
            kind="POST upload",
        )
        _expect(start, 202, ref, "blob upload start")
        location = start.headers.get("location")
        if not location:
            raise RegistryError(f"{ref.name}: blob upload answered without a Location", 1)
        url = urllib.parse.urljoin(start.url, location)
        url += ("&" if urllib.parse.urlsplit(url).query else "?") + urllib.parse.urlencode(
            {"digest": digest}
        )
        put = self._request(
            "PUT",
            ref,
            "",
            url=url,
            push=True,
            content=data,
            headers={"Content-Type": "application/octet-stream"},
            kind="PUT blob",
        )
        _expect(put, 201, ref, f"blob upload {digest}")
        claimed = put.headers.get("docker-content-digest")
        if claimed and claimed != digest:
            raise DigestMismatch(
                f"{ref.name}: registry stored blob as {claimed}, expected {digest}"
            )
        return digest

    def put_manifest(
        self, repository: str | Reference, reference: str, data: bytes, media_type: str
    ) -> str:
        """PUT a manifest under a tag (or digest); its digest, checked against the registry's."""
        ref = _registry_ref(repository)
        digest = _m().sha256_digest(data)
        resp = self._request(
            "PUT",
            ref,
            f"/v2/{ref.repository}/manifests/{reference}",
            push=True,
            content=data,
            headers={"Content-Type": media_type},
            kind="PUT manifest",
        )
        _expect(resp, 201, ref, f"manifest {reference}")
        claimed = resp.headers.get("docker-content-digest")
        if claimed != digest:
            raise DigestMismatch(
                f"{ref.name}: registry stored manifest as {claimed}, expected {digest}"
            )
        return digest


def _registry_ref(value: str | Reference) -> Reference:
    """A repository given as `registry/repo` (a tag or digest, if any, is ignored)."""
    ref = parse(value)
    return Reference(registry=ref.registry, repository=ref.repository)


def _expect(resp: Response, status: int, ref: Reference, what: str) -> None:
    if resp.status == status:
        return
    if resp.status == 404:
        raise NotFound(f"{ref.name}: {what} not found (HTTP 404); check the name and tag", 1)
    detail = ""
    try:
        errors = jsonload.loads(resp.body).get("errors") if resp.body else None
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            detail = (
                f": {str(errors[0].get('code', ''))[:40]} {str(errors[0].get('message', ''))[:120]}"
            )
    except (ValueError, AttributeError):
        pass
    raise RegistryError(f"{ref.name}: {what} answered HTTP {resp.status}{detail}", 1)
