"""`python -m relpipe.pipeline.demo`: the whole job on the embedded example benchmark repository.

1. builds fixture nightlies of `rocm/atom-dev` into the loopback registry (reproducible, cached),
   which then serves as a MIRROR of docker.io (`RELPIPE_REGISTRY_MIRRORS=docker.io=<registry>`,
   what `--registry-mirror` sets): every name stays canonical (`rocm/atom-dev:nightly_...`), as in
   a real benchmark repository, and only the bytes come from the loopback registry;
2. copies `examples/benchmark-repo/` into a fresh work folder that is a real git repository and
   re-pins `images.lock.yaml` there (fixture digests depend on the host's Python);
3. runs `relpipe nightly` (newest tag, qualified against the config key's pinned image) and
   `relpipe release` in it, as a user would, of TWO keys that run the same image (one changelog
   entry naming both, the image qualified once), and prints the verdict, the diff and the reports.
   No configuration line, lock key, changelog entry or note names the loopback registry.
4. shows what `relpipe pr open --dry-run` would send for that release: the git steps and the exact
   GitHub REST requests (no token, nothing sent: the demo stays offline).

The run records and the stage cache live under the demo state folder (RELPIPE_DEMO_STATE, default
~/.cache/relpipe/demo), so a second demo run is made of cache hits. `nox -s demo` runs this under
`python -m relpipe.images.services run`, which provides RELPIPE_REGISTRY and DOCKER_HOST.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..core import process
from ..core.heartbeat import heartbeat
from ..images import lock
from ..images.build import build_fixtures
from ..images.options import MIRRORS_ENV
from ..images.registry import RegistryClient
from .commands.nightly import newest_nightly
from .screenshot import screenshot

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "benchmark-repo"
REPOSITORY = "rocm/atom-dev"
CONFIG_KEY = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
SECOND_KEY = "dsv4-fp4-mi355x-atom-agentic-mtp"  # pins the same nightly in the example
NIGHTLIES = 4
# Kept small so that the Triton interpreter on a CPU-only machine finishes in minutes; on a GPU
# host run `relpipe nightly` yourself with the defaults (whole prompts, 8 tokens, three KV dtypes).
DEMO_OPTIONS = (
    "--max-batch",
    "2",
    "--max-new",
    "4",
    "--prompt-bytes",
    "16",
    "--kv-dtypes",
    "fp32,fp8",
    "--timeout",
    "600",
)
GIT_TIMEOUT_S = 300.0  # one git command on the small example repository
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "relpipe demo",
    "GIT_AUTHOR_EMAIL": "demo@relpipe.invalid",
    "GIT_COMMITTER_NAME": "relpipe demo",
    "GIT_COMMITTER_EMAIL": "demo@relpipe.invalid",
    "GIT_AUTHOR_DATE": "2026-10-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-10-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def default_state() -> Path:
    return Path(os.environ.get("RELPIPE_DEMO_STATE", Path.home() / ".cache" / "relpipe" / "demo"))


def rewrite_registry(text: str, registry: str | None, repository: str = REPOSITORY) -> str:
    """`rocm/atom-dev:TAG` (Docker Hub spelling) -> `<registry>/<repository>:TAG`.

    `registry=None` keeps Docker Hub spelling (a mirror serves it): only the repository changes.
    """
    pattern = r"(?<![\w./:-])" + re.escape(REPOSITORY) + r"(?=[:@])"
    return re.sub(pattern, f"{registry}/{repository}" if registry else repository, text)


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, **_GIT_ENV, HOME=str(repo))
    done = process.run(["git", "-C", str(repo), *args], env=env, timeout=GIT_TIMEOUT_S)
    return done.stdout.decode("utf-8", "replace")


def mirror_env(registry: str) -> dict[str, str]:
    """The environment that makes `registry` a mirror of docker.io (`--registry-mirror`)."""

    return {MIRRORS_ENV: f"docker.io={registry}"}


def prepare_workdir(
    example: Path,
    work: Path,
    registry: str,
    repository: str = REPOSITORY,
    *,
    mirror: bool = False,
    pinned_tag: str | None = None,
) -> Path:
    """A fresh git repository with the example's files, lock re-pinned against `registry`.

    `mirror=True`: names stay canonical (`rocm/atom-dev:...`) and `registry` serves them as a
    mirror of docker.io; otherwise `repository` is rewritten to `<registry>/<repository>`.
    `pinned_tag`: every config pins this nightly instead (nightlies built from a real engine
    history are tagged from their commits' dates, not the example's fixture tags).
    """

    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(example, work, ignore=shutil.ignore_patterns(".relpipe", "__pycache__"))
    refs: set[str] = set()
    for path in sorted((work / "configs").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if pinned_tag is not None:
            pattern = rf"(?<![\w./:-]){re.escape(REPOSITORY)}:nightly_\d{{12}}\b"
            text = re.sub(pattern, f"{REPOSITORY}:{pinned_tag}", text)
            path.write_text(text, encoding="utf-8")
        if not mirror or repository != REPOSITORY:
            text = rewrite_registry(text, None if mirror else registry, repository)
            path.write_text(text, encoding="utf-8")
        prefix = re.escape(repository if mirror else f"{registry}/{repository}")
        refs.update(re.findall(rf"^\s*image:\s*({prefix}[:@]\S+)\s*$", text, re.M))
    (work / "images.lock.yaml").unlink(missing_ok=True)
    with RegistryClient(mirrors={"docker.io": registry} if mirror else None) as client:
        lock.update(work / "images.lock.yaml", [client.pin(ref) for ref in sorted(refs)])
    (work / ".gitignore").write_text(".relpipe/\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "benchmark repository (relpipe example)")
    return work


def relpipe(work: Path, *args: str) -> int:
    print(f"\n$ relpipe {' '.join(args)}", flush=True)
    return process.call([sys.executable, "-m", "relpipe.pipeline", *args], cwd=work)


def show_pull_request(work: Path, config_keys: Sequence[str], state: Path) -> int:
    """What `relpipe pr open` would send for the release (offline: a dry run needs no token)."""
    code = relpipe(
        work,
        "pr",
        "open",
        "--dry-run",
        *(a for key in config_keys for a in ("--config-key", key)),
        "--github-repo",
        "example-org/benchmark-repo",
        "--state",
        str(state),
    )
    if code != 0:
        print(f"demo: pr open --dry-run ended with exit {code}", file=sys.stderr)
    return code


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m relpipe.pipeline.demo", description=__doc__.splitlines()[0]
    )
    p.add_argument("--state", type=Path, default=default_state(), help="demo state folder")
    p.add_argument("--config-key", default=CONFIG_KEY)
    p.add_argument(
        "--engine-repo",
        type=Path,
        default=None,
        help="a clone of ATOM: the nightlies carry it at --engine-commits instead of the small "
        "built-in engine (ATOM's own ops need AMD's AITER, so smoke fails closed on a CPU host)",
    )
    p.add_argument(
        "--engine-commits",
        default="HEAD~3,HEAD",
        help="commits of --engine-repo, oldest first; the oldest is the pinned baseline "
        "(default HEAD~3,HEAD)",
    )
    p.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="PNG",
        help="also render the release report to PNG with headless Chromium (nox -s screenshots)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    registry = os.environ.get("RELPIPE_REGISTRY")
    if not registry or not os.environ.get("DOCKER_HOST"):
        print(
            "demo: needs RELPIPE_REGISTRY and DOCKER_HOST; run `nox -s demo` "
            "(or `python -m relpipe.images.services run -- python -m relpipe.pipeline.demo`)",
            file=sys.stderr,
        )
        return 2
    t0 = time.monotonic()
    work = _build(args, registry, t0)
    code = _qualify_and_release(work, args)
    if code != 0:
        return code
    releases = sorted(
        (args.state / "relpipe" / "releases").glob("*/report.html"), key=lambda p: p.stat().st_mtime
    )
    print(
        f"\ndemo: done in {time.monotonic() - t0:.0f}s; "
        f"release report: {releases[-1] if releases else '?'}"
    )
    if args.screenshot is not None:
        if not releases:
            print("demo: no release report to take a screenshot of", file=sys.stderr)
            return 1
        with heartbeat(f"demo: screenshot of {releases[-1]} -> {args.screenshot}", say=_say):
            screenshot(releases[-1], args.screenshot)
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


def _build(args: argparse.Namespace, registry: str, t0: float) -> Path:
    """Build the nightlies into the registry and prepare the benchmark repository (its path)."""

    commits = [c.strip() for c in args.engine_commits.split(",") if c.strip()]
    source = f"ATOM {args.engine_repo} at {', '.join(commits)}" if args.engine_repo else "fixture"
    print(
        f"demo: building {source} nightlies of {REPOSITORY} into {registry}, a mirror of docker.io",
        flush=True,
    )
    with heartbeat(f"demo: building {NIGHTLIES} nightlies", say=_say):
        built = build_fixtures(
            registry,
            REPOSITORY,
            NIGHTLIES,
            "good",
            log=lambda m: _say(f"  {m}"),
            engine_repo=args.engine_repo,
            engine_commits=commits if args.engine_repo else (),
        )
    # This process and every `relpipe` it starts fetch docker.io's images from the mirror.
    os.environ.update(mirror_env(registry))
    work = prepare_workdir(
        EXAMPLE,
        args.state / "work" / "benchmark-repo",
        registry,
        mirror=True,
        pinned_tag=built[0].tag if args.engine_repo else None,
    )
    print(f"demo: benchmark repository at {work} ({time.monotonic() - t0:.0f}s)", flush=True)
    return work


def _qualify_and_release(work: Path, args: argparse.Namespace) -> int:
    """`relpipe nightly`, then `relpipe release` of what it qualified, then the pull request."""

    state = ["--state", str(args.state / "relpipe"), *DEMO_OPTIONS]
    code = relpipe(work, "nightly", REPOSITORY, "--config-key", args.config_key, *state)
    if code != 0:
        print(
            f"demo: nightly qualification ended with exit {code}; see the report above",
            file=sys.stderr,
        )
        return code
    newest = newest_nightly(REPOSITORY, "")
    # The same choice `nightly` made (one function serves both): the release names what was
    # qualified. Two keys run that image line in the example: one release bumps both.
    keys = [args.config_key] + [k for k in (SECOND_KEY,) if k != args.config_key]
    code = relpipe(
        work,
        "release",
        *(a for key in keys for a in ("--config-key", key)),
        "--image",
        newest,
        "--pr-number",
        "101",
        "--repo-url",
        "https://github.com/example-org/benchmark-repo",
        *state,
    )
    if code != 0:
        print(f"demo: release ended with exit {code}", file=sys.stderr)
        return code
    print("\n$ git diff --stat", flush=True)
    print(git(work, "diff", "--stat"), end="")
    return show_pull_request(work, keys, args.state / "relpipe")


if __name__ == "__main__":
    sys.exit(main())
