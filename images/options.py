"""Registry options shared by every command that talks to a registry, and where they come from.

`add_registry_args(parser)` adds one group: `--registry-mirror SRC=DST` (repeatable),
`--ca-bundle`, `--insecure-registry` (repeatable) and `--platform`. `apply_registry_args(args)`
turns them into the process environment (`RELPIPE_REGISTRY_MIRRORS`, `RELPIPE_REGISTRY_CA_BUNDLE`,
`RELPIPE_INSECURE_REGISTRIES`, `RELPIPE_PLATFORM`), which is what every `RegistryClient`, the
container runtime and child `relpipe` processes read: one setting reaches all of them without
threading a parameter through every stage.

Mirrors (`SRC=DST`): references keep naming SRC (`rocm/atom-dev:nightly_...` is `docker.io`); the
bytes come from DST and are verified against the same digests. Sources, lowest precedence first:
Docker's daemon config `registry-mirrors` (docker.io only, the first entry, as dockerd tries it
first), then `RELPIPE_REGISTRY_MIRRORS`, then `--registry-mirror`. A DST written as `http://...`
is spoken to over plain HTTP; a bare `host[:port]` follows the usual rule (HTTP on loopback only).

Light on purpose: `relpipe images resolve` imports this module on its start-up path.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from ..core import jsonload
from ..core.reference import DOCKER_HUB, InvalidReference, parse
from .errors import ImageError

MIRRORS_ENV = "RELPIPE_REGISTRY_MIRRORS"  # comma-separated SRC=DST
PLATFORM_ENV = "RELPIPE_PLATFORM"  # os/arch[/variant] for every pin and resolve
DAEMON_CONFIG_ENV = "RELPIPE_DOCKER_DAEMON_CONFIG"  # default /etc/docker/daemon.json
DEFAULT_DAEMON_CONFIG = "/etc/docker/daemon.json"
CA_ENV = "RELPIPE_REGISTRY_CA_BUNDLE"  # extra PEM CA file trusted for registries and token realms
INSECURE_ENV = "RELPIPE_INSECURE_REGISTRIES"  # comma-separated host[:port]: plain HTTP


class OptionError(ImageError):
    """A registry option is malformed (usage error)."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True)
class Mirror:
    source: str  # canonical registry name, e.g. docker.io
    host: str  # host[:port] that serves it
    scheme: str | None = None  # "http"/"https" when the DST said so, else the loopback rule


def parse_mirror(text: str) -> Mirror:
    """`SRC=DST`: SRC a registry (docker.io, ghcr.io, ...), DST `host[:port]` or a URL."""
    source, sep, target = text.partition("=")
    if not sep or not source.strip() or not target.strip():
        raise OptionError(
            f"invalid registry mirror {text!r}: expected SRC=DST, e.g. docker.io=HOST"
        )
    scheme = None
    target = target.strip().rstrip("/")
    for prefix in ("http://", "https://"):
        if target.startswith(prefix):
            scheme, target = prefix[:-3], target[len(prefix) :]
    try:
        src = parse(f"{source.strip()}/x").registry
        host = parse(f"{target}/x").registry
    except InvalidReference:
        raise OptionError(
            f"invalid registry mirror {text!r}: SRC and DST must be registry hosts"
        ) from None
    if "/" in target or host != target:
        raise OptionError(f"invalid registry mirror {text!r}: DST must be host[:port] (no path)")
    return Mirror(source=src, host=host, scheme=scheme)


def daemon_mirror(path: str | os.PathLike[str]) -> Mirror | None:
    """docker.io's mirror from a dockerd `daemon.json` (`registry-mirrors`), if any."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OptionError(f"cannot read {file}: {exc.__class__.__name__}") from None
    try:
        doc = jsonload.loads(text)
    except json.JSONDecodeError:
        raise OptionError(f"{file} is not valid JSON (registry-mirrors unreadable)") from None
    mirrors = doc.get("registry-mirrors") if isinstance(doc, dict) else None
    if not mirrors:
        return None
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise OptionError(f"{file}: registry-mirrors must be a list of URLs")
    return parse_mirror(f"{DOCKER_HUB}={mirrors[0]}")


def mirrors_from_env(env: Mapping[str, str]) -> dict[str, Mirror]:
    """Mirrors by source registry: daemon.json for docker.io, overridden by the environment."""
    out: dict[str, Mirror] = {}
    found = daemon_mirror(env.get(DAEMON_CONFIG_ENV) or DEFAULT_DAEMON_CONFIG)
    if found:
        out[found.source] = found
    for item in (env.get(MIRRORS_ENV) or "").split(","):
        if item.strip():
            mirror = parse_mirror(item.strip())
            out[mirror.source] = mirror
    return out


def format_mirrors(mirrors: Mapping[str, Mirror]) -> str:
    """The `RELPIPE_REGISTRY_MIRRORS` value for `mirrors` (schemes kept)."""
    parts = []
    for m in mirrors.values():
        dst = f"{m.scheme}://{m.host}" if m.scheme else m.host
        parts.append(f"{m.source}={dst}")
    return ",".join(parts)


def physical(ref: str, env: Mapping[str, str] | None = None) -> str:
    """`ref` as its mirror serves it (`docker.io/rocm/x@sha256:..` -> `HOST/rocm/x@sha256:..`).

    For clients that take a name rather than a `RegistryClient` (dockerd pulls): the digest, and
    so what is run, is the same; only the place the bytes come from changes.
    """
    reference = parse(ref)
    mirror = mirrors_from_env(os.environ if env is None else env).get(reference.registry)
    if mirror is None:
        return str(reference)
    out = f"{mirror.host}/{reference.repository}"
    if reference.tag:
        out += f":{reference.tag}"
    if reference.digest:
        out += f"@{reference.digest}"
    return out


def add_registry_args(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The registry options of every command that talks to a registry (one definition)."""
    group = parser.add_argument_group("registry")
    group.add_argument(
        "--registry-mirror",
        action="append",
        default=[],
        metavar="SRC=DST",
        help="fetch SRC's images (e.g. docker.io) from the mirror DST; names stay SRC's "
        f"(repeatable; also ${MIRRORS_ENV} and daemon.json registry-mirrors) (default: none)",
    )
    group.add_argument(
        "--ca-bundle",
        metavar="PEM",
        default=None,
        help=f"extra CA certificates to trust for registries (also ${CA_ENV}) (default: none)",
    )
    group.add_argument(
        "--insecure-registry",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="speak plain HTTP to this non-loopback registry (repeatable) (default: none)",
    )
    group.add_argument(
        "--platform",
        metavar="OS/ARCH[/VARIANT]",
        default=None,
        help=f"platform picked from multi-platform images (also ${PLATFORM_ENV}) "
        "(default: linux/amd64)",
    )
    return group


def apply_registry_args(
    args: argparse.Namespace, environ: MutableMapping[str, str] | None = None
) -> None:
    """Export the parsed registry options to the environment every registry user reads."""
    env = os.environ if environ is None else environ
    if args.registry_mirror:
        mirrors = mirrors_from_env(env)
        for text in args.registry_mirror:
            mirror = parse_mirror(text)
            mirrors[mirror.source] = mirror
        env[MIRRORS_ENV] = format_mirrors(mirrors)
    if args.ca_bundle:
        if not Path(args.ca_bundle).is_file():
            raise OptionError(f"--ca-bundle {args.ca_bundle}: no such file")
        env[CA_ENV] = str(Path(args.ca_bundle).resolve())
    if args.insecure_registry:
        known = [x for x in (env.get(INSECURE_ENV) or "").split(",") if x]
        env[INSECURE_ENV] = ",".join(dict.fromkeys(known + list(args.insecure_registry)))
    if args.platform:
        from .manifest import Platform  # deferred: validates os/arch[/variant]

        Platform.parse(args.platform)
        env[PLATFORM_ENV] = args.platform
