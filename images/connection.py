"""How a registry client reaches a registry: mirrors, plain HTTP or HTTPS, credentials, the
two drivers, redirects and authenticated requests.

`RegistryConnection` is the plumbing under `images.registry.RegistryClient` (the distribution
API: resolve, pin, tags, pushes). Both drivers share the engine (`images.transport`) and the
auth flow (`images.auth`): httpx (an `httpx.Client` with `auth.RegistryAuth` over
`transport.HttpxTransport`, the default) and a light driver (`light=True`) that imports nothing
heavy, used by `relpipe images resolve`, whose cost is mostly process start-up. A mirror replaces
only the host contacted, and credentials are looked up for that host, so docker.io's never go to
a mirror. Loopback registries are spoken to over plain HTTP (as docker does); any other registry
over HTTPS unless explicitly marked insecure.
"""

from __future__ import annotations

import os
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.reference import DOCKER_HUB, DOCKER_HUB_API, Reference, is_loopback

# `auth.RegistryAuth` and `transport.HttpxTransport` subclass httpx's types and are built on first
# access (PEP 562): named at the top, they would import httpx on the light resolve path.
from . import auth, transport
from .auth import (
    AUTH_HOST_ENV,
    CAP_EXT,
    DEADLINE_EXT,
    KIND_EXT,
    PASSWORD_ENV,
    REGISTRY_EXT,
    SCOPE_EXT,
    USER_ENV,
    Authenticator,
    Credentials,
    load_credentials,
)
from .options import (
    CA_ENV,
    INSECURE_ENV,
    PLATFORM_ENV,
    mirrors_from_env,
    parse_mirror,
)
from .transport import (
    MIB,
    Engine,
    Limits,
    RegistryError,
    Request,
    Response,
    RetryPolicy,
    Timeouts,
    origin,
    safe_url,
    send_with_retry,
)

SECURE_ENV = "RELPIPE_SECURE_REGISTRIES"  # comma-separated host[:port]: HTTPS even on loopback
_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
# Defaults (frozen records, shared safely by every client).
_TIMEOUTS, _RETRY, _LIMITS = Timeouts(), RetryPolicy(), Limits()


def _split_env(env: Mapping[str, str], key: str) -> frozenset[str]:
    return frozenset(x.strip() for x in env.get(key, "").split(",") if x.strip())


class RegistryConnection:
    """The transport state of a registry client; thread-safe."""

    def __init__(
        self,
        *,
        timeout: float | Timeouts = _TIMEOUTS,
        retry: RetryPolicy = _RETRY,
        limits: Limits = _LIMITS,
        insecure: Iterable[str] = (),
        secure: Iterable[str] = (),
        ca_bundle: str | os.PathLike[str] | None = None,
        credentials: Mapping[str, Credentials] | None = None,
        mirrors: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        concurrency: int = 8,
        light: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        if mirrors is None:
            found = mirrors_from_env(self._env)
        else:
            found = {m.source: m for m in (parse_mirror(f"{k}={v}") for k, v in mirrors.items())}
        self.mirrors = {source: m.host for source, m in found.items()}
        schemes = [(m.host, m.scheme) for m in found.values()]
        self._insecure = (
            frozenset(insecure)
            | _split_env(self._env, INSECURE_ENV)
            | {host for host, scheme in schemes if scheme == "http"}
        )
        self._secure = (
            frozenset(secure)
            | _split_env(self._env, SECURE_ENV)
            | {host for host, scheme in schemes if scheme == "https"}
        )
        self.platform = self._env.get(PLATFORM_ENV) or None
        self._credentials_given = dict(credentials or {})
        self.retry = retry
        self.limits = limits
        self.timeouts = Timeouts.of(timeout)
        self.concurrency = max(1, concurrency)
        self.light = light
        self._sleep = sleep
        self._rng = random.Random()
        ca = ca_bundle or self._env.get(CA_ENV)
        self._engine = Engine(
            timeouts=self.timeouts,
            ca_bundle=os.fspath(ca) if ca else None,
            pool_size=self.concurrency * 2,
        )
        self._auth = Authenticator(self._credentials, token_cap=limits.token_bytes)
        self._http: Any = None  # the httpx.Client, built on first use (never when light)
        self._lock = threading.Lock()
        self._creds_cache: dict[str, Credentials | None] = {}
        self.requests: dict[str, int] = {}  # request counts by kind, for benchmarks and tests

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        self._engine.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _count(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] = self.requests.get(kind, 0) + 1

    def endpoint(self, registry: str) -> str:
        """The host[:port] that serves `registry`'s API: its mirror when one is configured."""
        mirror = self.mirrors.get(registry)
        if mirror:
            return mirror
        return DOCKER_HUB_API if registry == DOCKER_HUB else registry

    def scheme(self, host: str) -> str:
        if host in self._insecure:
            return "http"
        if host in self._secure:
            return "https"
        return "http" if is_loopback(host) else "https"

    def _base(self, ref: Reference) -> str:
        host = self.endpoint(ref.registry)
        return f"{self.scheme(host)}://{host}"

    def _credentials(self, host: str) -> Credentials | None:
        """Credentials for the host contacted (Docker Hub's API host is `docker.io` in configs)."""
        name = DOCKER_HUB if host == DOCKER_HUB_API else host
        if name in self._credentials_given:
            return self._credentials_given[name]
        with self._lock:
            if name not in self._creds_cache:
                self._creds_cache[name] = load_credentials(name, self._env)
            return self._creds_cache[name]

    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None,
        ext: dict[str, Any],
    ) -> Response:
        """One request through the engine with retries, deadline and the cap in `ext`."""
        cap = int(ext.get(CAP_EXT) or MIB)
        kind = str(ext.get(KIND_EXT) or method)
        # The first hop of a logical request sets its deadline; redirects and the re-sent request
        # after an auth challenge carry the same extensions, so they share it.
        deadline = ext.setdefault(DEADLINE_EXT, time.monotonic() + self.timeouts.total_s)
        return send_with_retry(
            lambda deadline: self._engine.send_once(method, url, headers, content, cap, deadline),
            method=method,
            url=url,
            policy=self.retry,
            timeouts=self.timeouts,
            sleep=self._sleep,
            rng=self._rng,
            count=lambda: self._count(kind),
            deadline=float(deadline),
        )

    def _httpx(self) -> Any:
        with self._lock:
            if self._http is None:
                import httpx

                self._http = httpx.Client(
                    transport=transport.HttpxTransport(self._send),
                    auth=auth.RegistryAuth(self._auth),
                    follow_redirects=True,  # blob GETs may redirect to storage; see images.auth
                    max_redirects=_MAX_REDIRECTS,
                    trust_env=False,
                )
            return self._http

    def _follow(self, request: Request) -> Response:
        """The light driver's redirects: Authorization never crosses to another origin."""
        method, url, headers, content = (
            request.method,
            request.url,
            dict(request.headers),
            request.content,
        )
        if request.extensions is None:
            request.extensions = {}
        ext = request.extensions  # shared by every hop and by a re-send: one deadline
        for _ in range(_MAX_REDIRECTS + 1):
            resp = self._send(method, url, headers, content, ext)
            location = resp.headers.get("location")
            if resp.status_code not in _REDIRECTS or not location:
                return resp
            target = urllib.parse.urljoin(url, location)
            if origin(target) != origin(url):
                headers.pop("Authorization", None)
            if resp.status_code == 303 and method != "HEAD":
                method, content = "GET", None
            url = target
        raise _too_many_redirects(request.url)

    def _exchange(self, request: Request) -> Response:
        if not self.light:
            import httpx

            http = self._httpx()
            sent = http.build_request(
                request.method,
                request.url,
                headers=request.headers,
                content=request.content,
                extensions=request.extensions,
            )
            try:
                r = http.send(sent)
            except httpx.TooManyRedirects:
                raise _too_many_redirects(request.url) from None
            headers = {k.lower(): v for k, v in r.headers.items()}
            return Response(
                status_code=r.status_code, headers=headers, body=r.content, url=str(r.url)
            )
        flow = self._auth.flow(request, Request.make)
        sent_request = next(flow)
        while True:
            resp = self._follow(sent_request)
            try:
                sent_request = flow.send(resp)
            except StopIteration:
                return resp

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
    ) -> Response:
        """An authenticated API request for `ref`'s repository (one re-auth on a 401)."""
        base = self._base(ref)
        target = url or f"{base}{path}"
        ext: dict[str, Any] = {CAP_EXT: cap, KIND_EXT: kind or method}
        if origin(target) == origin(base):
            # Only requests addressed to the registry's own origin take part in its auth flow.
            ext[REGISTRY_EXT] = self.endpoint(ref.registry)
            ext[SCOPE_EXT] = f"repository:{ref.repository}:{'pull,push' if push else 'pull'}"
        resp = self._exchange(
            Request(
                method=method,
                url=target,
                headers=dict(headers or {}),
                content=content,
                extensions=ext,
            )
        )
        if resp.status_code == 401:
            raise RegistryError(
                f"{ref.name}: unauthorized ({method} {safe_url(resp.url)}); set {USER_ENV}/"
                f"{PASSWORD_ENV}/{AUTH_HOST_ENV} or run docker login",
                1,
            )
        if resp.status_code == 403:
            raise RegistryError(
                f"{ref.name}: access denied ({method} {path or safe_url(target)}); "
                "check your permissions",
                1,
            )
        return resp


def _too_many_redirects(url: str) -> RegistryError:
    return RegistryError(f"{safe_url(url)}: more than {_MAX_REDIRECTS} redirects; refusing", 1)
