"""A release of a vLLM key and an SGLang key of the real 2026-08 InferenceX tree, dry run.

Fixture nightlies with the engines' own layouts (`images.family_fixtures`: `/vllm-workspace`,
`/sgl-workspace/sglang`, their packaging records) are pushed to the loopback registry under the
families' real repositories and tag names, which it serves as a mirror of docker.io
(`RELPIPE_REGISTRY_MIRRORS`): the tag each key pins today is an older nightly, the release
candidate a newer real tag of the same family. The engine histories write real paths of the
engines' repositories (checked against ../shared/data/engines/*-paths.txt), so the precision
diff between the two nightlies runs the vLLM or SGLang rules. Each release must exit 0 with no
FAIL, and its notes, facts and changelog entry must name the family's engine, version and
commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import corpus
import pytest
import yaml
from release_support import MASTER, PR, QUICK, REPO_URL, diff_files, tree_world

from relpipe.core import engines
from relpipe.images import family_fixtures as ff
from relpipe.images.build import FixtureImage

pytestmark = [pytest.mark.services, pytest.mark.slow]


@dataclass(frozen=True, kw_only=True)
class Case:
    key: str
    engine: str
    pinned: ff.EngineNightly  # the tag the key pins in the real tree at 843c6254f
    candidate: ff.EngineNightly  # a newer real tag of the family (rocm-image-tags.tsv)


CASES = (
    Case(
        key="dsv4-fp4-mi355x-vllm",
        engine="vllm",
        pinned=ff.EngineNightly(
            tag="nightly-09663abde0f50944a8d5ea30120666024b503faa",
            created="2026-07-02T06:00:00Z",
            commits=2,
        ),
        candidate=ff.EngineNightly(
            tag="nightly-0ba2aa35a81dcc3246b26291368b53fa2389c7d7",
            created="2026-07-26T06:00:00Z",
            commits=4,
        ),
    ),
    Case(
        key="qwen3.5-fp8-mi355x-sglang",
        engine="sglang",
        pinned=ff.EngineNightly(
            tag="v0.5.16-rocm720-mi35x-20260726", created="2026-07-26T04:00:00Z", commits=2
        ),
        candidate=ff.EngineNightly(
            tag="v0.5.17-rocm720-mi35x-20260821", created="2026-08-21T04:00:00Z", commits=4
        ),
    ),
)


FAMILY = {"vllm": "vLLM", "sglang": "SGLang"}
NORM = {
    "vllm": "vllm/model_executor/layers/layernorm.py",
    "sglang": "python/sglang/srt/layers/layernorm.py",
}


@dataclass(frozen=True)
class World:
    repo: Path
    state: Path
    env: dict[str, str]
    images: dict[str, tuple[FixtureImage, FixtureImage]]  # key -> (pinned, candidate)


def _listed(engine: str) -> set[str]:
    path = corpus.engines_dir() / f"{engine}-paths.txt"
    return set(path.read_text().split())


@pytest.fixture(scope="module")
def world(
    registry: str,
    docker_host: str,
    fixture_cache: Path,
    inferencex_tree: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> World:
    images = {}
    for case in CASES:
        pinned, new = ff.build_engine_fixtures(
            registry, case.engine, [case.pinned, case.candidate], cache_dir=fixture_cache
        )
        images[case.key] = (pinned, new)
    base = tmp_path_factory.mktemp("families")
    repo, env = tree_world(inferencex_tree, base, registry, docker_host)
    return World(repo, base / "state", env, images)


def _release(world: World, key: str, image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "release", "--config-key", key]
        + ["--image", image, "--pr-number", str(PR), "--repo-url", REPO_URL]
        + ["--dry-run", "--json", "--state", str(world.state), *QUICK],
        cwd=world.repo,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=840,
    )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", CASES, ids=[c.engine for c in CASES])
def test_a_family_key_releases_on_the_real_tree(world: World, case: Case) -> None:
    # Real paths (the listings are partial: SGLang's version module is its packaging's, see
    # engine/packaging.py) and real tags of the family.
    assert set(ff.engine_paths(case.engine)) - {"python/sglang/version.py"} <= _listed(case.engine)
    real = {(r["repository"], r["tag"]) for r in corpus.image_tags()}
    repository = engines.engine(case.engine).fixtures.repository
    assert {(repository, case.pinned.tag), (repository, case.candidate.tag)} <= real
    pinned, new = world.images[case.key]
    old_line = f"  image: {repository}:{case.pinned.tag}"
    assert old_line in (world.repo / MASTER).read_text().split("\n")
    candidate = f"{repository}:{case.candidate.tag}"
    done = _release(world, case.key, candidate)
    assert done.returncode == 0, done.stderr[-3000:]
    doc: dict[str, Any] = json.loads(done.stdout)
    bad = [c for c in doc["verdict"]["checks"] if c["status"] == "FAIL"]
    assert bad == []
    files = diff_files(doc["release"]["diff"])
    assert set(files) == {MASTER, "perf-changelog.yaml"}  # no lock file: InferenceX has none
    assert files[MASTER] == ([old_line], [f"  image: {candidate}"])
    facts = json.loads((Path(doc["release"]["notes"]).parent / "release.json").read_text())
    _facts_are_the_family(facts["new_image"], case, new)
    _entry_reads_for_the_family(files["perf-changelog.yaml"], case, pinned, new)
    _notes_read_for_the_family(Path(doc["release"]["notes"]).read_text(), case, pinned, new)
    assert not (world.repo / "images.lock.yaml").exists()  # a dry run writes nothing


def _facts_are_the_family(image: dict[str, Any], case: Case, new: FixtureImage) -> None:
    assert image["ref"] == f"{engines.engine(case.engine).fixtures.repository}:{case.candidate.tag}"
    assert image["digest"] == new.digest
    assert image["engine"] == {
        "name": case.engine,
        "version": new.engine_version,
        "commit": new.engine_commit,
    }


def _entry_reads_for_the_family(
    lines: tuple[list[str], list[str]], case: Case, pinned: FixtureImage, new: FixtureImage
) -> None:
    removed, added = lines
    assert removed == []
    [entry] = yaml.safe_load("\n".join(added))
    repository, family = engines.engine(case.engine).fixtures.repository, FAMILY[case.engine]
    assert entry["config-keys"] == [case.key]
    assert entry["pr-link"] == f"{REPO_URL}/pull/{PR}"
    assert entry["description"][:3] == [
        f"Update {family} image from {repository}:{case.pinned.tag} to "
        f"{repository}:{case.candidate.tag}",
        f"{family} {pinned.engine_version} -> {new.engine_version}, ROCm 7.2.4",
        f"Pin {repository}:{case.candidate.tag} to {new.digest}",
    ]
    assert not any("ATOM" in line for line in entry["description"])


def _notes_read_for_the_family(
    notes: str, case: Case, pinned: FixtureImage, new: FixtureImage
) -> None:
    family, norm = FAMILY[case.engine], NORM[case.engine]
    en = notes.split("\n## 中文\n")[0]
    assert en.startswith(f"# Update {family} image to {case.candidate.tag} for {case.key} / ")
    assert f"  - {family}: `{pinned.engine_version}` → `{new.engine_version}` (2 commits)" in en
    # The precision diff ran the family's rules over its real paths: the norm change is relevant.
    assert f"- Precision-relevant: `{norm}` (`norm`" in en
    assert "- C5 precision diff: WARN" in en
    assert "ATOM" not in notes
