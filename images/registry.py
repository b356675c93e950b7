"""Registry I/O: the distribution HTTP API v2 spoken by one reusable httpx client.

Owns ping, authentication (anonymous, basic, bearer tokens cached per scope), tag -> digest
resolution, verified pinning (every recorded digest is the sha256 of bytes we fetched), tag
listing with pagination, retries with bounded backoff, size caps, and the push side used by the
fixture builder (`upload_blob`, `put_manifest`). Loopback registries are spoken to over plain
HTTP (as docker does); any other registry over HTTPS unless explicitly marked insecure.

Credentials come from the environment (`RELPIPE_REGISTRY_USERNAME`/`_PASSWORD`, scoped to
`RELPIPE_REGISTRY_AUTH_HOST`) or the Docker config file's `auths`; they are never part of a
message, a repr or a log line.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from relpipe.images.errors import ImageError
from relpipe.images.manifest import (
    ACCEPT,
    DEFAULT_PLATFORM,
    INDEX_TYPES,
    MANIFEST_TYPES,
    Index,
    Manifest,
    ManifestError,
    Platform,
    parse_config,
    parse_manifest,
    sha256_digest,
)
from relpipe.images.reference import Reference, is_loopback, parse

USER_ENV = "RELPIPE_REGISTRY_USERNAME"
PASSWORD_ENV = "RELPIPE_REGISTRY_PASSWORD"
AUTH_HOST_ENV = "RELPIPE_REGISTRY_AUTH_HOST"
INSECURE_ENV = "RELPIPE_INSECURE_REGISTRIES"  # comma-separated host[:port]: plain HTTP
SECURE_ENV = "RELPIPE_SECURE_REGISTRIES"  # comma-separated host[:port]: HTTPS even on loopback
CA_ENV = "RELPIPE_REGISTRY_CA_BUNDLE"  # extra PEM CA file trusted for registries and token realms

MIB = 1024 * 1024
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class RegistryError(ImageError):
    """A registry answered wrongly or not at all. exit_code 1 (checked) unless environmental."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class DigestMismatch(RegistryError):
    """Fetched bytes do not hash to the digest the registry claimed: never pinned."""


# -- records ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def basic(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter; `base_s` is small in tests."""

    attempts: int = 5
    base_s: float = 0.25
    max_s: float = 8.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.max_s, self.base_s * (2**attempt)) * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            return min(self.max_retry_after_s, max(retry_after, backoff))
        return backoff


@dataclass(frozen=True)
class Limits:
    manifest_bytes: int = 4 * MIB
    config_bytes: int = 8 * MIB
    token_bytes: int = 1 * MIB
    tags_page_bytes: int = 16 * MIB
    max_tags: int = 1_000_000
    max_pages: int = 10_000


@dataclass(frozen=True)
class Resolved:
    """What `resolve` found for one reference (the header digest; `pin` re-hashes)."""

    ref: str  # as given
    reference: Reference
    digest: str
    media_type: str
    platform: str | None  # for indexes: the selected entry; for a single manifest: unknown (None)
    platform_digest: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "ref": self.ref,
            "digest": self.digest,
            "media-type": self.media_type,
            "platform": self.platform,
            "platform-digest": self.platform_digest,
        }


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class _Challenge:
    scheme: str  # "basic" | "bearer" | "none"
    params: tuple[tuple[str, str], ...] = ()

    def get(self, key: str) -> str | None:
        return dict(self.params).get(key)


@dataclass(frozen=True)
class _Response:
    status: int
    headers: httpx.Headers
    body: bytes
    url: str


# -- credentials ------------------------------------------------------------------------------


def _docker_config_path(env: Mapping[str, str]) -> Path:
    base = env.get("DOCKER_CONFIG")
    return Path(base) / "config.json" if base else Path.home() / ".docker" / "config.json"


def _hub_keys(registry: str) -> tuple[str, ...]:
    if registry == "docker.io":
        return (
            "https://index.docker.io/v1/",
            "index.docker.io",
            "docker.io",
            "registry-1.docker.io",
        )
    return (registry, f"https://{registry}", f"http://{registry}")


def load_credentials(
    registry: str, env: Mapping[str, str] | None = None, config_path: Path | None = None
) -> Credentials | None:
    """Credentials for `registry` from the environment, else the Docker config `auths`."""
    env = os.environ if env is None else env
    user, password = env.get(USER_ENV), env.get(PASSWORD_ENV)
    if user or password:
        host = env.get(AUTH_HOST_ENV)
        if not (user and password and host):
            raise RegistryError(
                f"set all of {USER_ENV}, {PASSWORD_ENV} and {AUTH_HOST_ENV} (the registry they are for)",
                exit_code=2,
            )
        if host == registry:
            return Credentials(user, password)
    path = config_path or _docker_config_path(env)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError(
            f"cannot read Docker config {path}: {exc.__class__.__name__}", 2
        ) from None
    auths = doc.get("auths") if isinstance(doc, dict) else None
    if not isinstance(auths, dict):
        return None
    for key in _hub_keys(registry):
        entry = auths.get(key)
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
            return Credentials(entry["username"], entry["password"])
        encoded = entry.get("auth")
        if isinstance(encoded, str) and encoded:
            try:
                decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            user_, sep, pw = decoded.partition(":")
            if not sep or not user_:
                raise RegistryError(
                    f"Docker config {path}: auths entry for {key} is not base64 user:password", 2
                )
            return Credentials(user_, pw)
    return None


# -- header parsing ---------------------------------------------------------------------------

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))')


def parse_challenge(header: str) -> _Challenge:
    """Parse one `WWW-Authenticate` challenge (Basic or Bearer with realm/service/scope)."""
    scheme, _, rest = header.strip().partition(" ")
    params = tuple(
        (m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3))
        for m in _PARAM.finditer(rest)
    )
    return _Challenge(scheme.lower(), params)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    import email.utils  # rare path; kept off the start-up import list

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def _media_type(headers: httpx.Headers) -> str | None:
    value = headers.get("content-type")
    return value.split(";", 1)[0].strip() if value else None


def _now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _split_env(env: Mapping[str, str], key: str) -> frozenset[str]:
    return frozenset(x.strip() for x in env.get(key, "").split(",") if x.strip())


def _ssl_context(ca: str | os.PathLike[str] | None) -> ssl.SSLContext:
    """System trust store (plus certifi when installed) plus an optional extra CA bundle."""
    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(cafile=certifi.where())
    except ImportError:
        pass
    if ca:
        try:
            context.load_verify_locations(cafile=os.fspath(ca))
        except (OSError, ssl.SSLError) as exc:
            raise RegistryError(f"cannot load CA bundle {ca}: {exc}", 2) from None
    return context


class _LazyTransport(httpx.BaseTransport):
    """Builds the wrapped transport on the first request (thread-safe)."""

    def __init__(self, factory: Callable[[], httpx.BaseTransport]) -> None:
        self._factory = factory
        self._inner: httpx.BaseTransport | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            if self._inner is None:
                self._inner = self._factory()
        return self._inner.handle_request(request)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


# -- the client -------------------------------------------------------------------------------

_RETRY_STATUS = {429, 500, 502, 503, 504}


class RegistryClient:
    """One httpx client for any number of registries; thread-safe; use as a context manager."""

    def __init__(
        self,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy = RetryPolicy(),
        limits: Limits = Limits(),
        insecure: Iterable[str] = (),
        secure: Iterable[str] = (),
        ca_bundle: str | os.PathLike[str] | None = None,
        credentials: Mapping[str, Credentials] | None = None,
        env: Mapping[str, str] | None = None,
        concurrency: int = 8,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self._insecure = frozenset(insecure) | _split_env(self._env, INSECURE_ENV)
        self._secure = frozenset(secure) | _split_env(self._env, SECURE_ENV)
        self._credentials_given = dict(credentials or {})
        self.retry = retry
        self.limits = limits
        self.concurrency = max(1, concurrency)
        self._sleep = sleep
        self._rng = random.Random()
        ca = ca_bundle or self._env.get(CA_ENV)
        pool = httpx.Limits(
            max_connections=self.concurrency * 2, max_keepalive_connections=self.concurrency * 2
        )
        mounts: dict[str, httpx.BaseTransport | None] = {}
        if transport is None:
            # Loading the CA store costs ~0.1-0.5 s; loopback registries never need it, so the
            # TLS transport is built on first use. The http:// mount never performs TLS.
            mounts = {
                "http://": httpx.HTTPTransport(verify=False, limits=pool),
                "https://": _LazyTransport(
                    lambda: httpx.HTTPTransport(verify=_ssl_context(ca), limits=pool)
                ),
            }
        self._http = httpx.Client(
            transport=transport,
            mounts=mounts or None,
            timeout=timeout,
            follow_redirects=True,  # blob GETs may redirect to storage; auth is dropped cross-origin
            max_redirects=5,
            trust_env=False,
        )
        self._lock = threading.Lock()
        self._challenges: dict[str, _Challenge] = {}
        self._creds_cache: dict[str, Credentials | None] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._key_locks: dict[object, threading.Lock] = {}
        self.requests: dict[str, int] = {}  # request counts by kind, for benchmarks and tests

    def __repr__(self) -> str:
        return f"RegistryClient(registries={sorted(self._challenges)})"

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _count(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] = self.requests.get(kind, 0) + 1

    def _key_lock(self, key: object) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def scheme(self, registry: str) -> str:
        if registry in self._insecure:
            return "http"
        if registry in self._secure:
            return "https"
        return "http" if is_loopback(registry) else "https"

    def _base(self, ref: Reference) -> str:
        return f"{self.scheme(ref.registry)}://{ref.api_host}"

    def _credentials(self, registry: str) -> Credentials | None:
        if registry in self._credentials_given:
            return self._credentials_given[registry]
        with self._lock:
            if registry not in self._creds_cache:
                self._creds_cache[registry] = load_credentials(registry, self._env)
            return self._creds_cache[registry]

    def _send_once(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None, cap: int
    ) -> _Response:
        """One request; the body is read under `cap` (a larger body is an error, not retried)."""
        with self._http.stream(method, url, headers=headers, content=content) as resp:
            length = resp.headers.get("content-length")
            if method != "HEAD" and length and length.isdigit() and int(length) > cap:
                raise RegistryError(
                    f"{method} {_safe(url)}: response of {length} bytes exceeds the {cap}-byte cap"
                )
            body = bytearray()
            if method != "HEAD":
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > cap:
                        raise RegistryError(
                            f"{method} {_safe(url)}: response exceeds the {cap}-byte cap"
                        )
            return _Response(resp.status_code, resp.headers, bytes(body), str(resp.url))

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None = None,
        cap: int = MIB,
        kind: str | None = None,
    ) -> _Response:
        """Send with retries: 429 (Retry-After), 5xx and transport errors, bounded backoff."""
        last = ""
        for attempt in range(self.retry.attempts):
            retry_after = None
            self._count(kind or method)
            try:
                resp = self._send_once(method, url, headers, content, cap)
            except httpx.TransportError as exc:
                if _cert_error(exc):
                    # Retrying cannot fix trust; say what can.
                    raise RegistryError(
                        f"{_safe(url)}: TLS certificate not trusted ({_cert_error(exc)}); "
                        f"pass --ca-bundle or set {CA_ENV}",
                        exit_code=2,
                    ) from None
                last = f"{exc.__class__.__name__}: {exc}"
            else:
                if resp.status not in _RETRY_STATUS:
                    return resp
                last = f"HTTP {resp.status}"
                retry_after = parse_retry_after(resp.headers.get("retry-after"))
            if attempt + 1 < self.retry.attempts:
                self._sleep(self.retry.delay(attempt, retry_after, self._rng))
        environmental = not last.startswith("HTTP")
        raise RegistryError(
            f"{method} {_safe(url)} failed after {self.retry.attempts} attempts ({last}); "
            "check that the registry is up and reachable",
            exit_code=2 if environmental else 1,
        )

    def _challenge(self, ref: Reference) -> _Challenge:
        """Ping `/v2/` once per registry to learn how it authenticates."""
        key = ref.registry
        with self._key_lock(("ping", key)):
            if key in self._challenges:
                return self._challenges[key]
            resp = self._send("GET", f"{self._base(ref)}/v2/", {}, kind="ping")
            if resp.status == 200:
                challenge = _Challenge("none")
            elif resp.status == 401:
                challenge = parse_challenge(resp.headers.get("www-authenticate", ""))
            else:
                raise RegistryError(
                    f"{ref.registry}: GET /v2/ answered HTTP {resp.status}; is it an OCI registry?",
                    2,
                )
            with self._lock:
                self._challenges[key] = challenge
            return challenge

    def ping(self, ref: str | Reference) -> str:
        """Check the registry answers the v2 API; returns its auth scheme (none/basic/bearer)."""
        reference = _registry_ref(ref)
        with self._lock:
            self._challenges.pop(reference.registry, None)
        return self._challenge(reference).scheme

    def _token(self, ref: Reference, challenge: _Challenge, scope: str, fresh: bool) -> str:
        key = (ref.registry, scope)
        with self._key_lock(("token", key)):
            cached = self._tokens.get(key)
            if cached and not fresh and cached[1] > time.monotonic():
                return cached[0]
            realm = challenge.get("realm")
            if not realm:
                raise RegistryError(f"{ref.registry}: bearer challenge without a realm", 1)
            parsed = urllib.parse.urlsplit(realm)
            host = parsed.hostname or ""
            if parsed.scheme not in ("http", "https") or (
                parsed.scheme == "http" and not is_loopback(host)
            ):
                # Credentials must never travel in clear text to a host the registry names.
                raise RegistryError(
                    f"{ref.registry}: refusing token realm {_safe(realm)} (needs https)", 1
                )
            params = {"scope": scope}
            if challenge.get("service"):
                params["service"] = challenge.get("service") or ""
            url = realm + ("&" if parsed.query else "?") + urllib.parse.urlencode(params)
            headers = {}
            creds = self._credentials(ref.registry)
            if creds:
                headers["Authorization"] = creds.basic()
            resp = self._send("GET", url, headers, cap=self.limits.token_bytes, kind="token")
            if resp.status in (401, 403):
                raise RegistryError(
                    f"{ref.registry}: token server refused {scope} (HTTP {resp.status}); "
                    f"check the credentials ({USER_ENV}/{PASSWORD_ENV} or docker login)",
                    1,
                )
            if resp.status != 200:
                raise RegistryError(f"{ref.registry}: token server answered HTTP {resp.status}", 1)
            try:
                doc = json.loads(resp.body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise RegistryError(
                    f"{ref.registry}: token server response is not JSON", 1
                ) from None
            token = (doc.get("token") or doc.get("access_token")) if isinstance(doc, dict) else None
            if not isinstance(token, str) or not token:
                raise RegistryError(f"{ref.registry}: token server response has no token", 1)
            expires = doc.get("expires_in", 60)
            if not isinstance(expires, int | float) or isinstance(expires, bool) or expires <= 0:
                expires = 60
            # Renew a little early so a token never expires between check and use.
            self._tokens[key] = (token, time.monotonic() + max(0.0, float(expires) - 5.0))
            return token

    def _auth(
        self, ref: Reference, challenge: _Challenge, scope: str, fresh: bool
    ) -> dict[str, str]:
        if challenge.scheme == "basic":
            creds = self._credentials(ref.registry)
            if creds is None:
                raise RegistryError(
                    f"{ref.registry} needs credentials: set {USER_ENV}/{PASSWORD_ENV}/{AUTH_HOST_ENV} "
                    "or run docker login",
                    2,
                )
            return {"Authorization": creds.basic()}
        if challenge.scheme == "bearer":
            return {"Authorization": "Bearer " + self._token(ref, challenge, scope, fresh)}
        return {}

    def _request(
        self,
        method: str,
        ref: Reference,
        path: str,
        *,
        push: bool = False,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        cap: int = MIB,
        kind: str | None = None,
        url: str | None = None,
    ) -> _Response:
        """An authenticated API request for `ref`'s repository (one re-auth on 401)."""
        scope = f"repository:{ref.repository}:{'pull,push' if push else 'pull'}"
        challenge = self._challenge(ref)
        target = url or f"{self._base(ref)}{path}"
        for fresh in (False, True):
            all_headers = dict(headers or {})
            all_headers.update(self._auth(ref, challenge, scope, fresh))
            resp = self._send(method, target, all_headers, content, cap, kind)
            if resp.status != 401 or fresh:
                break
            header = resp.headers.get("www-authenticate", "")
            if header:
                challenge = parse_challenge(header)
                with self._lock:
                    self._challenges[ref.registry] = challenge
        if resp.status == 401:
            raise RegistryError(
                f"{ref.name}: unauthorized ({method} {path}); set {USER_ENV}/{PASSWORD_ENV}/"
                f"{AUTH_HOST_ENV} or run docker login",
                1,
            )
        if resp.status == 403:
            raise RegistryError(
                f"{ref.name}: access denied ({method} {path}); check your permissions", 1
            )
        return resp

    # -- reading ----------------------------------------------------------------------------

    def _get_manifest(self, ref: Reference, reference: str) -> tuple[bytes, str | None, str]:
        """GET a manifest; returns (bytes, media type, sha256 of the bytes). A lying header fails."""
        resp = self._request(
            "GET",
            ref,
            f"/v2/{ref.repository}/manifests/{reference}",
            headers={"Accept": ACCEPT},
            cap=self.limits.manifest_bytes,
            kind="GET manifest",
        )
        _expect(resp, 200, ref, f"manifest {reference}")
        digest = sha256_digest(resp.body)
        claimed = resp.headers.get("docker-content-digest")
        if claimed and claimed != digest:
            raise DigestMismatch(
                f"{ref.name}: registry said {reference} is {claimed} but its bytes hash to {digest}; "
                "not pinned (registry or proxy is corrupting responses)"
            )
        if reference.startswith("sha256:") and digest != reference:
            raise DigestMismatch(
                f"{ref.name}: manifest fetched by {reference} hashes to {digest}; not pinned"
            )
        return resp.body, _media_type(resp.headers), digest

    def _head(self, ref: Reference) -> tuple[str, str]:
        """HEAD the manifest: (digest, media type); falls back to GET + sha256 when headers lack them."""
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
        if digest and media_type in INDEX_TYPES + MANIFEST_TYPES:
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                raise RegistryError(
                    f"{ref.name}: registry sent an invalid digest header {digest!r}", 1
                )
            if ref.digest and digest != ref.digest:
                raise DigestMismatch(f"{ref.name}: registry answered {digest} for {ref.digest}")
            return digest, media_type
        body, media_type, digest = self._get_manifest(ref, ref.reference)
        parsed = parse_manifest(body, media_type)
        return digest, parsed.media_type

    def resolve(self, ref: str | Reference, platform: str | None = None) -> Resolved:
        """Tag -> digest with one HEAD (an index also gets its verified GET to pick the platform)."""
        given = str(ref)
        reference = parse(ref)
        digest, media_type = self._head(reference)
        plat, plat_digest = None, digest
        if media_type in INDEX_TYPES:
            body, header_type, _ = self._get_manifest(reference, digest)
            index = parse_manifest(body, header_type)
            assert isinstance(index, Index)
            desc = index.select(Platform.parse(platform or DEFAULT_PLATFORM))
            plat, plat_digest = str(desc.platform), desc.digest
        return Resolved(given, reference, digest, media_type, plat, plat_digest)

    def resolve_many(
        self, refs: Sequence[str | Reference], platform: str | None = None
    ) -> list[Resolved]:
        """Resolve concurrently (bounded), results in input order; the first error is raised."""
        parsed = [parse(r) for r in refs]  # fail on a bad reference before any network
        if len(parsed) <= 1:
            return [self.resolve(r, platform) for r in refs]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(refs))) as pool:
            futures = [pool.submit(self.resolve, r, platform) for r in refs]
            return [f.result() for f in futures]

    def _get_blob(self, ref: Reference, digest: str, size: int, cap: int) -> bytes:
        if size > cap:
            raise RegistryError(
                f"{ref.name}: blob {digest} is {size} bytes, over the {cap}-byte cap"
            )
        resp = self._request(
            "GET", ref, f"/v2/{ref.repository}/blobs/{digest}", cap=cap, kind="GET blob"
        )
        _expect(resp, 200, ref, f"blob {digest}")
        actual = sha256_digest(resp.body)
        if actual != digest or len(resp.body) != size:
            raise DigestMismatch(
                f"{ref.name}: blob {digest} came back as {actual} ({len(resp.body)} bytes); not pinned"
            )
        return resp.body

    def pin(self, ref: str | Reference, platform: str | None = None) -> Pinned:
        """Resolve and verify: index and platform manifest re-hashed, config blob read and re-hashed."""
        given = str(ref)
        reference = parse(ref)
        if reference.digest:
            top_body, top_type, digest = self._get_manifest(reference, reference.digest)
        else:
            head_digest, _ = self._head(reference)
            top_body, top_type, digest = self._get_manifest(reference, head_digest)
        top = parse_manifest(top_body, top_type)
        wanted = Platform.parse(platform or DEFAULT_PLATFORM)
        plat: Platform | None
        if isinstance(top, Index):
            desc = top.select(wanted)
            if desc.media_type not in MANIFEST_TYPES:
                raise ManifestError(
                    f"{reference.name}: index entry {desc.digest} is a {desc.media_type}, not an image manifest"
                )
            body, child_type, child_digest = self._get_manifest(reference, desc.digest)
            if len(body) != desc.size:
                raise DigestMismatch(
                    f"{reference.name}: manifest {desc.digest} is {len(body)} bytes, index says {desc.size}"
                )
            child = parse_manifest(body, child_type)
            if not isinstance(child, Manifest):
                raise ManifestError(
                    f"{reference.name}: index entry {desc.digest} is not an image manifest"
                )
            manifest, plat, plat_digest = child, desc.platform, child_digest
        else:
            manifest, plat, plat_digest = top, None, digest
        config_blob = self._get_blob(
            reference, manifest.config.digest, manifest.config.size, self.limits.config_bytes
        )
        config = parse_config(config_blob)
        if plat is None:
            plat = config.platform
            if platform and plat and not plat.matches(wanted):
                raise ManifestError(
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
                doc = json.loads(resp.body)
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

    def _next_link(self, ref: Reference, resp: _Response) -> str | None:
        match = _LINK_NEXT.search(resp.headers.get("link", ""))
        if not match:
            return None
        target = urllib.parse.urljoin(resp.url, match.group(1))
        here, there = urllib.parse.urlsplit(resp.url), urllib.parse.urlsplit(target)
        if (here.scheme, here.netloc) != (there.scheme, there.netloc) or not there.path.startswith(
            "/v2/"
        ):
            raise RegistryError(
                f"{ref.name}: tag list Link points elsewhere ({_safe(target)}); refusing", 1
            )
        return target

    # -- pushing ----------------------------------------------------------------------------

    def upload_blob(self, repository: str | Reference, data: bytes) -> str:
        """Upload a blob (monolithic POST + PUT) unless it exists; returns its digest."""
        ref = _registry_ref(repository)
        digest = sha256_digest(data)
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
        """PUT a manifest under a tag (or its digest); returns the digest, verified against the registry's."""
        ref = _registry_ref(repository)
        digest = sha256_digest(data)
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


def _cert_error(exc: BaseException) -> str | None:
    """The certificate-verification reason hidden in an httpx error chain, if any."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen.reason or "verification failed")
        seen = seen.__cause__ or seen.__context__
    return None


def _registry_ref(value: str | Reference) -> Reference:
    """A repository given as `registry/repo` (a tag or digest, if any, is ignored)."""
    ref = parse(value)
    return Reference(ref.registry, ref.repository)


def _expect(resp: _Response, status: int, ref: Reference, what: str) -> None:
    if resp.status == status:
        return
    if resp.status == 404:
        raise RegistryError(f"{ref.name}: {what} not found (HTTP 404); check the name and tag", 1)
    detail = ""
    try:
        errors = json.loads(resp.body).get("errors") if resp.body else None
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            detail = (
                f": {str(errors[0].get('code', ''))[:40]} {str(errors[0].get('message', ''))[:120]}"
            )
    except (ValueError, AttributeError):
        pass
    raise RegistryError(f"{ref.name}: {what} answered HTTP {resp.status}{detail}", 1)


def _safe(url: str) -> str:
    """A URL for a message: no userinfo, no query (uploads carry state tokens there)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def to_json_lines(items: Sequence[Resolved]) -> list[dict[str, Any]]:
    return [r.to_json() for r in items]
