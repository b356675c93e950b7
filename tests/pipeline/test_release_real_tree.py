"""A release on the real InferenceX tree: every ATOM key (atom, atom-disagg) of amd-master, dry run.

The loopback registry serves as a mirror of docker.io (`RELPIPE_REGISTRY_MIRRORS`): every image
the ATOM keys pin today (`rocm/atom:...`, `rocm/atom-dev:...`) is a copy of one fixture nightly
under its canonical name, and the release candidate is the next fixture nightly under a new
canonical tag. Fixtures are built once; every key's qualification shares the image stages
through the stage cache (same digests), so each further key costs its golden AL and notes.

For each key, `relpipe release --dry-run` in a git copy of the tree must exit 0 with no FAIL, and
its diff must touch only the key's image line and the appended changelog entry (no lock file:
the pins are relpipe's state);
the head changelog (base + appended lines) passes relpipe's hook and InferenceX's own validator.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import corpus
import pytest
from release_support import (
    MASTER,
    PR,
    QUICK,
    REPO_URL,
    diff_files,
    inferencex_accepts,
    mirror_copy,
    tree_world,
)
from support import git

from relpipe.changelog.configs.load import load_master, master_keys
from relpipe.images.build import build_fixtures
from relpipe.validate.gate import hook as gate

pytestmark = [pytest.mark.services, pytest.mark.slow]

REPOSITORY = "relpipe-test-realtree/atom-dev"
CANDIDATE = "rocm/atom-dev:nightly_209901010000"  # not a tag the real tree uses
# The ATOM keys of configs/amd-master.yaml at 843c6254f (the fixture checks the list is current).
ATOM_KEYS = (
    "dsr1-fp4-mi355x-atom",
    "dsr1-fp4-mi355x-atom-mtp",
    "qwen3.5-fp8-mi355x-atom",
    "qwen3.5-fp8-mi355x-atom-mtp",
    "qwen3.5-fp4-mi355x-atom",
    "dsr1-fp8-mi355x-atom",
    "dsr1-fp8-mi355x-atom-mtp",
    "kimik3-fp4-mi355x-atom-agentic-mtp",
    "dsv4-fp4-mi355x-atom",
    "dsv4-fp4-mi355x-atom-mtp",
    "dsv4-fp4-mi355x-atom-agentic-mtp",
    "dsv4-fp4-mi355x-atom-disagg",
    "glm5.2-fp4-mi355x-atom-agentic-mtp",
)


@dataclass(frozen=True)
class World:
    repo: Path
    state: Path
    env: dict[str, str]
    keys: list[str]
    images: dict[str, str]  # key -> image it pins today


@pytest.fixture(scope="module")
def world(
    registry: str,
    docker_host: str,
    fixture_cache: Path,
    inferencex_tree: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> World:
    if shutil.which("skopeo") is None:
        corpus.unavailable("skopeo is not installed")
    old, new = build_fixtures(registry, REPOSITORY, 2, "good", cache_dir=fixture_cache)
    configs = load_master(inferencex_tree / MASTER)
    keys = [k for k, v in configs.items() if str(v.get("framework", "")).startswith("atom")]
    assert tuple(keys) == ATOM_KEYS, "the real master's ATOM keys changed: update ATOM_KEYS"
    images = {k: str(configs[k]["image"]) for k in keys}
    for image in sorted(set(images.values())):
        mirror_copy(registry, f"{REPOSITORY}@{old.digest}", image)
    mirror_copy(registry, f"{REPOSITORY}@{new.digest}", CANDIDATE)
    base = tmp_path_factory.mktemp("realtree")
    repo, env = tree_world(inferencex_tree, base, registry, docker_host)
    return World(repo, base / "state", env, keys, images)


def _release(world: World, key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "release", "--config-key", key]
        + ["--image", CANDIDATE, "--pr-number", str(PR), "--repo-url", REPO_URL]
        + ["--dry-run", "--json", "--state", str(world.state), *QUICK],
        cwd=world.repo,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=840,
    )


@pytest.mark.timeout(900)  # the first key runs the whole qualification on 2 shared cores
@pytest.mark.parametrize("key", ATOM_KEYS)
def test_an_atom_key_releases_on_the_real_tree(world: World, key: str) -> None:
    """The first key pays for the qualification; the others reuse its stages (same digests)."""
    master_lines = (world.repo / MASTER).read_text().split("\n")
    base_log = (world.repo / "perf-changelog.yaml").read_bytes()
    masters = sorted((world.repo / "configs").glob("*-master.yaml"))
    all_keys = [k for m in masters for k in master_keys(m)]
    done = _release(world, key)
    assert done.returncode == 0, done.stderr[-2000:]
    doc: dict[str, Any] = json.loads(done.stdout)
    bad = [c for c in doc["verdict"]["checks"] if c["status"] == "FAIL"]
    assert bad == []
    files = diff_files(doc["release"]["diff"])
    assert set(files) == {MASTER, "perf-changelog.yaml"}  # no lock file: InferenceX has none
    # The key's image line, and nothing else, changes in the real master.
    old_line = f"  image: {world.images[key]}"
    assert files[MASTER] == ([old_line], [f"  image: {CANDIDATE}"])
    assert master_lines.count(old_line) >= 1
    # The changelog only grows: the entry is appended after the last real byte.
    removed, added = files["perf-changelog.yaml"]
    assert removed == []
    head = base_log + ("\n".join(added) + "\n").encode()
    assert f"- {key}".encode() in head[len(base_log) :]
    report = gate.check(
        base_log, head, gate.Policy(repo_url=REPO_URL, pr_number=PR, config_keys=all_keys)
    )
    assert report.ok, [str(f) for f in report.findings]
    accepted, why = inferencex_accepts(base_log, head, masters)
    assert accepted, why
    # A dry run writes nothing.
    assert not (world.repo / "images.lock.yaml").exists()
    assert git(world.repo, "status", "--porcelain", "--untracked-files=no") == ""
