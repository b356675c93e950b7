"""Adding an engine is one declaration plus fixtures: `toy`, declared only in
tests/fixtures/engines/ (toy.json and the rule set it names, toy_rules.yaml) and brought in by
`RELPIPE_ENGINE_DECLARATIONS`, is picked up by every layer without a change to relpipe: its tag
families and never-classes (images), the probe's facts on a root filesystem laid out by the
fixture builder from its declaration (engine, images), its precision rule set and source
checkout (validate, pipeline), its launch flags and acceptance spelling (engine), and review's
upstream-image prefixes (validate)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import source_root

from relpipe.core import engines
from relpipe.images import fixture_repo as fx
from relpipe.images.family_fixtures import engine_build
from relpipe.images.nightly import PatternError, classify, default_family, engine_of, newest
from relpipe.pipeline.enginerepo import source_of
from relpipe.validate import precision
from relpipe.validate.review.images import upstream

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "engines"
SITE = "usr/lib/python3/site-packages"
HISTORY = fx.History(
    name="toy",
    tag="v0.2.0",
    tag_index=0,
    next_version="0.2.1",
    commits=(
        fx.CommitSpec(subject="Release v0.2.0", changes=(("toy/kernels/norm.py", "EPS = 1e-6\n"),)),
        fx.CommitSpec(subject="Docs (#2)", changes=(("docs/index.md", "# toy\n"),)),
        fx.CommitSpec(subject="fp32 norm (#3)", changes=(("toy/kernels/norm.py", "EPS = 1e-5\n"),)),
    ),
)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(FOLDER))


def test_without_the_variable_there_is_no_toy() -> None:
    assert "toy" not in engines.names()
    assert engine_of("toyorg/toy-rocm") == "atom"  # a repository no family names


def test_families_and_never_classes(toy: None) -> None:
    assert engines.names() == ("atom", "sglang", "vllm", "toy")
    assert engine_of("toyorg/toy-rocm") == "toy" and default_family("toyorg/toy-rocm") == "toy"
    tags = [
        "nightly-mi35x-20260101",
        "nightly-mi35x-20260203",
        "nightly-mi30x-20260301",
        "nightly-mi35x-20261399",  # month 13
        "v1.2.3",
        "latest",
    ]
    with pytest.raises(PatternError, match="choose one of: toy:gpu=mi30x, toy:gpu=mi35x"):
        newest(tags, "toy")
    found = newest(tags, "toy:gpu=mi35x")
    assert found is not None and found.tag == "nightly-mi35x-20260203"
    release = newest(tags, "toy-release")
    assert release is not None and release.tag == "v1.2.3"
    assert classify("toyorg/toy-rocm", "latest").kind == "floating"
    assert classify("toyorg/toy-rocm", "nightly-mi35x-20261399").kind == "unknown"


def test_precision_rule_set_and_source_checkout(toy: None) -> None:
    assert precision.builtin_rules()["toy"] == FOLDER / "toy_rules.yaml"
    assert precision.rules_of("toy") == "toy"
    rules = precision.load_rules("toy")
    assert rules.name == "toy"
    report = precision.lint_paths(["toy/kernels/norm.py", "docs/index.md"], rules, "listing")
    assert report.ok
    image = "toyorg/toy-rocm:nightly-mi35x-20260203"
    assert source_of(image, None) == ("toy", "/toy-workspace")
    assert source_of(image, "atom") == ("atom", "/toy-workspace")  # --rules still wins
    assert upstream()["toy"] == ("toyorg/",)


def _launch(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(source_root())}
    return subprocess.run(
        [sys.executable, "-m", "relpipe.engine", "launch-command", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_launch_flags_and_acceptance(toy: None) -> None:
    out = _launch(
        "toy", "--model", "/m", "--tp", "2", "--kv-dtype", "fp8", "--spec", "mtp:3", "--al", "2.5"
    )
    assert out.returncode == 0, out.stderr
    spec = json.loads(
        _launch("toy", "--model", "/m", "--spec", "mtp:3", "--al", "2.5", "--json").stdout
    )
    assert spec["argv"] == [
        "toy-serve", "/m", "--name", "/m", "--listen", "127.0.0.1:8000", "--shards", "1",
        "--draft-method", "heads", "--draft-steps", "3", "--verify", "4",
        "--spec-json", '{"k": 3, "al": 2.5}',
    ]  # fmt: skip  # one flag and its value per pair
    assert spec["env"] == {"TOY_FORCE_AL": "2.5"}
    assert "--kv float8" in out.stdout and "TOY_FORCE_AL=2.5" in out.stdout
    refused = _launch("toy", "--model", "/m", "--spec", "eagle3:3", "--draft-model", "/d")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "launch-command: toy: no speculative algorithm for 'eagle3'"
    toy_spelling = [s for s in engines.engine("toy").acceptance]
    assert [(s.engine, s.kind) for s in toy_spelling] == [("Toy", "al")]


def test_golden_acceptance_scanners_read_its_spelling(toy: None) -> None:
    """The golden-AL scanners compile the spellings when validate starts (a process started
    with RELPIPE_ENGINE_DECLARATIONS set): the toy's TOY_FORCE_AL is read as Toy's AL."""
    code = (
        "from relpipe.validate.golden_files import SPELLINGS\n"
        "hits = [(e, p.search('export TOY_FORCE_AL=2.5').group(1)) for e, p, _ in SPELLINGS\n"
        "        if p.search('export TOY_FORCE_AL=2.5')]\n"
        "print(hits)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(source_root())}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('Toy', '2.5')]"


def _materialise(root: Path, entries: list) -> None:  # type: ignore[type-arg]
    for entry in entries:
        path = root / entry.path
        if entry.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "file":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entry.data if entry.data is not None else entry.source.read_bytes())


def test_probe_reads_the_fixture_layout_its_declaration_describes(
    toy: None, cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    repo, entries = engine_build("toy", SITE, 3, HISTORY)
    root = tmp_path / "root"
    _materialise(root, entries)
    checkout = root / "toy-workspace"
    assert (checkout / "toy" / "kernels" / "norm.py").read_text() == "EPS = 1e-5\n"
    (tmp_path / "rocm").write_text("7.2.4-77\n")
    r = cli(
        "probe",
        "--engine",
        "toy",
        "--engine-dir",
        str(checkout),
        "--aiter-dir",
        str(tmp_path / "no-aiter"),
        "--rocm-version-file",
        str(tmp_path / "rocm"),
        extra_path=[root / SITE],
    )
    assert r.code == 0, r.stderr
    engine = r.doc["engine"]
    assert engine["name"] == "toy" and engine["distribution"] == "toyengine"
    assert engine["version"] == repo.version and repo.version.startswith("0.2.1.dev2+g")
    assert engine["commit"] == repo.commit and engine["version_commit"] == repo.commit[:9]
    assert r.doc["packages"]["toy"] == repo.version
    assert not [e for e in r.doc["errors"] if e.startswith("engine")]
