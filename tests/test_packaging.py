"""The distribution adds exactly one top-level import name, `relpipe`, and ships every layer.

The wheel is built from this checkout (no build isolation: setuptools is already installed) and
read as a zip: its top-level names, the layers under `relpipe/`, the package data the code reads
at run time, and the console scripts.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"core", "pipeline", "changelog", "images", "engine", "validate"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(build), "TMPDIR": str(build)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = out.glob("relpipe-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_adds_exactly_one_top_level_name(wheel: zipfile.ZipFile) -> None:
    names = {n.split("/")[0] for n in wheel.namelist()}
    assert {n for n in names if not n.endswith(".dist-info")} == {"relpipe"}
    assert not any(n.startswith("relpipe/__init__") for n in wheel.namelist())  # a PEP 420 name
    layers = {n.split("/")[1] for n in wheel.namelist() if n.startswith("relpipe/")}
    assert layers == LAYERS


def test_the_wheel_carries_the_data_the_code_reads_and_both_scripts(
    wheel: zipfile.ZipFile,
) -> None:
    files = set(wheel.namelist())
    for data in (
        "relpipe/validate/precision/atom_rules.yaml",
        "relpipe/changelog/notes/catalog.yaml",
        "relpipe/pipeline/report.html.j2",
        "relpipe/core/checks.html.j2",  # the checks' HTML macros every page imports
        "relpipe/engine/__main__.py",
        "relpipe/engine/declarations/atom.json",  # one declaration per engine (core/engines.py)
        "relpipe/engine/declarations/sglang.json",
        "relpipe/engine/declarations/vllm.json",
        "relpipe/changelog/results/migrations/0001_results.sql",  # the history store's schema
        "relpipe/changelog/results/migrations/0002_results_order.sql",
    ):
        assert data in files, data
    (entry_points,) = [n for n in files if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "relpipe = relpipe.pipeline.cli:main" in text
    assert "validate_perf_changelog = relpipe.validate.gate.cli:main" in text
