"""A pinned image: the one record of an image relpipe pinned (its verified digest, platform,
times, probe facts and where a copy is archived), whichever place keeps it: relpipe's results
store (`changelog.results.pins`) or a team's opt-in `images.lock.yaml` (`images.lock`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .reference import Reference, parse, split


@dataclass(frozen=True, kw_only=True)
class Pin:
    key: str  # registry/repository:tag (or registry/repository@digest for digest-only pins)
    digest: str  # what `docker pull repo@digest` uses: the index digest of a multi-platform tag
    platform: str | None
    platform_digest: str
    media_type: str
    resolved_at: str
    created: str | None
    facts: Mapping[str, Any] = field(default_factory=dict)
    # where a byte-identical copy is kept (`relpipe images archive`): {registry, archived-at}
    archive: Mapping[str, str] | None = None

    def reference(self) -> Reference:
        """The digest-qualified reference that gets run."""
        return parse(split(self.key).without_digest).with_digest(self.digest)

    def to_yaml(self) -> dict[str, Any]:
        """The pin as `images.lock.yaml` (and `relpipe images pin --json`) spell it."""
        return {
            "digest": self.digest,
            "platform": self.platform,
            "platform-digest": self.platform_digest,
            "media-type": self.media_type,
            "resolved-at": self.resolved_at,
            "created": self.created,
            "facts": _sorted(self.facts),
            **({"archive": dict(self.archive)} if self.archive else {}),
        }


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value
