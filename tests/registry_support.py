"""Test helpers for the registry client: synthetic images pushed through the real HTTP API,
a fault-injecting proxy, a token server, and TLS/htpasswd/token registry instances.

Everything here talks to real programs (docker-registry, openssl, skopeo) on 127.0.0.1; the
proxy and the token server are the network boundary the tests control.
"""

from __future__ import annotations

import base64
import http.client
import http.server
import json
import re
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from relpipe.images import services as svc
from relpipe.images.manifest import (
    DOCKER_CONFIG,
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    Platform,
    render_index,
    render_manifest,
    sha256_digest,
)
from relpipe.images.registry import RegistryClient

LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def unique_repo(registry: str, name: str) -> str:
    """A repository name no other test or engineer uses."""
    return f"{registry}/relpipe-t3/{name}-{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class Pushed:
    digest: str
    data: bytes
    media_type: str
    config_digest: str | None = None
    children: tuple[tuple[str, str], ...] = ()  # (platform, digest)


def push_image(
    client: RegistryClient,
    repo: str,
    tag: str | None,
    *,
    oci: bool = False,
    os_: str = "linux",
    arch: str = "amd64",
    created: str = "2026-10-07T03:33:00Z",
    labels: dict[str, str] | None = None,
    seed: str = "",
) -> Pushed:
    """Push config + one layer + manifest; `tag=None` pushes by digest only."""
    config = json.dumps(
        {
            "architecture": arch,
            "os": os_,
            "created": created,
            "config": {
                "Labels": labels or {"org.opencontainers.image.title": "relpipe-test"},
                "Env": ["PATH=/usr/bin", f"SEED={seed}"],
            },
            "rootfs": {"type": "layers", "diff_ids": []},
        },
        sort_keys=True,
    ).encode()
    layer = f"layer {repo} {tag} {arch} {seed}".encode()
    cfg_d = client.upload_blob(repo, config)
    layer_d = client.upload_blob(repo, layer)
    mt = OCI_MANIFEST if oci else DOCKER_MANIFEST
    data = render_manifest(
        mt,
        Descriptor(media_type=OCI_CONFIG if oci else DOCKER_CONFIG, digest=cfg_d, size=len(config)),
        [Descriptor(media_type=OCI_LAYER if oci else LAYER_GZIP, digest=layer_d, size=len(layer))],
    )
    digest = client.put_manifest(repo, tag or sha256_digest(data), data, mt)
    return Pushed(digest, data, mt, cfg_d)


def push_index(
    client: RegistryClient,
    repo: str,
    tag: str,
    *,
    oci: bool = True,
    platforms: tuple[str, ...] = ("linux/arm64", "linux/amd64"),
    attestation: bool = True,
    seed: str = "",
) -> Pushed:
    """Push one image per platform, an optional `unknown/unknown` attestation, and an index."""
    entries: list[Descriptor] = []
    children = []
    for plat_text in platforms:
        plat = Platform.parse(plat_text)
        img = push_image(
            client, repo, None, oci=oci, os_=plat.os, arch=plat.architecture, seed=seed
        )
        entries.append(
            Descriptor(
                media_type=img.media_type, digest=img.digest, size=len(img.data), platform=plat
            )
        )
        children.append((plat_text, img.digest))
    if attestation:
        att = push_image(
            client, repo, None, oci=True, os_="unknown", arch="unknown", seed=seed + "att"
        )
        # BuildKit lists attestations first sometimes; put it first so skipping it is exercised.
        entries.insert(
            0,
            Descriptor(
                media_type=att.media_type,
                digest=att.digest,
                size=len(att.data),
                platform=Platform("unknown", "unknown"),
                annotations=(("vnd.docker.reference.type", "attestation-manifest"),),
            ),
        )
    mt = OCI_INDEX if oci else DOCKER_LIST
    data = render_index(mt, entries)
    digest = client.put_manifest(repo, tag, data, mt)
    return Pushed(digest, data, mt, None, tuple(children))


def skopeo_digest(ref: str, *extra: str) -> str:
    """The digest `skopeo inspect` reports (the reference tools people trust)."""
    out = subprocess.run(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", *extra, f"docker://{ref}"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    raw = out.stdout
    meta = subprocess.run(
        ["skopeo", "inspect", "--tls-verify=false", *extra, f"docker://{ref}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    digest = str(json.loads(meta.stdout)["Digest"])
    assert digest == sha256_digest(raw) or json.loads(raw).get("manifests"), (
        "skopeo disagrees with itself"
    )
    return digest


# -- fault-injecting proxy --------------------------------------------------------------------


@dataclass
class Fault:
    """One programmed misbehaviour for one matching request."""

    # status reset timeout truncate lie-digest strip-digest oversize invalid-json deep-json
    # drip (headers at once, then one body byte per `delay`), drip-headers (the status line and
    # headers one byte per `delay`), redirect (307 to `location` + the
    # request path), ambiguous (a manifest that also has `manifests`, served as `media_type`)
    kind: str
    status: int = 503
    retry_after: str | None = None
    size: int = 0
    chunked: bool = False
    delay: float = 1.0
    location: str = ""
    media_type: str = ""


@dataclass
class _Program:
    method: str | None
    path: re.Pattern[str]
    faults: list[Fault]


class FaultProxy:
    """A threaded HTTP proxy on 127.0.0.1 that forwards to a registry and injects faults.

    With `paginate_tags`, tag listings are served in pages (`n`, `last`, `Link: rel="next"`) as
    Docker Hub and distribution 3 do: the Debian registry (distribution 2.8) ignores `n`.
    """

    def __init__(
        self, upstream: str, paginate_tags: bool = False, basic: tuple[str, str] | None = None
    ) -> None:
        self.upstream = upstream
        self.paginate_tags = paginate_tags
        # With `basic`, the proxy is the registry's origin and demands these credentials.
        self.basic = (
            "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
            if basic
            else None
        )
        self.log: list[tuple[str, str, str]] = []  # (method, path, fault kind or "pass")
        self._programs: list[_Program] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _any

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.addr = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def program(self, path: str, *faults: Fault, method: str | None = None) -> None:
        with self._lock:
            self._programs.append(_Program(method, re.compile(path), list(faults)))

    def _next_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for prog in self._programs:
                if prog.faults and (prog.method in (None, method)) and prog.path.search(path):
                    return prog.faults.pop(0)
        return None

    def _forward(
        self, h: http.server.BaseHTTPRequestHandler
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(h.command, h.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        out = [
            (k, v)
            for k, v in resp.getheaders()
            if k.lower() not in ("connection", "transfer-encoding", "keep-alive")
        ]
        return resp.status, out, data

    def _handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        if self.basic and h.headers.get("Authorization") != self.basic:
            self._drain(h)
            body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "auth"}]}).encode()
            headers = [("WWW-Authenticate", 'Basic realm="relpipe-proxy"')]
            return self._reply(h, 401, headers, body)
        fault = self._next_fault(h.command, h.path)
        with self._lock:
            self.log.append((h.command, h.path, fault.kind if fault else "pass"))
        if fault is None:
            status, headers, data = self._forward(h)
            if self.paginate_tags and status == 200 and "/tags/list" in h.path:
                headers, data = self._page(h.path, headers, data)
            self._reply(h, status, headers, data)
        else:
            self._inject(h, fault)

    def _inject(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        """Answer one request with the programmed fault instead of the registry's reply."""
        if fault.kind in ("status", "reset", "timeout", "redirect"):
            self._refuse(h, fault)
        elif fault.kind in ("drip-headers", "drip"):
            self._drip(h, fault)
        elif fault.kind == "oversize":
            self._oversize(h, fault)
        else:
            self._tamper(h, fault)

    def _refuse(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        """A fault of the connection or the status: an error, a reset, silence, a redirect."""
        if fault.kind == "status":
            body = json.dumps({"errors": [{"code": "UNAVAILABLE", "message": "injected"}]}).encode()
            headers = [("Content-Type", "application/json")]
            if fault.retry_after is not None:
                headers.append(("Retry-After", fault.retry_after))
            self._drain(h)
            self._reply(h, fault.status, headers, body)
        elif fault.kind == "reset":
            self._drain(h)
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()
            h.close_connection = True
        elif fault.kind == "timeout":
            self._drain(h)
            time.sleep(fault.delay)
            h.close_connection = True
        elif fault.kind == "redirect":
            self._drain(h)
            self._reply(h, 307, [("Location", fault.location + h.path)], b"")

    def _drip(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        """The registry's reply a byte at a time (its headers, or its body)."""
        if fault.kind == "drip-headers":
            status, headers, data = self._forward(h)
            head = [f"HTTP/1.1 {status} OK\r\n"] + [f"{k}: {v}\r\n" for k, v in headers]
            try:
                for byte in "".join(head).encode("latin-1"):
                    h.wfile.write(bytes([byte]))
                    h.wfile.flush()
                    time.sleep(fault.delay)
            except OSError:
                pass  # the client gave up at its deadline: that is the point
            h.close_connection = True
        elif fault.kind == "drip":
            status, headers, data = self._forward(h)
            h.send_response(status)
            for k, v in headers:
                if k.lower() != "content-length":
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            try:
                for i in range(len(data)):
                    h.wfile.write(data[i : i + 1])
                    h.wfile.flush()
                    time.sleep(fault.delay)
            except OSError:
                pass  # the client gave up at its deadline: that is the point
            h.close_connection = True

    def _oversize(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        """A manifest reply larger than any client cap (chunked, or a huge Content-Length)."""
        self._drain(h)
        h.send_response(200)
        h.send_header("Content-Type", DOCKER_MANIFEST)
        if fault.chunked:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(fault.size // len(chunk) + 1):
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client hung up at its cap: that is the point
        else:
            h.send_header("Content-Length", str(fault.size))
            h.end_headers()
        h.close_connection = True

    def _tamper(self, h: http.server.BaseHTTPRequestHandler, fault: Fault) -> None:
        """The registry's reply, altered: cut short, digests stripped or lied, bad JSON."""
        status, headers, data = self._forward(h)
        if fault.kind == "truncate":
            h.send_response(status)
            for k, v in headers:
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            h.close_connection = True
            return
        if fault.kind == "strip-digest":
            headers = [(k, v) for k, v in headers if k.lower() != "docker-content-digest"]
        elif fault.kind == "lie-digest":
            headers = [(k, v) for k, v in headers if k.lower() != "docker-content-digest"]
            headers.append(("Docker-Content-Digest", sha256_digest(b"a lie " + data)))
        elif fault.kind == "ambiguous":
            doc = json.loads(data)
            doc.pop("mediaType", None)
            doc["manifests"] = []  # containerd's rule: both kinds of fields is ambiguous
            data = json.dumps(doc).encode()
            headers = [
                (k, v)
                for k, v in headers
                if k.lower() not in ("docker-content-digest", "content-type")
            ]
            headers.append(("Docker-Content-Digest", sha256_digest(data)))
            headers.append(("Content-Type", fault.media_type))
        elif fault.kind in ("invalid-json", "deep-json"):
            status, headers, data = self._bad_json(status, headers, fault)
        self._reply(h, status, headers, data)

    @staticmethod
    def _page(
        path: str, headers: list[tuple[str, str]], data: bytes
    ) -> tuple[list[tuple[str, str]], bytes]:
        parts = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        doc = json.loads(data)
        tags = sorted(doc.get("tags") or [])
        if "last" in query:
            tags = [t for t in tags if t > query["last"]]
        n = int(query.get("n", "100"))
        page, more = tags[:n], len(tags) > n
        headers = [(k, v) for k, v in headers if k.lower() not in ("link", "content-length")]
        if more:
            nxt = urllib.parse.urlencode({"n": n, "last": page[-1]})
            headers.append(("Link", f'<{parts.path}?{nxt}>; rel="next"'))
        return headers, json.dumps({"name": doc["name"], "tags": page}).encode()

    @staticmethod
    def _bad_json(
        status: int, headers: list[tuple[str, str]], fault: Fault
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """invalid-json: a truncated document; deep-json: valid JSON 100,000 arrays deep, served
        as found (200, `fault.media_type`). Either with its own digest."""
        drop = ("docker-content-digest",)
        if fault.kind == "invalid-json":
            data = b'{"schemaVersion": 2, "mediaType": '
        else:
            data, status, drop = b"[" * 100_000 + b"]" * 100_000, 200, (*drop, "content-type")
        kept = [(k, v) for k, v in headers if k.lower() not in drop]
        kept.append(("Docker-Content-Digest", sha256_digest(data)))
        if fault.kind == "deep-json":
            kept.append(("Content-Type", fault.media_type or "application/json"))
        return status, kept, data

    @staticmethod
    def _drain(h: http.server.BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)

    @staticmethod
    def _reply(
        h: http.server.BaseHTTPRequestHandler,
        status: int,
        headers: list[tuple[str, str]],
        data: bytes,
    ) -> None:
        h.send_response(status)
        has_length = False
        for k, v in headers:
            if k.lower() == "content-length":
                has_length = True
                if h.command != "HEAD":
                    v = str(len(data))
            h.send_header(k, v)
        if not has_length:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)


class StorageServer:
    """Another origin on 127.0.0.1 that a registry redirects blob GETs to (as S3 or a CDN is).

    `challenge=False`: serves GETs from the (anonymous) upstream registry, as presigned storage
    does. `challenge=True`: answers 401 with its OWN Bearer realm, the attack of issue 17.1.
    `seen` records (method, path, Authorization header or None) of every request, token
    requests included, so a test can assert that no credential ever arrived here.
    """

    def __init__(self, upstream: str, challenge: bool = False) -> None:
        self.upstream, self.challenge = upstream, challenge
        self.seen: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()
        storage = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                storage._handle(self)

            do_GET = do_HEAD = _any

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.seen.append((h.command, h.path, h.headers.get("Authorization")))
        if self.challenge:
            realm = f'Bearer realm="{self.url}/token",service="storage",scope="blob:read"'
            return FaultProxy._reply(h, 401, [("WWW-Authenticate", realm)], b"{}")
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        conn.request(h.command, h.path)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        FaultProxy._reply(h, resp.status, [("Content-Type", "application/octet-stream")], data)

    def credentials_seen(self) -> list[str]:
        return [auth for _, _, auth in self.seen if auth]


# -- TLS material, token server, extra registries ---------------------------------------------


def make_cert(folder: Path, name: str, cn: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed RSA certificate valid for 127.0.0.1 and localhost (openssl CLI)."""
    key, cert = folder / f"{name}.key", folder / f"{name}.crt"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            f"/CN={cn}",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return key, cert


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenServer:
    """A Docker-style token server: checks Basic credentials, issues RS256 JWTs with x5c."""

    def __init__(
        self,
        folder: Path,
        users: dict[str, str],
        service: str = "relpipe-test",
        issuer: str = "relpipe-test-issuer",
        field: str = "token",
        expires_in: int = 300,
    ) -> None:
        self.key, self.cert = make_cert(folder, "token-signer", "relpipe token signer")
        der = subprocess.run(
            ["openssl", "x509", "-in", str(self.cert), "-outform", "DER"],
            check=True,
            capture_output=True,
            timeout=30,
        ).stdout
        self._x5c = base64.b64encode(der).decode("ascii")
        self.users, self.service, self.issuer = users, service, issuer
        self.field, self.expires_in = field, expires_in
        self.requests: list[tuple[str, str | None]] = []  # (scope, user)
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                server._handle(self)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.realm = f"http://127.0.0.1:{self._server.server_address[1]}/token"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _sign(self, claims: dict[str, object]) -> str:
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        sig = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", str(self.key)],
            input=signing_input.encode(),
            check=True,
            capture_output=True,
            timeout=30,
        ).stdout
        return f"{signing_input}.{_b64url(sig)}"

    def _handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
        scopes = query.get("scope", [])
        user = None
        auth = h.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            if self.users.get(user) != password:
                return self._reply(h, 401, {"details": "bad credentials"})
        with self._lock:
            self.requests.append((" ".join(scopes), user))
        if user is None:
            return self._reply(h, 401, {"details": "credentials required"})
        access = []
        for scope in scopes:
            kind, name, actions = scope.split(":")
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": user,
            "aud": self.service,
            "exp": now + self.expires_in,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        self._reply(h, 200, {self.field: self._sign(claims), "expires_in": self.expires_in})

    @staticmethod
    def _reply(h: http.server.BaseHTTPRequestHandler, status: int, doc: dict[str, object]) -> None:
        body = json.dumps(doc).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def scope_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for scope, _ in self.requests:
            out[scope] = out.get(scope, 0) + 1
        return out


@dataclass
class ExtraRegistry:
    addr: str
    pid: int
    ca: Path | None = None
    extra: dict[str, object] = field(default_factory=dict)


def start_tls_htpasswd_registry(folder: Path, users: dict[str, str]) -> ExtraRegistry:
    """A registry with TLS (self-signed CA) and bcrypt htpasswd basic auth."""
    import bcrypt

    key, cert = make_cert(folder, "registry-tls")
    htpasswd = folder / "htpasswd"
    htpasswd.write_text(
        "".join(
            f"{u}:{bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode()}\n"
            for u, p in users.items()
        )
    )
    extra = (
        f"  tls:\n    certificate: {cert}\n    key: {key}\n"
        f"auth:\n  htpasswd:\n    realm: relpipe-test\n    path: {htpasswd}\n"
    )
    addr, pid = svc.start_registry(folder, extra, name="registry-tls")
    return ExtraRegistry(addr, pid, cert)


def start_token_registry(folder: Path, token_server: TokenServer) -> ExtraRegistry:
    """A plain-HTTP loopback registry with `auth: token` trusting the token server's signer."""
    extra = (
        f"auth:\n  token:\n    realm: {token_server.realm}\n    service: {token_server.service}\n"
        f"    issuer: {token_server.issuer}\n    rootcertbundle: {token_server.cert}\n"
    )
    addr, pid = svc.start_registry(folder, extra, name="registry-token")
    return ExtraRegistry(addr, pid)


def stop_registry(reg: ExtraRegistry) -> None:
    svc.stop_pid(reg.pid)
