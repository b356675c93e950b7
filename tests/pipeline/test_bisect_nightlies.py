"""`relpipe bisect` end to end on fixture nightlies in the loopback registry, run by real dockerd:
GOOD and BAD are qualified first (a BAD that passes is refused in one line), `--dry-run` prints the
plan and qualifies nothing, and the search names the planted first bad nightly.

Four nightlies of one repository, the last one `broken` (its layernorm kernel is wrong: C3 FAILs);
the engine settings are tests/qualify_support.py's QUICK.
"""

from __future__ import annotations

import json

import pytest
from qualify_support import KEY, QUICK, Env

from relpipe.images.build import build_fixtures

pytestmark = [pytest.mark.services, pytest.mark.slow]

REPOSITORY = "relpipe-test-pipeline/atom-bisect"


def test_bisect_checks_its_endpoints_then_finds_the_planted_first_bad_nightly(env: Env) -> None:
    nightlies = build_fixtures(env.registry, REPOSITORY, 4, "broken", cache_dir=env.fixture_cache)
    tags = [f"{REPOSITORY}:{n.tag}" for n in nightlies]
    state = env.state / "bisect-e2e"
    before = sorted(p.relative_to(env.repo) for p in env.repo.rglob("*"))

    planned = env.relpipe(
        "bisect", tags[0], tags[-1], "--config-key", KEY, "--state", str(state), "--dry-run", *QUICK
    )  # fmt: skip - one command line
    assert planned.returncode == 0, planned.stderr
    assert f"GOOD {tags[0]}, BAD {tags[-1]}: 2 nightly tag(s) between" in planned.stdout
    assert "at most 2 qualification(s)" in planned.stdout
    assert "dry run: nothing qualified, nothing written" in planned.stdout
    assert not state.exists()  # no record, no cache, no journal
    assert sorted(p.relative_to(env.repo) for p in env.repo.rglob("*")) == before

    # A BAD that passes: refused in one line once both endpoints are qualified.
    refused = env.relpipe(
        "bisect", tags[0], tags[1], "--config-key", KEY, "--state", str(state), *QUICK
    )  # fmt: skip - one command line
    assert refused.returncode == 1, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert "bisect refused: BAD" in last and f"{tags[1]} passes its qualification" in last

    found = env.relpipe(
        "bisect", tags[0], tags[-1], "--config-key", KEY, "--state", str(state), "--json", *QUICK
    )  # fmt: skip - one command line
    assert found.returncode == 0, found.stderr
    doc = json.loads(found.stdout)
    assert doc["good"] == f"docker.io/{tags[2]}" or doc["good"] == tags[2]
    assert doc["bad"] == f"docker.io/{tags[3]}" or doc["bad"] == tags[3]
    said = found.stderr
    assert f"bisect: GOOD: {nightlies[0].tag}: good" in said  # qualified before the search
    assert f"bisect: BAD: {nightlies[3].tag}: bad" in said
