"""Nightly tag patterns and `relpipe images latest` among 200 mixed tags with pagination."""

from __future__ import annotations

import json
import random
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from registry_support import FaultProxy, push_image, unique_repo

from relpipe.images.manifest import DOCKER_MANIFEST
from relpipe.images.nightly import PatternError, compile_pattern, matching, newest
from relpipe.images.registry import RegistryClient
from relpipe.pipeline.cli import main as cli


def test_default_pattern_ignores_floating_and_malformed_tags() -> None:
    tags = [
        "latest",
        "nightly",
        "nightly_20261007",
        "nightly_202610070333",
        "nightly_202610061452",
        "nightly_202613010000",
        "nightly_202610070333-rc",
        "xnightly_202612310000",
        "vllm-v0.10.1-nightly_20261231",
    ]
    best = newest(tags)
    assert best is not None and best.tag == "nightly_202610070333"
    assert best.timestamp == datetime(2026, 10, 7, 3, 33)
    assert [t.tag for t in matching(tags)] == ["nightly_202610061452", "nightly_202610070333"]


def test_version_families_break_ties_on_version() -> None:
    tags = [
        "vllm-v0.9.2-nightly_20261001",
        "vllm-v0.10.1-nightly_20261001",
        "vllm-v0.10.0-nightly_20261002",
        "sglang-v0.5.16-nightly_20261005",
        "nightly_202610090000",
    ]
    assert newest(tags, "atom-vllm").tag == "vllm-v0.10.0-nightly_20261002"  # type: ignore[union-attr]
    assert newest(tags[:2], "atom-vllm").tag == "vllm-v0.10.1-nightly_20261001"  # type: ignore[union-attr]
    assert newest(tags, "atom-sglang").tag == "sglang-v0.5.16-nightly_20261005"  # type: ignore[union-attr]
    assert newest(["a"], "atom-vllm") is None


def test_user_pattern_is_literal_outside_fields() -> None:
    pattern = compile_pattern("build.%Y-%m-%d+%H")
    assert pattern.match("build.2026-10-07+03") is not None
    assert pattern.match("buildX2026-10-07+03") is None  # '.' is literal, not a regex dot


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nightly_%m%d", "needs at least %Y"),
        ("x_%Y%q", "unsupported field '%q'"),
        ("%Y%Y", "appears twice"),
    ],
)
def test_bad_patterns(text: str, message: str) -> None:
    with pytest.raises(PatternError, match=message):
        compile_pattern(text)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
        min_size=1,
        max_size=20,
        unique_by=lambda d: d.strftime("%Y%m%d%H%M"),
    ),
    st.randoms(use_true_random=False),
)
def test_newest_is_order_independent(stamps: list[datetime], rnd: random.Random) -> None:
    tags = [d.strftime("nightly_%Y%m%d%H%M") for d in stamps] + ["latest", "nightly"]
    expected = max(stamps).strftime("nightly_%Y%m%d%H%M")
    rnd.shuffle(tags)
    assert newest(tags).tag == expected  # type: ignore[union-attr]


@pytest.mark.services
def test_cli_latest_among_200_tags_with_pagination(
    registry: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(3)
    with RegistryClient() as client:
        repo = unique_repo(registry, "latest200")
        old = push_image(client, repo, "latest", seed="old")
        new = push_image(client, repo, "nightly_202610070333", seed="new")
        tags = set()
        while len(tags) < 150:  # older nightlies
            tags.add(
                f"nightly_2026{rng.randint(1, 9):02d}{rng.randint(1, 28):02d}"
                f"{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}"
            )
        tags |= {
            "nightly",
            "nightly_20261231",
            "nightly_202613010000",
            "nightly_202612310000-dirty",
            "vllm-v0.11.0-nightly_20261231",
            "sglang-v0.5.16-nightly_20261230",
            "rc-202612312359",
        }
        tags |= {f"dev-{i}" for i in range(200 - 2 - len(tags))}
        for t in sorted(tags):
            client.put_manifest(repo, t, old.data, DOCKER_MANIFEST)
    proxy = FaultProxy(registry, paginate_tags=True)
    try:
        via = repo.replace(registry, proxy.addr)
        assert cli(["images", "latest", via, "--page-size", "40", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["tag"] == "nightly_202610070333" and out["digest"] == new.digest
        assert out["tags-total"] == 200 and out["tags-matching"] == 151
        assert sum(1 for m, p, _ in proxy.log if m == "GET" and "/tags/list" in p) == 5
        assert cli(["images", "latest", via, "--pattern", "atom-vllm"]) == 0
        assert capsys.readouterr().out.split()[0] == f"{via}:vllm-v0.11.0-nightly_20261231"
    finally:
        proxy.close()
