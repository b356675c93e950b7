"""Tag -> digest for 20 tags: one `relpipe images resolve` process vs `skopeo inspect` per tag.

DESIGN.md target: at most 0.3x skopeo's time, identical digests, one HEAD per tag (no ping: an
anonymous registry answers the HEADs). Both sides are whole processes against the same loopback
registry, measured in the same run, in interleaved rounds (best round of each side; relpipe
byte-compiled, as installed). `images resolve` runs the light driver (images.registry,
light=True); the report also lists which heavy modules its process imported (target: none).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relpipe.images import services  # noqa: E402
from relpipe.images.manifest import (  # noqa: E402
    DOCKER_CONFIG,
    DOCKER_MANIFEST,
    Descriptor,
    render_manifest,
)
from relpipe.images.registry import RegistryClient  # noqa: E402

TAGS = 20
TARGET = 0.3
ROUNDS = 5
# Modules the resolve path must not import: each is a measurable part of its start-up.
HEAVY = ("httpx", "http.client", "ssl", "email.parser", "docker", "concurrent.futures", "yaml")


def _push(client: RegistryClient, repo: str) -> list[str]:
    tags = []
    for i in range(TAGS):
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": "2026-10-07T03:33:00Z",
                "config": {"Env": [f"I={i}"]},
                "rootfs": {"type": "layers", "diff_ids": []},
            }
        ).encode()
        layer = f"bench layer {i}".encode()
        cfg = Descriptor(
            media_type=DOCKER_CONFIG, digest=client.upload_blob(repo, config), size=len(config)
        )
        lay = Descriptor(
            media_type="application/vnd.docker.image.rootfs.diff.tar.gzip",
            digest=client.upload_blob(repo, layer),
            size=len(layer),
        )
        tag = f"nightly_202610{i + 1:02d}0333"
        client.put_manifest(
            repo, tag, render_manifest(DOCKER_MANIFEST, cfg, [lay]), DOCKER_MANIFEST
        )
        tags.append(tag)
    return tags


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measure(registry: str) -> list[str]:
    repo = f"{registry}/relpipe-bench/resolve-{uuid.uuid4().hex[:8]}"
    with RegistryClient() as client:
        tags = _push(client, repo)
    refs = [f"{repo}:{t}" for t in tags]

    with RegistryClient(light=True) as client:  # the driver `images resolve` uses
        client.resolve_many(refs)
        requests = dict(client.requests)

    # An installed relpipe has byte-compiled modules; a dev shell with PYTHONDONTWRITEBYTECODE
    # would recompile every module on every start and measure the compiler, not the tool.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    # Rounds interleave the two sides so both see the same machine load; best round of each.
    best, best_cpu = float("inf"), float("inf")
    skopeo, skopeo_cpu = float("inf"), float("inf")
    ours: dict[str, str] = {}
    theirs: dict[str, str] = {}
    for _ in range(ROUNDS):
        t0, c0 = time.perf_counter(), _child_cpu()
        out = subprocess.run(
            [sys.executable, "-m", "relpipe.pipeline", "images", "resolve", *refs, "--json"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, _child_cpu() - c0)
        ours = {r["ref"]: r["digest"] for r in json.loads(out.stdout)}

        t0, c0 = time.perf_counter(), _child_cpu()
        for ref in refs:
            out = subprocess.run(
                ["skopeo", "inspect", "--tls-verify=false", f"docker://{ref}"],
                check=True,
                capture_output=True,
                text=True,
            )
            theirs[ref] = json.loads(out.stdout)["Digest"]
        skopeo = min(skopeo, time.perf_counter() - t0)
        skopeo_cpu = min(skopeo_cpu, _child_cpu() - c0)

    # One more run, with -X importtime, to list what the resolve process imported.
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "relpipe.pipeline", "images", "resolve", *refs],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines()}
    heavy = [m for m in HEAVY if m in imported]

    ratio = best / skopeo
    same = ours == theirs
    heads = requests.get("HEAD manifest", 0)
    total = sum(requests.values())
    verdict = "ok" if ratio <= TARGET else "MISS"
    return [
        "| measure | value |",
        "|---|---|",
        f"| relpipe images resolve, {TAGS} tags, one process (best of {ROUNDS}) | {best:.3f} s |",
        f"| skopeo inspect, once per tag ({TAGS} processes, best of {ROUNDS}) | {skopeo:.3f} s |",
        f"| ratio (target <= {TARGET}x) | {ratio:.3f}x {verdict} |",
        f"| CPU time (user+sys): relpipe / skopeo | {best_cpu:.3f} s / {skopeo_cpu:.3f} s "
        f"= {best_cpu / skopeo_cpu:.3f}x |",
        f"| load average (1 min) / CPUs during the run | {os.getloadavg()[0]:.1f} / "
        f"{os.cpu_count()} |",
        f"| digests identical to skopeo | {'yes' if same else 'MISS: no'} |",
        f"| requests per tag | {total / TAGS:.2f} ({heads} HEAD + {requests.get('ping', 0)} ping, "
        f"{total} total) |",
        f"| one HEAD per tag | {'yes' if heads == TAGS else 'MISS: no'} |",
        f"| heavy modules imported by resolve ({', '.join(HEAVY)}) | "
        f"{'none' if not heavy else 'MISS: ' + ', '.join(heavy)} |",
    ]


def main() -> list[str]:
    named = os.environ.get(services.REGISTRY_ENV)
    if named:
        return _measure(named)
    with services.running(need_docker=False) as started:
        assert started.registry
        return _measure(started.registry)


if __name__ == "__main__":
    print("\n".join(main()))
