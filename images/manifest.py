"""OCI and Docker manifest formats: media types, typed parsing of manifests, indexes, configs.

Pure functions over bytes: they never touch the network. Every registry response is untrusted,
so parsing checks types and shapes and raises `ManifestError` (one line) instead of trusting keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core import jsonload
from ..core.reference import InvalidReference, check_digest
from .errors import ImageError
from .mediatypes import (  # re-exported: the names manifests are typed by
    ACCEPT,
    DEFAULT_PLATFORM,
    DOCKER_CONFIG,
    DOCKER_LIST,
    DOCKER_MANIFEST,
    INDEX_TYPES,
    MANIFEST_TYPES,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_MANIFEST,
)

__all__ = [
    "ACCEPT",
    "DEFAULT_PLATFORM",
    "DOCKER_CONFIG",
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "INDEX_TYPES",
    "MANIFEST_TYPES",
    "OCI_CONFIG",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "Descriptor",
    "ImageConfig",
    "Index",
    "Manifest",
    "ManifestError",
    "Platform",
    "descriptor_json",
    "parse_config",
    "parse_manifest",
    "render_index",
    "render_manifest",
    "sha256_digest",
]


class ManifestError(ImageError):
    """A manifest, index or config from a registry is malformed (checked failure)."""

    exit_code = 1


def sha256_digest(data: bytes) -> str:
    import hashlib  # deferred: not on the HEAD-only resolve path, whose cost is mostly imports

    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Platform:
        parts = text.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ManifestError(
                f"invalid platform {text!r}: expected os/arch[/variant], e.g. linux/amd64"
            )
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else None)

    def matches(self, wanted: Platform) -> bool:
        if (self.os, self.architecture) != (wanted.os, wanted.architecture):
            return False
        return wanted.variant is None or wanted.variant == self.variant

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True, kw_only=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    platform: Platform | None = None
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def is_attestation(self) -> bool:
        # BuildKit attaches provenance/SBOM manifests as `unknown/unknown` entries.
        return self.platform is not None and self.platform.os == "unknown"


@dataclass(frozen=True)
class Manifest:
    """An image manifest (OCI or Docker v2 schema 2)."""

    media_type: str
    config: Descriptor
    layers: tuple[Descriptor, ...]


@dataclass(frozen=True)
class Index:
    """An OCI index or Docker manifest list."""

    media_type: str
    manifests: tuple[Descriptor, ...]

    def select(self, platform: Platform) -> Descriptor:
        """The manifest for `platform`, never an attestation; first match wins (spec order)."""
        for desc in self.manifests:
            if desc.platform and not desc.is_attestation and desc.platform.matches(platform):
                return desc
        have = sorted(
            {str(d.platform) for d in self.manifests if d.platform and not d.is_attestation}
        )
        raise ManifestError(
            f"no manifest for platform {platform} in index (has: {', '.join(have) or 'none'}); "
            "pass --platform"
        )


@dataclass(frozen=True, kw_only=True)
class ImageConfig:
    """The parts of an image config blob relpipe records."""

    created: str | None
    platform: Platform | None
    labels: tuple[tuple[str, str], ...]
    env: tuple[str, ...]


def _load_json(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = jsonload.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{what} is not valid JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{what} is not a JSON object")
    return doc


def _str(doc: dict[str, Any], key: str, what: str, required: bool = True) -> str | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ManifestError(f"{what}: field {key!r} must be a string")
    return value


def _descriptor(raw: Any, what: str) -> Descriptor:
    if not isinstance(raw, dict):
        raise ManifestError(f"{what}: descriptor is not an object")
    media_type = _str(raw, "mediaType", what)
    digest = _str(raw, "digest", what)
    size = raw.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ManifestError(f"{what}: descriptor size must be a non-negative integer")
    try:
        check_digest(digest or "")
    except InvalidReference:
        raise ManifestError(f"{what}: unsupported or invalid digest {digest!r}") from None
    platform = None
    if "platform" in raw:
        p = raw["platform"]
        if not isinstance(p, dict):
            raise ManifestError(f"{what}: platform is not an object")
        platform = Platform(
            _str(p, "os", what) or "",
            _str(p, "architecture", what) or "",
            _str(p, "variant", what, required=False),
        )
    ann = raw.get("annotations") or {}
    if not isinstance(ann, dict) or not all(isinstance(v, str) for v in ann.values()):
        raise ManifestError(f"{what}: annotations must map strings to strings")
    assert media_type is not None and digest is not None
    return Descriptor(
        media_type=media_type,
        digest=digest,
        size=size,
        platform=platform,
        annotations=tuple(sorted(ann.items())),
    )


def parse_manifest(data: bytes, media_type: str | None = None) -> Manifest | Index:
    """Parse manifest bytes; the media type comes from the body, else from the response header."""
    doc = _load_json(data, "manifest")
    if doc.get("schemaVersion") != 2:
        raise ManifestError(
            f"unsupported manifest schemaVersion {doc.get('schemaVersion')!r} (only 2 is supported)"
        )
    body_type = doc.get("mediaType")
    if body_type is not None and not isinstance(body_type, str):
        raise ManifestError("manifest: mediaType must be a string")
    is_index_shaped = "manifests" in doc
    is_manifest_shaped = "config" in doc or "layers" in doc
    if is_index_shaped and is_manifest_shaped:
        # CVE-2021-41190 class: a document that reads as either kind would be typed by whoever
        # serves it; containerd and distribution refuse it, and so do we, whatever the type says.
        raise ManifestError(
            "ambiguous manifest: it has both 'manifests' and 'config'/'layers'; refusing"
        )
    kind = body_type or media_type or (OCI_INDEX if is_index_shaped else OCI_MANIFEST)
    if (kind in INDEX_TYPES and is_manifest_shaped) or (kind in MANIFEST_TYPES and is_index_shaped):
        raise ManifestError(f"ambiguous manifest: typed {kind} but shaped like the other kind")
    if (
        body_type
        and media_type
        and body_type != media_type
        and media_type in INDEX_TYPES + MANIFEST_TYPES
    ):
        raise ManifestError(
            f"manifest body says {body_type} but the registry said {media_type}; refusing"
        )
    if kind in INDEX_TYPES:
        entries = doc.get("manifests")
        if not isinstance(entries, list):
            raise ManifestError("index: 'manifests' must be a list")
        return Index(kind, tuple(_descriptor(e, "index entry") for e in entries))
    if kind in MANIFEST_TYPES:
        layers = doc.get("layers")
        if not isinstance(layers, list):
            raise ManifestError("manifest: 'layers' must be a list")
        return Manifest(
            kind,
            _descriptor(doc.get("config"), "manifest config"),
            tuple(_descriptor(x, "manifest layer") for x in layers),
        )
    raise ManifestError(f"unsupported manifest media type {kind!r}")


def parse_config(data: bytes) -> ImageConfig:
    """Parse an image config blob: created, os/architecture, labels and env."""
    doc = _load_json(data, "image config")
    created = _str(doc, "created", "image config", required=False)
    os_ = doc.get("os")
    arch = doc.get("architecture")
    platform = None
    if isinstance(os_, str) and isinstance(arch, str) and os_ and arch:
        variant = doc.get("variant")
        platform = Platform(os_, arch, variant if isinstance(variant, str) and variant else None)
    cfg = doc.get("config") or {}
    if not isinstance(cfg, dict):
        raise ManifestError("image config: 'config' must be an object")
    labels = cfg.get("Labels") or {}
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ManifestError("image config: Labels must map strings to strings")
    env = cfg.get("Env") or []
    if not isinstance(env, list) or not all(isinstance(e, str) for e in env):
        raise ManifestError("image config: Env must be a list of strings")
    return ImageConfig(
        created=created, platform=platform, labels=tuple(sorted(labels.items())), env=tuple(env)
    )


def descriptor_json(desc: Descriptor) -> dict[str, Any]:
    """A descriptor as manifest JSON (field order fixed so rendered bytes are reproducible)."""
    out: dict[str, Any] = {"mediaType": desc.media_type, "digest": desc.digest, "size": desc.size}
    if desc.platform is not None:
        plat = {"architecture": desc.platform.architecture, "os": desc.platform.os}
        if desc.platform.variant:
            plat["variant"] = desc.platform.variant
        out["platform"] = plat
    if desc.annotations:
        out["annotations"] = dict(desc.annotations)
    return out


def render_manifest(
    media_type: str, config: Descriptor, layers: tuple[Descriptor, ...] | list[Descriptor]
) -> bytes:
    """Bytes of an image manifest (OCI or Docker v2) for pushing; deterministic."""
    if media_type not in MANIFEST_TYPES:
        raise ManifestError(f"not an image manifest media type: {media_type}")
    doc = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": descriptor_json(config),
        "layers": [descriptor_json(x) for x in layers],
    }
    return json.dumps(doc, indent=2).encode("utf-8")


def render_index(media_type: str, manifests: tuple[Descriptor, ...] | list[Descriptor]) -> bytes:
    """Bytes of an OCI index or Docker manifest list for pushing; deterministic."""
    if media_type not in INDEX_TYPES:
        raise ManifestError(f"not an index media type: {media_type}")
    doc = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [descriptor_json(x) for x in manifests],
    }
    return json.dumps(doc, indent=2).encode("utf-8")
