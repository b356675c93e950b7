"""Registry HTTP transport: one HTTP/1.1 engine with retries, an overall deadline and size caps.

`Engine` speaks HTTP/1.1 over the standard library's `http.client` with a keep-alive pool per
origin; it is the only code that touches sockets. `send_with_retry` wraps one exchange with the
retry policy (429 and 5xx, honouring `Retry-After`; connection errors; bounded attempts with
jittered backoff). Every request has an OVERALL deadline that covers connecting, headers, body,
retries and redirect hops (one deadline per logical request, issue 27.6): a watchdog shuts the
socket down when it passes, so a server dripping one byte at a time cannot hold a request longer
than its timeout (issue 17.8). Bodies are read under a cap and a
larger body is an error, never retried.

Two drivers sit on top, with the same semantics because they share this engine and
`images.auth.Authenticator`: httpx (`HttpxTransport`, an `httpx.BaseTransport`, built on first use)
and the light driver of `images.registry` that keeps `relpipe images resolve` free of httpx.
Nothing here imports httpx at module level.
"""

from __future__ import annotations

import random
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ImageError
from .options import CA_ENV

MIB = 1024 * 1024
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class RegistryError(ImageError):
    """A registry answered wrongly or not at all. exit_code 1 (checked) unless environmental."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
class Limits:
    manifest_bytes: int = 4 * MIB
    config_bytes: int = 8 * MIB
    token_bytes: int = 1 * MIB
    tags_page_bytes: int = 16 * MIB
    max_tags: int = 1_000_000
    max_pages: int = 10_000


@dataclass(frozen=True, kw_only=True)
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


@dataclass(kw_only=True)
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
        return cls(method=method, url=url, headers=dict(headers), content=None, extensions=ext)


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
    import email.utils  # deferred: rare path; kept off the start-up import list

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def ssl_context(ca: str | None) -> Any:
    """System trust store (plus certifi when installed) plus an optional extra CA bundle."""
    import ssl  # deferred: only registries spoken to over HTTPS pay for it

    context = ssl.create_default_context()
    try:
        import certifi  # deferred: optional, its absence is handled here

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


class _Protocol(Exception):
    """The peer broke HTTP/1.1 framing (a retryable fault, like a reset)."""


_Key = tuple[str, str, int]
_LINE = 65536  # longest status or header line accepted
_HEADERS = 200  # most header lines accepted
_CHUNK = 65536
_NO_BODY = frozenset({204, 304})


class _Connection:
    """One HTTP/1.1 connection: a socket and its buffered reader."""

    def __init__(self, key: _Key) -> None:
        self.key = key
        self.sock: socket.socket | None = None
        self.rfile: Any = None

    def open(self, timeout: float, tls: Callable[[], Any]) -> None:
        scheme, host, port = self.key
        sock = socket.create_connection((host, port), timeout=timeout)
        if scheme == "https":
            try:
                sock = tls().wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        self.rfile = sock.makefile("rb")

    def close(self) -> None:
        if self.rfile is not None:
            self.rfile.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self.rfile = None


def _check_header(name: str, value: str) -> None:
    # A CR or LF in a header would let a caller's value inject requests (fail closed).
    if any(c in "\r\n\0" for c in name + value) or not name or ":" in name:
        raise RegistryError(f"refusing to send a malformed header {name!r}", 2)


class Engine:
    """HTTP/1.1 exchanges on plain sockets: keep-alive pool per origin, watchdog, caps.

    A small client of its own rather than `http.client`, whose import (email parsing, ssl) is
    about a third of `relpipe images resolve`'s CPU time. It speaks only what registries need:
    Content-Length and chunked bodies, bodies ending at close, keep-alive; everything else the
    peer sends that breaks framing is a fault of the attempt.
    """

    def __init__(self, *, timeouts: Timeouts, ca_bundle: str | None, pool_size: int) -> None:
        self.timeouts = timeouts
        self._ca = ca_bundle
        self._context: Any = None
        self._pool_size = pool_size
        self._idle: dict[_Key, list[_Connection]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()

    def _tls(self) -> Any:
        # Loading the CA store costs ~0.1-0.5 s; loopback registries never need it.
        with self._lock:
            if self._context is None:
                self._context = ssl_context(self._ca)
            return self._context

    def _checkout(self, key: _Key) -> _Connection:
        if key[0] not in ("http", "https"):
            raise RegistryError(f"unsupported URL scheme {key[0]!r}", 1)
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return _Connection(key)

    def _checkin(self, conn: _Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(conn.key, [])
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
        host = parts.netloc.rpartition("@")[2]
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
        for name, value in headers.items():
            if name.lower() in ("host", "content-length", "connection", "transfer-encoding"):
                continue
            _check_header(name, value)
            lines.append(f"{name}: {value}")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        conn = self._checkout(key)
        try:
            return self._exchange(conn, method, url, request, cap, deadline)
        except _Stale:
            return self._exchange(_Connection(key), method, url, request, cap, deadline)

    def _exchange(
        self, conn: _Connection, method: str, url: str, request: bytes, cap: int, deadline: float
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
        reused = conn.sock is not None
        try:
            if not reused:
                conn.open(min(self.timeouts.connect_s, remaining), self._tls)
            assert conn.sock is not None
            conn.sock.settimeout(min(self.timeouts.read_s, max(0.001, remaining)))
            try:
                conn.sock.sendall(request)
            except BrokenPipeError:
                if reused:
                    raise _Stale() from None
                raise
            out, keep = self._response(conn, method, url, cap, reused)
        except (_Stale, RegistryError):
            conn.close()
            raise
        except (OSError, ValueError, _Protocol) as exc:
            conn.close()
            ssl = sys.modules.get("ssl")
            if ssl is not None and isinstance(exc, ssl.SSLCertVerificationError):
                raise CertificateRefused(
                    str(exc.verify_message or exc.reason or "verification failed")
                ) from None
            if fired.is_set():
                raise Retryable(
                    f"no complete response within the {self.timeouts.total_s:g} s deadline"
                ) from None
            raise Retryable(f"{exc.__class__.__name__}: {exc}") from None
        finally:
            watchdog.cancel()
        if fired.is_set():
            conn.close()
            raise Retryable(f"no complete response within the {self.timeouts.total_s:g} s deadline")
        if keep:
            self._checkin(conn)
        else:
            conn.close()
        return out

    def _response(
        self, conn: _Connection, method: str, url: str, cap: int, reused: bool
    ) -> tuple[Response, bool]:
        rfile = conn.rfile
        while True:
            line = rfile.readline(_LINE + 1)
            if not line and reused:
                raise _Stale()  # the server closed an idle keep-alive connection
            version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
                raise _Protocol(f"bad status line {line[:40]!r}")
            status = int(code)
            names = self._headers(rfile)
            if status != 100:  # 100 Continue is followed by the real answer
                break
        connection = names.get("connection", "").lower()
        keep = version == "HTTP/1.1" and "close" not in connection
        if method == "HEAD" or status in _NO_BODY or status < 200:
            return Response(status_code=status, headers=names, body=b"", url=url), keep
        coding = names.get("transfer-encoding", "").lower()
        length = names.get("content-length")
        if coding:
            if coding.rsplit(",", 1)[-1].strip() != "chunked":
                raise _Protocol(f"unsupported transfer-encoding {coding!r}")
            data = self._chunked(rfile, method, url, cap)
        elif length is not None:
            if not length.strip().isdigit():
                raise _Protocol(f"bad content-length {length[:20]!r}")
            size = int(length)
            if size > cap:
                raise RegistryError(
                    f"{method} {safe_url(url)}: response of {size} bytes exceeds the {cap}-byte cap"
                )
            data = self._exactly(rfile, size)
        else:
            keep = False  # the body ends when the server closes
            data = bytearray()
            while chunk := rfile.read1(_CHUNK):
                data += chunk
                self._capped(len(data), method, url, cap)
        return Response(status_code=status, headers=names, body=bytes(data), url=url), keep

    @staticmethod
    def _headers(rfile: Any) -> dict[str, str]:
        names: dict[str, str] = {}
        for _ in range(_HEADERS):
            raw = rfile.readline(_LINE + 1)
            if len(raw) > _LINE:
                raise _Protocol("header line too long")
            if raw in (b"\r\n", b"\n"):
                return names
            if not raw:
                raise _Protocol("connection closed inside the headers")
            if raw[:1] in (b" ", b"\t"):
                raise _Protocol("folded header line")  # obsolete in HTTP/1.1: fail closed
            name, sep, value = raw.decode("latin-1").partition(":")
            if not sep:
                raise _Protocol(f"malformed header line {raw[:40]!r}")
            low, value = name.strip().lower(), value.strip()
            names[low] = f"{names[low]}, {value}" if low in names else value
        raise _Protocol(f"more than {_HEADERS} header lines")

    @staticmethod
    def _exactly(rfile: Any, size: int) -> bytearray:
        data = bytearray()
        while len(data) < size:
            chunk = rfile.read1(min(_CHUNK, size - len(data)))
            if not chunk:
                raise _Protocol(f"body ended after {len(data)} of {size} bytes")
            data += chunk
        return data

    def _chunked(self, rfile: Any, method: str, url: str, cap: int) -> bytearray:
        data = bytearray()
        while True:
            line = rfile.readline(_LINE + 1)
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Protocol(f"bad chunk size {line[:20]!r}") from None
            if size < 0:
                raise _Protocol("negative chunk size")
            if size == 0:
                self._headers(rfile)  # trailers, then the blank line
                return data
            self._capped(len(data) + size, method, url, cap)  # before reading it
            data += self._exactly(rfile, size)
            if rfile.readline(_LINE + 1) not in (b"\r\n", b"\n"):
                raise _Protocol("chunk not followed by CRLF")

    @staticmethod
    def _capped(size: int, method: str, url: str, cap: int) -> None:
        if size > cap:
            raise RegistryError(f"{method} {safe_url(url)}: response exceeds the {cap}-byte cap")


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
    deadline: float | None = None,
) -> Response:
    """`once(deadline)` with retries: 429 (Retry-After), 5xx and transport errors; bounded.

    `deadline` (time.monotonic) is the logical request's, shared by its redirect hops; without
    one, this exchange gets `timeouts.total_s`.
    """
    deadline = time.monotonic() + timeouts.total_s if deadline is None else deadline
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


# Declared, not assigned: module __getattr__ (PEP 562) builds it on first access.
HttpxTransport: type


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
            # The extensions themselves, not a copy: the first hop's deadline is set in them, and
            # httpx copies them into the redirect's request (one deadline per logical request).
            resp = self._send(request.method, str(request.url), headers, body, request.extensions)
            kept = [(k, v) for k, v in resp.headers.items() if k != "transfer-encoding"]
            return httpx.Response(resp.status_code, headers=kept, content=resp.body)

    return HttpxTransport
