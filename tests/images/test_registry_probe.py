"""`relpipe images pin` + `relpipe images probe --lock` on a real fixture nightly: the lock gets
the verified digest first, then the probe's facts for exactly that digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relpipe.images.build import build_fixtures
from relpipe.images.lock import load
from relpipe.pipeline.cli import main as cli

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_pin_then_probe_merges_facts(
    registry: str,
    docker_host: str,
    tmp_path: Path,
    fixture_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    image = build_fixtures(registry, "relpipe-t3/atom-dev", count=1, cache_dir=fixture_cache)[-1]
    ref = f"{registry}/relpipe-t3/atom-dev:{image.tag}"
    lock = tmp_path / "images.lock.yaml"
    assert cli(["images", "pin", ref, "--lock", str(lock)]) == 0
    capsys.readouterr()
    assert cli(["images", "probe", ref, "--lock", str(lock), "--json", "--timeout", "300"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["digest"] == image.digest
    entry = load(lock)[ref]
    assert entry.digest == out["digest"]
    assert entry.facts["engine"]["version"] == image.engine_version
    assert entry.facts["engine"]["commit"] == image.engine_commit
