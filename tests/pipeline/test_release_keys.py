"""A release of several keys that share an image, on a git copy of the real 2026-08 InferenceX
tree (issue 32's acceptance), from fixture nightlies in the loopback registry (a mirror of
docker.io under the real repositories' names).

* The six keys that run `vllm/vllm-openai-rocm:nightly-09663abde...` are released together to a
  newer real vLLM nightly, for real (no dry run): one changelog entry naming every key as
  InferenceX writes them, each key's `image:` line (and nothing else) bumped, the hook and
  InferenceX's own validator pass, `git status` shows only the master and the changelog (no lock
  file: the pins are relpipe's state), and the image's own stages ran for the first key only.
* The four keys on ATOM's dated build `rocm/atom:..._atom20260511` are released to a newer dated
  build with `--dry-run`: the checkout is byte-identical after, and the diff names four lines.
* Key selection on the real tree: `--line` of a vLLM key is every key on vLLM's nightly line,
  `--runner mi300x` narrows it; a selector matching no key is one line.
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
import yaml
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
from support import checkout_snapshot, git

from relpipe.changelog.configs.load import master_keys
from relpipe.images import family_fixtures as ff
from relpipe.images.build import build_fixtures
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.selection import select
from relpipe.pipeline.workspace import Workspace
from relpipe.validate.gate import hook as gate

pytestmark = [pytest.mark.services, pytest.mark.slow]

VLLM = "vllm/vllm-openai-rocm"
VLLM_OLD = ff.EngineNightly(
    tag="nightly-09663abde0f50944a8d5ea30120666024b503faa",
    created="2026-07-02T06:00:00Z",
    commits=2,
)
VLLM_NEW = ff.EngineNightly(
    tag="nightly-0ba2aa35a81dcc3246b26291368b53fa2389c7d7",
    created="2026-07-26T06:00:00Z",
    commits=4,
)
# The keys of configs/amd-master.yaml at 843c6254f that pin VLLM_OLD, in the master's order.
VLLM_KEYS = (
    "dsv4-fp8-mi300x-vllm",
    "dsv4-fp8-mi300x-vllm-mtp",
    "dsv4-fp4-mi355x-vllm",
    "dsv4-fp4-mi355x-vllm-mtp",
    "dsv4-fp8-mi325x-vllm",
    "dsv4-fp8-mi325x-vllm-mtp",
)
ATOM_LINE = "rocm/atom:rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom"
ATOM_OLD, ATOM_NEW = f"{ATOM_LINE}20260511", f"{ATOM_LINE}20260601"
ATOM_KEYS = (
    "dsr1-fp4-mi355x-atom",
    "dsr1-fp4-mi355x-atom-mtp",
    "qwen3.5-fp8-mi355x-atom",
    "dsr1-fp8-mi355x-atom",
)


@dataclass(frozen=True)
class World:
    repo: Path
    state: Path
    env: dict[str, str]


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
    ff.build_engine_fixtures(registry, "vllm", [VLLM_OLD, VLLM_NEW], cache_dir=fixture_cache)
    repository = "relpipe-test-keys/atom"
    old, new = build_fixtures(registry, repository, 2, "good", cache_dir=fixture_cache)
    mirror_copy(registry, f"{repository}@{old.digest}", ATOM_OLD)
    mirror_copy(registry, f"{repository}@{new.digest}", ATOM_NEW)
    base = tmp_path_factory.mktemp("keys")
    repo, env = tree_world(inferencex_tree, base, registry, docker_host)
    return World(repo, base / "state", env)


def _release(
    world: World,
    keys: tuple[str, ...],
    image: str,
    *extra: str,
    state: bool = True,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "release"]
        + [a for key in keys for a in ("--config-key", key)]
        + ["--image", image, "--pr-number", str(PR), "--repo-url", REPO_URL]
        + ["--json", *(["--state", str(world.state)] if state else []), *QUICK, *extra],
        cwd=world.repo,
        env=env or world.env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_selection_on_the_real_tree(world: World) -> None:
    ws = Workspace(world.repo)
    pinned = set(VLLM_KEYS)
    line = select(ws, ["dsv4-fp4-mi355x-vllm"], line=True)
    assert pinned < set(line)  # every key on vLLM's nightly line, other nightlies included
    assert all("vllm" in k for k in line)
    assert select(ws, ["dsv4-fp4-mi355x-vllm"], line=True, runners=["mi300x"]) == (
        "dsv4-fp8-mi300x-vllm",
        "dsv4-fp8-mi300x-vllm-mtp",
    )
    assert set(select(ws, ["dsr1-fp4-mi355x-atom"], line=True)) >= set(ATOM_KEYS)
    with pytest.raises(PipelineError, match="runs on b200") as none:
        select(ws, ["dsv4-fp4-mi355x-vllm"], line=True, runners=["b200"])
    assert "\n" not in str(none.value)


@pytest.mark.timeout(1800)
def test_six_keys_sharing_a_vllm_nightly_release_as_one_entry(world: World) -> None:
    masters = sorted((world.repo / "configs").glob("*-master.yaml"))
    all_keys = [k for m in masters for k in master_keys(m)]
    base_log = (world.repo / "perf-changelog.yaml").read_bytes()
    candidate = f"{VLLM}:{VLLM_NEW.tag}"
    doc = _release(world, VLLM_KEYS, candidate)
    assert doc["release"]["written"] is True
    assert [c for c in doc["verdict"]["checks"] if c["status"] == "FAIL"] == []
    # Only the master and the changelog changed: no lock file, no state in the checkout.
    status = git(world.repo, "status", "--porcelain", "--untracked-files=all", "--ignored")
    assert sorted(status.splitlines()) == [f" M {MASTER}", " M perf-changelog.yaml"]
    # Every key's image line, and nothing else, bumped in place.
    files = diff_files(git(world.repo, "diff", "-U0"))
    old_line, new_line = f"  image: {VLLM}:{VLLM_OLD.tag}", f"  image: {candidate}"
    assert files[MASTER] == ([old_line] * 6, [new_line] * 6)
    # One entry naming every key, appended; the hook and InferenceX's validator accept it.
    head = (world.repo / "perf-changelog.yaml").read_bytes()
    assert head.startswith(base_log)
    [entry] = yaml.safe_load(head[len(base_log) :])
    assert entry["config-keys"] == list(VLLM_KEYS)
    assert entry["pr-link"] == f"{REPO_URL}/pull/{PR}"
    assert entry["description"][0] == (
        f"Update vLLM image from {VLLM}:{VLLM_OLD.tag} to {candidate}"
    )
    policy = gate.Policy(repo_url=REPO_URL, pr_number=PR, config_keys=all_keys)
    report = gate.check(base_log, head, policy)
    assert report.ok, [str(f) for f in report.findings]
    accepted, why = inferencex_accepts(base_log, head, masters)
    assert accepted, why
    # The image was qualified once: its own stages ran for the first key, were cache hits for
    # the five others, which ran at most their own points (the record shows it: keys.json).
    keys = doc["release"]["keys"]
    assert [k["key"] for k in keys] == list(VLLM_KEYS)
    image_stages = {"pull", "probe", "smoke", "probe baseline"}
    assert image_stages <= set(keys[0]["ran"])
    assert all(not (set(k["ran"]) & image_stages) for k in keys[1:]), [k["ran"] for k in keys]
    record = Path(doc["release"]["notes"]).parent
    recorded = json.loads((record / "keys.json").read_text())
    assert [r["key"] for r in recorded["keys"]] == list(VLLM_KEYS)
    # One old -> new engine pair: extracted and diffed once, scoped to each key's paths (C5).
    assert recorded["engine_pairs_diffed"] == 1
    # One bilingual notes pair naming every key.
    notes = (record / "notes.md").read_text()
    assert notes.startswith("# Update vLLM image to ") and "## 中文" in notes
    assert all(k in notes for k in VLLM_KEYS)
    # The pin is relpipe's state: a second release of the same image is nothing to do.
    again = _release(world, VLLM_KEYS, candidate)
    assert "nothing_to_do" in again["release"]


@pytest.mark.timeout(1800)
def test_four_keys_on_atoms_dated_build_dry_run_writes_nothing(
    world: World, tmp_path: Path
) -> None:
    """No --state: the state would be REPO/.relpipe, under the checkout; the dry run keeps its
    records in this user's cache instead, and the checkout is byte-identical after."""
    before = checkout_snapshot(world.repo)
    env = dict(world.env, XDG_CACHE_HOME=str(tmp_path / "cache"))
    doc = _release(world, ATOM_KEYS, ATOM_NEW, "--dry-run", state=False, env=env)
    assert not (world.repo / ".relpipe").exists()
    assert list((tmp_path / "cache" / "relpipe" / "dry-run").iterdir())
    assert doc["release"]["written"] is False
    assert [c for c in doc["verdict"]["checks"] if c["status"] == "FAIL"] == []
    files = diff_files(doc["release"]["diff"])
    assert set(files) == {MASTER, "perf-changelog.yaml"}
    assert files[MASTER] == ([f"  image: {ATOM_OLD}"] * 4, [f"  image: {ATOM_NEW}"] * 4)
    [entry] = yaml.safe_load("\n".join(files["perf-changelog.yaml"][1]))
    assert entry["config-keys"] == list(ATOM_KEYS)
    assert checkout_snapshot(world.repo) == before


def test_keys_of_two_image_lines_are_refused_in_one_line_before_anything(world: World) -> None:
    before = checkout_snapshot(world.repo)
    done = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "release", "--config-key"]
        + ["dsv4-fp4-mi355x-vllm", "--config-key", "dsr1-fp4-mi355x-atom"]
        + ["--image", ATOM_NEW, "--state", str(world.state), *QUICK],
        cwd=world.repo,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "a release bumps one image line" in done.stderr
    assert checkout_snapshot(world.repo) == before
