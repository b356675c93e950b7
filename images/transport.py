"""Registry HTTP transport: one HTTP/1.1 engine with retries, an overall deadline and size caps.

`Engine` speaks HTTP/1.1 over the standard library's `http.client` with a keep-alive pool per
origin; it is the only code that touches sockets. `send_with_retry` wraps one exchange with the
retry policy (429 and 5xx, honouring `Retry-After`; connection errors; bounded attempts with
jittered backoff). Every request has an OVERALL deadline that covers connecting, headers, body and
retries: a watchdog shuts the socket down when it passes, so a server dripping one byte at a time
cannot hold a request longer than its timeout (issue 17.8). Bodies are read under a cap and a
larger body is an error, never retried.

Two drivers sit on top, with the same semantics because they share this engine and
`images.auth.Authenticator`: httpx (`HttpxTransport`, an `httpx.BaseTransport`, built on first use)
and the light driver of `images.registry` that keeps `relpipe images resolve` free of httpx.
Nothing here imports httpx at module level.
"""

from __future__ import annotations

import http.client
import random
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from relpipe.images.errors import ImageError

MIB = 1024 * 1024
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
CA_ENV = "RELPIPE_REGISTRY_CA_BUNDLE"  # extra PEM CA file trusted for registries and token realms


class RegistryError(ImageError):
    """A registry answered wrongly or not at all. exit_code 1 (checked) unless environmental."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


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


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """`total_s` bounds one request end to end, retries and backoff included."""

    connect_s: float = 5.0
    read_s: float = 30.0
    total_s: float = 120.0

    @classmethod
    def of(cls, value: float | Timeouts) -> Timeouts:
        """A number means: no request, retries included, lasts longer than that."""
        if isinstance(value, Timeouts):
            return value
        return cls(connect_s=min(5.0, float(value)), read_s=float(value), total_s=float(value))


@dataclass(frozen=True)
class Limits:
    manifest_bytes: int = 4 * MIB
    config_bytes: int = 8 * MIB
    token_bytes: int = 1 * MIB
    tags_page_bytes: int = 16 * MIB
    max_tags: int = 1_000_000
    max_pages: int = 10_000


@dataclass(frozen=True)
class Response:
    """A complete response: headers with lower-case names, the body read under its cap."""

    status_code: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    @property
    def status(self) -> int:
        return self.status_code

    def read(self) -> bytes:
        return self.body


@dataclass
class Request:
    """The light driver's request (the attributes `images.auth` reads on an httpx.Request)."""

    method: str
    url: str
    headers: dict[str, str]
    content: bytes | None = None
    extensions: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.extensions = dict(self.extensions or {})

    @classmethod
    def make(cls, method: str, url: str, headers: dict[str, str], ext: dict[str, Any]) -> Request:
        return cls(method, url, dict(headers), None, ext)


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) with the default port filled in: what "same origin" compares."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    return scheme, (parts.hostname or "").lower(), port


def safe_url(url: str) -> str:
    """A URL for a message: no userinfo, no query (uploads carry state tokens there)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


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


def ssl_context(ca: str | None) -> ssl.SSLContext:
    """System trust store (plus certifi when installed) plus an optional extra CA bundle."""
    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(cafile=certifi.where())
    except ImportError:
        pass
    if ca:
        try:
            context.load_verify_locations(cafile=ca)
        except (OSError, ssl.SSLError) as exc:
            raise RegistryError(f"cannot load CA bundle {ca}: {exc}", 2) from None
    return context


class Retryable(Exception):
    """One attempt failed in a way another attempt may fix (connection, deadline)."""


class CertificateRefused(Exception):
    """TLS verification failed: retrying cannot fix trust."""


class _Stale(Exception):
    """A pooled keep-alive connection was closed by the server before it answered."""


_Key = tuple[str, str, int]


class Engine:
    """HTTP/1.1 exchanges over `http.client`: keep-alive pool per origin, watchdog, caps."""

    def __init__(self, *, timeouts: Timeouts, ca_bundle: str | None, pool_size: int) -> None:
        self.timeouts = timeouts
        self._ca = ca_bundle
        self._context: ssl.SSLContext | None = None
        self._pool_size = pool_size
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()

    def _tls(self) -> ssl.SSLContext:
        # Loading the CA store costs ~0.1-0.5 s; loopback registries never need it.
        with self._lock:
            if self._context is None:
                self._context = ssl_context(self._ca)
            return self._context

    def _checkout(self, key: _Key) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop(), True
        return self._connection(key), False

    def _connection(self, key: _Key) -> http.client.HTTPConnection:
        scheme, host, port = key
        if scheme == "https":
            return http.client.HTTPSConnection(
                host, port, timeout=self.timeouts.connect_s, context=self._tls()
            )
        if scheme != "http":
            raise RegistryError(f"unsupported URL scheme {scheme!r}", 1)
        return http.client.HTTPConnection(host, port, timeout=self.timeouts.connect_s)

    def _checkin(self, key: _Key, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._pool_size:
                idle.append(conn)
                return
        conn.close()

    def send_once(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        cap: int,
        deadline: float,
    ) -> Response:
        """One exchange, complete before `deadline` (time.monotonic) or `Retryable`."""
        key = origin(url)
        parts = urllib.parse.urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn, _ = self._checkout(key)
        try:
            return self._exchange(conn, key, method, url, target, headers, body, cap, deadline)
        except _Stale:
            conn = self._connection(key)
            return self._exchange(conn, key, method, url, target, headers, body, cap, deadline)

    def _exchange(
        self,
        conn: http.client.HTTPConnection,
        key: _Key,
        method: str,
        url: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        cap: int,
        deadline: float,
    ) -> Response:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            conn.close()
            raise Retryable("deadline passed")
        fired = threading.Event()

        def abort() -> None:
            fired.set()
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(remaining, abort)
        watchdog.daemon = True
        watchdog.start()
        fresh = conn.sock is None
        received = False
        try:
            if fresh:
                conn.timeout = min(self.timeouts.connect_s, remaining)
                conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(min(self.timeouts.read_s, max(0.001, remaining)))
            conn.request(method, target, body=body, headers=dict(headers))
            resp = conn.getresponse()
            received = True
            length = resp.getheader("content-length")
            if method != "HEAD" and length and length.isdigit() and int(length) > cap:
                conn.close()
                raise RegistryError(
                    f"{method} {safe_url(url)}: response of {length} bytes exceeds the "
                    f"{cap}-byte cap"
                )
            data = bytearray()
            if method == "HEAD":
                resp.read()  # marks the exchange complete so the connection can be reused
            else:
                while chunk := resp.read(65536):
                    data += chunk
                    if len(data) > cap:
                        conn.close()
                        raise RegistryError(
                            f"{method} {safe_url(url)}: response exceeds the {cap}-byte cap"
                        )
                if length and length.isdigit() and len(data) != int(length):
                    # http.client returns a short body silently when the peer hangs up.
                    raise http.client.IncompleteRead(bytes(data), int(length) - len(data))
            names: dict[str, str] = {}
            for name, value in resp.getheaders():
                low = name.lower()
                names[low] = f"{names[low]}, {value}" if low in names else value
            out = Response(resp.status, names, bytes(data), url)
        except ssl.SSLCertVerificationError as exc:
            conn.close()
            raise CertificateRefused(
                str(exc.verify_message or exc.reason or "verification failed")
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if fired.is_set():
                raise Retryable(
                    f"no complete response within the {self.timeouts.total_s:g} s deadline"
                ) from None
            # Only a clean close of an idle keep-alive connection is retried silently; a reset
            # is a fault like any other (it costs an attempt).
            stale = (http.client.RemoteDisconnected, BrokenPipeError)
            if not fresh and not received and isinstance(exc, stale):
                raise _Stale() from None
            raise Retryable(f"{exc.__class__.__name__}: {exc}") from None
        finally:
            watchdog.cancel()
        if fired.is_set():
            conn.close()
            raise Retryable(f"no complete response within the {self.timeouts.total_s:g} s deadline")
        if resp.will_close:
            conn.close()
        else:
            self._checkin(key, conn)
        return out


def send_with_retry(
    once: Callable[[float], Response],
    *,
    method: str,
    url: str,
    policy: RetryPolicy,
    timeouts: Timeouts,
    sleep: Callable[[float], None],
    rng: random.Random,
    count: Callable[[], None],
) -> Response:
    """`once(deadline)` with retries: 429 (Retry-After), 5xx and transport errors; bounded."""
    deadline = time.monotonic() + timeouts.total_s
    last = ""
    tried = 0
    for attempt in range(policy.attempts):
        retry_after = None
        count()
        tried += 1
        try:
            resp = once(deadline)
        except CertificateRefused as exc:
            # Retrying cannot fix trust; say what can (every registry command has --ca-bundle).
            raise RegistryError(
                f"{safe_url(url)}: TLS certificate not trusted ({exc}); "
                f"pass --ca-bundle or set {CA_ENV}",
                exit_code=2,
            ) from None
        except Retryable as exc:
            last = str(exc)
        else:
            if resp.status_code not in RETRY_STATUS:
                return resp
            last = f"HTTP {resp.status_code}"
            retry_after = parse_retry_after(resp.headers.get("retry-after"))
        if attempt + 1 >= policy.attempts:
            break
        pause = policy.delay(attempt, retry_after, rng)
        if time.monotonic() + pause >= deadline:
            last += f"; the {timeouts.total_s:g} s deadline leaves no time to retry"
            break
        sleep(pause)
    environmental = not last.startswith("HTTP")
    raise RegistryError(
        f"{method} {safe_url(url)} failed after {tried} attempts ({last}); "
        "check that the registry is up and reachable",
        exit_code=2 if environmental else 1,
    )


Send = Callable[[str, str, dict[str, str], bytes | None, dict[str, Any]], Response]


def __getattr__(name: str) -> Any:
    # PEP 562: `HttpxTransport` subclasses httpx.BaseTransport, so it is built on first use.
    if name == "HttpxTransport":
        global HttpxTransport
        HttpxTransport = _build_httpx_transport()
        return HttpxTransport
    raise AttributeError(name)


def _build_httpx_transport() -> type:
    import httpx

    class HttpxTransport(httpx.BaseTransport):
        """httpx's transport slot filled by `send` (retries, deadline and caps of this module)."""

        def __init__(self, send: Send) -> None:
            self._send = send

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            headers = dict(request.headers)
            # Digests are over the bytes as stored: never let a proxy re-encode them.
            headers["accept-encoding"] = "identity"
            body = request.read() or None
            resp = self._send(
                request.method, str(request.url), headers, body, dict(request.extensions)
            )
            kept = [(k, v) for k, v in resp.headers.items() if k != "transfer-encoding"]
            return httpx.Response(resp.status_code, headers=kept, content=resp.body)

    return HttpxTransport
