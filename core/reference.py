"""Image references: parse and normalise `[registry/]repository[:tag][@sha256:<hex>]`.

The vocabulary every layer shares (go-containerregistry's `pkg/name`): the changelog, the notes,
the checks, the images client and the pipeline read a reference here, never by hand.

Follows the distribution reference grammar (the one docker and skopeo use): a first component
with a `.` or `:` or equal to `localhost` is a registry; Docker Hub is `docker.io` and its
single-name repositories live under `library/`. Anything else is rejected with one line that
says what was wrong, because a reference that parses "almost" is how the wrong image gets run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import RelpipeError

DOCKER_HUB = "docker.io"
# Docker Hub's API lives on a different host than its name.
DOCKER_HUB_API = "registry-1.docker.io"
_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_NAME = 255


class InvalidReference(RelpipeError):
    """A string is not a valid image reference (usage error)."""

    exit_code = 2


@dataclass(frozen=True, order=True, kw_only=True)
class Reference:
    """A normalised image reference; `tag` and `digest` may both be set (digest wins)."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        """`registry/repository`, the part that names the repository."""
        return f"{self.registry}/{self.repository}"

    @property
    def reference(self) -> str:
        """What follows `/manifests/` in the API: the digest, else the tag. A reference with
        neither is refused, never read as `latest` (a moving tag nobody named)."""
        if not (self.digest or self.tag):
            raise untagged(self.name)
        return self.digest or str(self.tag)

    @property
    def api_host(self) -> str:
        """Host[:port] the HTTP API is served on."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def loopback(self) -> bool:
        return is_loopback(self.registry)

    def with_tag(self, tag: str) -> Reference:
        return Reference(
            registry=self.registry, repository=self.repository, tag=_check_tag(tag), digest=None
        )

    def with_digest(self, digest: str) -> Reference:
        return Reference(
            registry=self.registry,
            repository=self.repository,
            tag=self.tag,
            digest=check_digest(digest),
        )

    def tagged(self) -> str:
        """`registry/repository:tag`: the key a tag is pinned under (a tag is required)."""
        if not self.tag:
            if self.digest:
                raise InvalidReference(
                    f"image reference {self.name}@{self.digest} has no tag: a pin is kept under "
                    f"its tag; write {self.name}:TAG@{self.digest}"
                )
            raise untagged(self.name)
        return f"{self.name}:{self.tag}"

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out


def untagged(name: str) -> InvalidReference:
    """The one error for an image reference without a tag or digest where one is needed."""
    short = name.removeprefix(f"{DOCKER_HUB}/").removeprefix("library/")
    return InvalidReference(
        f"image reference {short!r} has no tag or digest: write {short}:TAG or "
        f"{short}@sha256:DIGEST (relpipe never assumes :latest)"
    )


def is_loopback(registry: str) -> bool:
    """True for `localhost`, 127.0.0.0/8 and ::1 (with or without a port)."""
    host = registry
    if host.startswith("["):
        host = host[1 : host.index("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host.lower() == "localhost":
        return True
    parts = host.split(".")
    if parts[0] == "127" and len(parts) == 4:  # the common case, without importing ipaddress
        return all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts)
    if not any(c.isdigit() for c in host) and ":" not in host:
        return False  # a DNS name: no need to import ipaddress (start-up cost)
    import ipaddress  # deferred: not on the commit hook's usual path (start-up)

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_digest(text: str) -> bool:
    """`sha256:` and 64 lowercase hex digits: the one digest relpipe reads."""
    return _DIGEST.fullmatch(text) is not None


def check_digest(digest: str) -> str:
    if not is_digest(digest):
        raise InvalidReference(
            f"invalid digest {digest!r}: expected sha256: followed by 64 lowercase hex digits"
        )
    return digest


def _check_tag(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise InvalidReference(
            f"invalid tag {tag!r}: use letters, digits, '_', '.', '-' "
            "(max 128, not starting with '.' or '-')"
        )
    return tag


@dataclass(frozen=True, kw_only=True)
class Written:
    """A reference's parts as written (`split`): nothing checked, nothing normalised. For text
    that must keep its spelling (a config line, a dashboard's key, a notes token)."""

    name: str  # `[registry/]repository` as written
    tag: str | None = None  # None: no `:`; "": a `:` with nothing after it
    digest: str | None = None  # what follows the first `@`, unchecked

    @property
    def without_digest(self) -> str:
        """The text before `@`: `name[:tag]`."""
        return self.name if self.tag is None else f"{self.name}:{self.tag}"


def split(ref: str) -> Written:
    """Where `ref`'s separators are, by the grammar `parse` reads: the digest after the first
    `@`, the tag after a `:` that follows the last `/`. Never raises."""
    rest, at, digest = ref.partition("@")
    slash, colon = rest.rfind("/"), rest.rfind(":")
    if colon > slash:
        return Written(name=rest[:colon], tag=rest[colon + 1 :], digest=digest if at else None)
    return Written(name=rest, digest=digest if at else None)


def tag_or_ref(ref: str) -> str:
    """What a reader takes for an image's version: its tag as written, else the whole `ref`."""
    tag = split(ref).tag
    return ref if tag is None else tag


def familiar(name: str) -> str:
    """`name` as docker prints it: without a Docker Hub host (any of its aliases) and, on Docker
    Hub, without `library/` (`docker.io/library/ubuntu:24.04` -> `ubuntu:24.04`); the host stays
    where the rest would read as a registry. Lexical."""
    host, sep, rest = name.partition("/")
    if not sep or host.lower() not in _HUB_ALIASES or _names_registry(rest):
        return name
    official = rest.removeprefix("library/")
    return official if "/" not in official else rest


def _names_registry(path: str) -> bool:
    """Whether `path`'s first component would be read as a registry (docker's rule)."""
    first, sep, _ = path.partition("/")
    return bool(sep) and ("." in first or ":" in first or first == "localhost")


def parse(ref: str | Reference) -> Reference:
    """Parse and normalise `ref`; a `Reference` is returned unchanged."""
    if isinstance(ref, Reference):
        return ref
    if not isinstance(ref, str) or not ref or ref != ref.strip() or any(c.isspace() for c in ref):
        raise InvalidReference(f"invalid image reference {ref!r}: empty or contains whitespace")
    written = split(ref)
    rest, digest = written.name, written.digest
    if digest is not None:
        check_digest(digest)
    tag = None if written.tag is None else _check_tag(written.tag)
    if _names_registry(rest):
        registry, path = rest.split("/", 1)
        if not _DOMAIN.fullmatch(registry):
            raise InvalidReference(f"invalid registry {registry!r} in image reference {ref!r}")
    else:
        registry, path = DOCKER_HUB, rest
    if registry.lower() in _HUB_ALIASES:
        registry = DOCKER_HUB
    components = path.split("/")
    for comp in components:
        if not _COMPONENT.fullmatch(comp):
            hint = " (repository names must be lowercase)" if comp.lower() != comp else ""
            raise InvalidReference(
                f"invalid repository component {comp!r} in image reference {ref!r}{hint}"
            )
    if registry == DOCKER_HUB and len(components) == 1:
        path = f"library/{path}"
    if len(f"{registry}/{path}") > _MAX_NAME:
        raise InvalidReference(f"image name in {ref!r} is longer than {_MAX_NAME} characters")
    return Reference(registry=registry, repository=path, tag=tag, digest=digest)
