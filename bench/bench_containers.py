"""Container costs: the probe in a fixture image vs on the host, and building + pushing a nightly.

Both sides of each ratio are measured in this run against the same loopback registry and dockerd.
Probe: `python -m relpipe.engine probe` as a whole process on the host (`sys.executable`) vs
`Runtime.run_engine(..., "probe")` (container create, start, wait, logs, remove, result check;
the image already pulled), best of three each. Build: one nightly from an empty layer cache
(base layer included) into a new repository, then the same build again (a cache hit: nothing
pushed). No DESIGN.md target applies; a run that fails or a second build that pushes is a MISS.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import best  # noqa: E402
from relpipe.images import services  # noqa: E402
from relpipe.images.build import FixtureBuilder  # noqa: E402
from relpipe.images.runtime import Runtime  # noqa: E402

REPEAT = 3


@contextlib.contextmanager
def _services() -> Iterator[services.Services]:
    with services.running() as svc:
        yield svc


def main() -> list[str]:
    lines = ["| measurement | seconds | note |", "|---|---:|---|"]
    missed = False
    with _services() as svc, tempfile.TemporaryDirectory(prefix="relpipe-bench-") as tmp:
        assert svc.registry and svc.docker_host
        repo = f"relpipe-bench/atom-{uuid.uuid4().hex[:8]}"
        cache = Path(tmp) / "cache"

        t0 = time.perf_counter()
        first = FixtureBuilder(cache_dir=cache).build(svc.registry, repo, count=1)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = FixtureBuilder(cache_dir=cache).build(svc.registry, repo, count=1)
        warm = time.perf_counter() - t0
        if again[0].pushed or again[0].digest != first[0].digest:
            missed = True
        lines.append(
            f"| build + push 1 nightly, empty cache (base layer included) | {cold:.2f} | "
            f"{first[0].digest[:19]} |"
        )
        lines.append(
            f"| same build again (cache hit, nothing pushed) | {warm:.2f} | "
            f"{'MISS: pushed again' if again[0].pushed else 'hit'} |"
        )

        runtime = Runtime.from_env(docker_host=svc.docker_host, gpu="none")
        image = first[0].reference
        out = Path(tmp) / "out"
        t0 = time.perf_counter()
        runtime.ensure_image(image)
        pull = time.perf_counter() - t0
        lines.append(
            f"| pull by digest (layers shared with images docker already has) | {pull:.2f} | |"
        )

        def in_container() -> None:
            run = runtime.run_engine(
                image, "probe", engine_dir=ROOT / "engine", out_dir=out, timeout_s=300
            )
            if run.result is None:
                raise RuntimeError(f"probe in container failed: {run.error}")

        env = dict(os.environ, PYTHONPATH=str(ROOT))

        def on_host() -> None:
            subprocess.run(
                [sys.executable, "-m", "relpipe.engine", "probe", "--out", str(out / "host.json")],
                env=env,
                cwd=ROOT,
                check=False,
                capture_output=True,
            )

        def empty_run() -> None:
            run = runtime.run(image, ["python3", "-c", "pass"], out_dir=out, timeout_s=120)
            if not run.passed:
                raise RuntimeError(f"empty container run failed: {run.error}")

        try:
            empty = best(empty_run, REPEAT)
            host = best(on_host, REPEAT)
            container = best(in_container, REPEAT)
        except RuntimeError as exc:
            return [*lines, f"MISS: {exc}"]
        lines.append(
            f"| empty run in a container (`python3 -c pass`, create..remove) | {empty:.2f} | "
            f"best of {REPEAT}: the sandbox's fixed cost |"
        )
        lines.append(f"| probe on the host (whole process) | {host:.2f} | best of {REPEAT} |")
        lines.append(
            f"| probe in a container (create..remove) | {container:.2f} | best of {REPEAT} |"
        )
        lines.append(
            f"| container overhead | {container - host:.2f} | "
            f"{container / host:.1f}x the host probe |"
        )
    if missed:
        lines.append("MISS: the second fixture build was not a cache hit")
    return lines


if __name__ == "__main__":
    print("\n".join(main()))
