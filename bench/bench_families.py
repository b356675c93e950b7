"""Choosing the newest of 200 commit-addressed tags (`vllm/vllm-openai-rocm:nightly-<sha>`).

DESIGN.md / issue 25 target: at most one config fetch per uncached candidate, under 2 s on the
loopback registry. Tags carry no order, so each candidate's image config is read (`created`),
concurrently and bounded (images.evidence); a second choice with the cache warm reads no config
at all. Measured in one run: the cold choice, the warm choice, and the same client's plain
listing of the tags (the floor every choice pays), best of ROUNDS.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relpipe.core.reference import parse  # noqa: E402
from relpipe.images import services  # noqa: E402
from relpipe.images.evidence import choose_newest  # noqa: E402
from relpipe.images.manifest import (  # noqa: E402
    DOCKER_CONFIG,
    DOCKER_MANIFEST,
    Descriptor,
    render_manifest,
)
from relpipe.images.registry import RegistryClient  # noqa: E402

TAGS = 200
TARGET_S = 2.0
ROUNDS = 3
START = datetime(2026, 9, 1)


def _push(client: RegistryClient, repo: str) -> str:
    """200 images, each its own config; the newest created is not the last tag in any order."""
    newest = ""
    for i in range(TAGS):
        minute = (i * 37) % TAGS  # created order unrelated to push or tag order
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": (START + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "config": {"Env": [f"I={i}"]},
                "rootfs": {"type": "layers", "diff_ids": []},
            }
        ).encode()
        layer = f"bench families layer {i}".encode()
        cfg = Descriptor(
            media_type=DOCKER_CONFIG, digest=client.upload_blob(repo, config), size=len(config)
        )
        lay = Descriptor(
            media_type="application/vnd.docker.image.rootfs.diff.tar.gzip",
            digest=client.upload_blob(repo, layer),
            size=len(layer),
        )
        tag = "nightly-" + uuid.UUID(int=i * 7919 + 1).hex + f"{i:08x}"
        manifest = render_manifest(DOCKER_MANIFEST, cfg, [lay])
        client.put_manifest(repo, tag, manifest, DOCKER_MANIFEST)
        if minute == TAGS - 1:
            newest = tag
    return newest


def _measure(registry: str) -> list[str]:
    repo = f"{registry}/relpipe-bench/vllm-openai-rocm-{uuid.uuid4().hex[:8]}"
    with RegistryClient() as client:
        expected = _push(client, repo)
    cold, warm, listing, fetches, warm_fetches = [], [], [], 0, 0
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "created.json"
            with RegistryClient() as client:
                t0 = time.perf_counter()
                choice = choose_newest(client, parse(repo), "vllm", cache_path=cache)
                cold.append(time.perf_counter() - t0)
                fetches = client.requests.get("GET blob", 0)
            assert choice.best is not None and choice.best.tag == expected, choice.best
            with RegistryClient() as client:
                t0 = time.perf_counter()
                again = choose_newest(client, parse(repo), "vllm", cache_path=cache)
                warm.append(time.perf_counter() - t0)
                warm_fetches = client.requests.get("GET blob", 0)
            assert again.best == choice.best
            with RegistryClient() as client:
                t0 = time.perf_counter()
                client.list_tags(parse(repo))
                listing.append(time.perf_counter() - t0)
    ok = min(cold) < TARGET_S and fetches <= TAGS and warm_fetches == 0
    return [
        f"- newest of {TAGS} commit-addressed tags, cold cache: {min(cold):.3f} s "
        f"({fetches} config fetches for {TAGS} candidates)",
        f"- same, warm cache: {min(warm):.3f} s ({warm_fetches} config fetches)",
        f"- the tag listing alone: {min(listing):.3f} s; cold / listing = "
        f"{min(cold) / min(listing):.1f}x",
        f"- target: < {TARGET_S} s and <= 1 config fetch per uncached candidate: "
        f"{'met' if ok else 'MISS'}",
    ]


def main() -> list[str]:
    named = os.environ.get(services.REGISTRY_ENV)
    if named:
        return _measure(named)
    with services.running(need_docker=False) as started:
        return _measure(started.registry)


if __name__ == "__main__":
    print("\n".join(main()))
