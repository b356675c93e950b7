"""Registry authentication: credentials, challenges and the auth flow (Basic and Bearer tokens).

The flow is written in `httpx.Auth`'s generator protocol (yield a request, receive its response)
and is sans-IO, so one implementation serves both engines: `RegistryAuth` (an `httpx.Auth`
subclass, built on first use so that importing this module never imports httpx) and the light
stdlib driver of `images.registry` that `relpipe images resolve` uses.

Security rules (issue 17.1), enforced here and nowhere else:
- credentials for a registry go only to the origin the request was addressed to and to the token
  realm named by a challenge that THAT origin sent;
- a 401 from any other origin (a blob redirected to a storage host) is returned as it is: never
  answered with credentials, never cached as the registry's challenge;
- a token realm over plain HTTP is refused unless it is a loopback address.

Credentials come from `RELPIPE_REGISTRY_USERNAME`/`_PASSWORD` (scoped to
`RELPIPE_REGISTRY_AUTH_HOST`), else from the Docker config through the docker SDK's own credential
handling (`auths`, `credsStore`, `credHelpers` with their `docker-credential-*` helpers). They are
never part of a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
import urllib.parse
import warnings
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import jsonload
from ..core.reference import is_loopback
from .transport import RegistryError, origin, safe_url

USER_ENV = "RELPIPE_REGISTRY_USERNAME"
PASSWORD_ENV = "RELPIPE_REGISTRY_PASSWORD"
AUTH_HOST_ENV = "RELPIPE_REGISTRY_AUTH_HOST"

# Request extensions naming what the flow needs (httpx passes unknown extensions through).
REGISTRY_EXT = "relpipe.registry"  # the host[:port] contacted; credentials are looked up by it
SCOPE_EXT = "relpipe.scope"  # e.g. repository:rocm/atom-dev:pull
CAP_EXT = "relpipe.cap"  # response body cap in bytes (enforced by the transport)
KIND_EXT = "relpipe.kind"  # request kind for counters ("HEAD manifest", "token", ...)
# time.monotonic() by which the logical request ends, every redirect hop and retry included; set
# by the first hop's transport call and carried to the next hops with the extensions.
DEADLINE_EXT = "relpipe.deadline"


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def basic(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class Challenge:
    scheme: str  # "basic" | "bearer" | anything else (ignored)
    params: tuple[tuple[str, str], ...] = ()

    def get(self, key: str) -> str | None:
        return dict(self.params).get(key)


# A pattern, not a compiled regex: `re` compiles (and caches) it on first use, which keeps the
# start-up of `images resolve` (no challenge on an anonymous registry) from paying for it.
_PARAM = r'([A-Za-z_][A-Za-z0-9_-]*)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))'


def parse_challenge(header: str) -> Challenge:
    """Parse one `WWW-Authenticate` challenge (Basic or Bearer with realm/service/scope)."""
    scheme, _, rest = header.strip().partition(" ")
    params = tuple(
        (m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3))
        for m in re.finditer(_PARAM, rest)
    )
    return Challenge(scheme.lower(), params)


# -- credentials ------------------------------------------------------------------------------


def docker_config_path(env: Mapping[str, str]) -> Path:
    base = env.get("DOCKER_CONFIG")
    home = env.get("HOME") or str(Path.home())
    return Path(base) / "config.json" if base else Path(home) / ".docker" / "config.json"


def load_credentials(
    registry: str, env: Mapping[str, str] | None = None, config_path: Path | None = None
) -> Credentials | None:
    """Credentials for `registry` (host[:port] or `docker.io`): environment, else Docker config."""
    env = os.environ if env is None else env
    user, password = env.get(USER_ENV), env.get(PASSWORD_ENV)
    if user or password:
        host = env.get(AUTH_HOST_ENV)
        if not (user and password and host):
            raise RegistryError(
                f"set all of {USER_ENV}, {PASSWORD_ENV} and {AUTH_HOST_ENV} "
                "(the registry they are for)",
                exit_code=2,
            )
        if host == registry:
            return Credentials(user, password)
    path = config_path or docker_config_path(env)
    if not path.is_file():
        return None
    return _docker_sdk_credentials(registry, path, env)


def _docker_sdk_credentials(
    registry: str, path: Path, env: Mapping[str, str]
) -> Credentials | None:
    """The docker SDK resolves `auths`, `credsStore` and `credHelpers` exactly as docker does."""
    try:
        doc = jsonload.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError(
            f"cannot read Docker config {path}: {exc.__class__.__name__}", 2
        ) from None
    if not isinstance(doc, dict):
        raise RegistryError(f"Docker config {path} is not a JSON object", 2)
    # Imported here: the docker SDK pulls in requests/urllib3, needed only when a registry
    # actually asks for credentials.
    from docker import auth as docker_auth
    from docker import errors as docker_errors

    try:
        with warnings.catch_warnings():
            # A missing helper is reported by the error below in one line, not as a warning.
            warnings.simplefilter("ignore")
            config = docker_auth.load_config(config_dict=doc, credstore_env=dict(env))
            entry = config.resolve_authconfig(registry)
    except docker_errors.DockerException as exc:
        # The message may quote helper output but never the secret (helpers print it on stdout).
        raise RegistryError(
            f"Docker credential helper failed for {registry}: {str(exc).splitlines()[0][:200]}",
            2,
        ) from None
    except (ValueError, TypeError) as exc:
        raise RegistryError(
            f"Docker config {path}: entry for {registry} is malformed ({exc.__class__.__name__})",
            2,
        ) from None
    if not entry:
        return None
    username, password = entry.get("Username") or entry.get("username"), None
    password = entry.get("Password") or entry.get("password") or entry.get("IdentityToken")
    if isinstance(username, str) and username and isinstance(password, str):
        return Credentials(username, password)
    raise RegistryError(
        f"Docker config {path}: the entry for {registry} has no username and password", 2
    )


# -- the flow ---------------------------------------------------------------------------------

FlowRequest = Any  # httpx.Request or the light driver's request: .method .url .headers .extensions
FlowResponse = Any  # httpx.Response or the light driver's: .status_code .headers .url .read()
MakeRequest = Callable[[str, str, dict[str, str], dict[str, Any]], FlowRequest]


class Authenticator:
    """Challenges and tokens of every registry one client talks to; thread-safe.

    `flow(request, make_request)` is the generator both engines drive. Only a 401 whose response
    origin is the request's own origin teaches a challenge (see the module docstring).
    """

    def __init__(
        self,
        credentials: Callable[[str], Credentials | None],
        *,
        token_cap: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._credentials = credentials
        self._token_cap = token_cap
        self._clock = clock
        self._lock = threading.Lock()
        self._challenges: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}

    def __repr__(self) -> str:
        return f"Authenticator(registries={sorted(self._challenges)})"

    def challenge(self, registry: str) -> Challenge | None:
        with self._lock:
            return self._challenges.get(registry)

    def forget(self, registry: str) -> None:
        with self._lock:
            self._challenges.pop(registry, None)

    def flow(
        self, request: FlowRequest, make_request: MakeRequest
    ) -> Generator[FlowRequest, FlowResponse, None]:
        registry = request.extensions.get(REGISTRY_EXT)
        if registry is None:  # not a registry API request (e.g. a token request): as it is
            yield request
            return
        scope = request.extensions.get(SCOPE_EXT) or ""
        home = origin(str(request.url))
        known = self.challenge(registry)
        sent: str | None = None
        if known is not None:
            sent = yield from self._authorization(registry, known, scope, None, make_request)
            if sent:
                request.headers["Authorization"] = sent
        response = yield request
        if response.status_code != 401 or origin(str(response.url)) != home:
            # A 401 from elsewhere (a redirect target) is the caller's failure, not a challenge.
            return
        text = response.headers.get("www-authenticate") or ""
        challenge = parse_challenge(text)
        if challenge.scheme not in ("basic", "bearer"):
            return
        with self._lock:
            self._challenges[registry] = challenge
        header = yield from self._authorization(registry, challenge, scope, sent, make_request)
        if header:
            request.headers["Authorization"] = header
            yield request

    def _authorization(
        self,
        registry: str,
        challenge: Challenge,
        scope: str,
        rejected: str | None,
        make_request: MakeRequest,
    ) -> Generator[FlowRequest, FlowResponse, str | None]:
        """The Authorization value for `challenge`; `rejected` is the value just refused."""
        if challenge.scheme == "basic":
            creds = self._credentials(registry)
            if creds is None:
                raise RegistryError(
                    f"{registry} needs credentials: set {USER_ENV}/{PASSWORD_ENV}/"
                    f"{AUTH_HOST_ENV} or run docker login",
                    2,
                )
            return creds.basic()
        if challenge.scheme == "bearer":
            token = yield from self._token(registry, challenge, scope, rejected, make_request)
            return "Bearer " + token
        return None

    def _key_lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def _token(
        self,
        registry: str,
        challenge: Challenge,
        scope: str,
        rejected: str | None,
        make_request: MakeRequest,
    ) -> Generator[FlowRequest, FlowResponse, str]:
        key = (registry, scope)
        # Held across the token request so concurrent requests of one scope fetch one token;
        # CPython closes an abandoned generator at once, which releases the lock.
        with self._key_lock(key):
            cached = self._tokens.get(key)
            # A token another thread fetched meanwhile is reused; the one just refused is not.
            if cached and cached[1] > self._clock() and f"Bearer {cached[0]}" != rejected:
                return cached[0]
            realm = challenge.get("realm")
            if not realm:
                raise RegistryError(f"{registry}: bearer challenge without a realm", 1)
            parts = urllib.parse.urlsplit(realm)
            if parts.scheme not in ("http", "https") or (
                parts.scheme == "http" and not is_loopback(parts.hostname or "")
            ):
                # Credentials must never travel in clear text to a host the registry names.
                raise RegistryError(
                    f"{registry}: refusing token realm {safe_url(realm)} (needs https)", 1
                )
            params = {"scope": scope} if scope else {}
            if challenge.get("service"):
                params["service"] = challenge.get("service") or ""
            url = realm + ("&" if parts.query else "?") + urllib.parse.urlencode(params)
            headers: dict[str, str] = {}
            creds = self._credentials(registry)
            if creds:
                headers["Authorization"] = creds.basic()
            ext = {CAP_EXT: self._token_cap, KIND_EXT: "token"}
            resp = yield make_request("GET", url, headers, ext)
            body = resp.read()
            if resp.status_code in (401, 403):
                raise RegistryError(
                    f"{registry}: token server refused {scope} (HTTP {resp.status_code}); "
                    f"check the credentials ({USER_ENV}/{PASSWORD_ENV} or docker login)",
                    1,
                )
            if resp.status_code != 200:
                raise RegistryError(f"{registry}: token server answered HTTP {resp.status_code}")
            try:
                doc = jsonload.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise RegistryError(f"{registry}: token server response is not JSON", 1) from None
            token = (doc.get("token") or doc.get("access_token")) if isinstance(doc, dict) else None
            if not isinstance(token, str) or not token:
                raise RegistryError(f"{registry}: token server response has no token", 1)
            expires = doc.get("expires_in", 60)
            if not isinstance(expires, int | float) or isinstance(expires, bool) or expires <= 0:
                expires = 60
            # Renew a little early so a token never expires between check and use.
            self._tokens[key] = (token, self._clock() + max(0.0, float(expires) - 5.0))
            return token


# Declared, not assigned: module __getattr__ (PEP 562) builds it on first access.
RegistryAuth: type


def __getattr__(name: str) -> Any:
    # PEP 562: `RegistryAuth` subclasses httpx.Auth, so it is built when first asked for; the
    # light resolve path imports this module without paying for httpx.
    if name == "RegistryAuth":
        global RegistryAuth
        RegistryAuth = _build_registry_auth()
        return RegistryAuth
    raise AttributeError(name)


def _build_registry_auth() -> type:
    import httpx

    class RegistryAuth(httpx.Auth):
        """`httpx.Auth` over an `Authenticator`: httpx drives the same flow as the light path."""

        requires_response_body = True  # token responses are read inside the flow

        def __init__(self, authenticator: Authenticator) -> None:
            self.authenticator = authenticator

        def auth_flow(
            self, request: httpx.Request
        ) -> Generator[httpx.Request, httpx.Response, None]:
            def make(
                method: str, url: str, headers: dict[str, str], ext: dict[str, Any]
            ) -> httpx.Request:
                return httpx.Request(method, url, headers=headers, extensions=ext)

            return self.authenticator.flow(request, make)

    return RegistryAuth
