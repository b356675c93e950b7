"""The real-world corpus and the oracles that run other projects' own code, for every test.

* `inferencex_dir()` / `inferencex_tree()`: InferenceX's data and whole tree
  (`$RELPIPE_CORPUS`, default `../shared/data/inferencex`);
* `atom_bundle()` / `atom_clone(dest)`: ATOM's real git history (`$RELPIPE_ATOM_BUNDLE`, default
  `../shared/data/atom/atom.bundle`), cloned into a temporary folder, never into the project;
* `oracle_python()`: a Python with InferenceX's own dependencies (pydantic, PyYAML), in a venv of
  its own, cached under `~/.cache/relpipe/oracle/` across runs (and shared by xdist workers), so
  InferenceX's validator, sweep generator and score validator run as they do in its CI;
* `run_oracle(script, *args)`: one of InferenceX's `utils/` scripts run by that Python.

Where the corpus is absent (a user's clone) a test skips with a one-line reason; under CI=true it
fails. Never copy the corpus into the project.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relpipe.core.files import file_lock
from relpipe.images import services as svc

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
CORPUS_ENV = "RELPIPE_CORPUS"
ATOM_ENV = "RELPIPE_ATOM_BUNDLE"
# InferenceX's own dependencies for utils/ (pinned so the cached venv is reproducible).
ORACLE_REQUIREMENTS = ("pydantic>=2.7,<3", "PyYAML>=6.0")
# setuptools-scm, the oracle of the engine versions fixture nightlies carry (ATOM versions itself
# with it); pinned so the cached venv is reproducible.
SCM_REQUIREMENTS = ("setuptools-scm==10.3.4",)
ORACLE_CACHE = Path(os.environ.get("RELPIPE_ORACLE_CACHE", Path.home() / ".cache/relpipe/oracle"))


def unavailable(reason: str) -> None:
    """Skip with `reason` on a developer machine; fail under CI=true (CI never silently skips)."""
    if svc.in_ci():
        pytest.fail(f"required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


RESULTS_ENV = "RELPIPE_RESULTS"


def results_dir() -> Path:
    """Real benchmark and eval result files (ATOM dashboards, InferenceX artifacts)."""
    path = Path(os.environ.get(RESULTS_ENV, DATA / "results"))
    if not (path / "atom-dashboards").is_dir():
        unavailable(f"results corpus not found at {path} (set {RESULTS_ENV})")
    return path


def inferencex_dir() -> Path:
    """InferenceX's data folder (perf-changelog.yaml, masters, thresholds, tree/)."""
    path = Path(os.environ.get(CORPUS_ENV, DATA / "inferencex"))
    if not (path / "perf-changelog.yaml").is_file():
        unavailable(f"InferenceX corpus not found at {path} (set {CORPUS_ENV})")
    return path


def inferencex_tree() -> Path:
    """InferenceX's whole tree at one commit (not a git repository: copy it to use git)."""
    tree = inferencex_dir() / "tree"
    if not (tree / "utils" / "validate_perf_changelog.py").is_file():
        unavailable(f"InferenceX tree not found at {tree}")
    return tree


def inferencex_tree_2026_10() -> Path:
    """InferenceX two months later (`inferencex-e2e/` + `infx/`), a partial reconstruction."""
    tree = inferencex_dir() / "tree-2026-10"
    if not (tree / "inferencex-e2e" / "configs" / "amd-master.yaml").is_file():
        unavailable(f"InferenceX 2026-10 tree not found at {tree}")
    return tree


ERAS = ("2026-01-15", "2026-03-30", "2026-07-01")


def inferencex_era(name: str) -> Path:
    """A whole real tree of InferenceX before 2026-07-02 (`eras/<name>/`, see its SOURCE.md)."""
    tree = inferencex_dir() / "eras" / name
    if not (tree / ".github" / "configs" / "amd-master.yaml").is_file():
        unavailable(f"InferenceX era tree not found at {tree}")
    return tree


def inferencex_trees() -> dict[str, Path]:
    """The five real trees of one year of InferenceX, oldest first, by date."""
    trees = {name: inferencex_era(name) for name in ERAS}
    trees["2026-08-22"] = inferencex_tree()
    trees["2026-10-07"] = inferencex_tree_2026_10()
    return trees


def atom_bundle() -> Path:
    """ATOM's real history as a git bundle."""
    path = Path(os.environ.get(ATOM_ENV, DATA / "atom" / "atom.bundle"))
    if not path.is_file():
        unavailable(f"ATOM bundle not found at {path} (set {ATOM_ENV})")
    return path


def atom_clone(dest: Path) -> Path:
    """A clone of ATOM's real history at `dest` (branch main checked out, tags fetched)."""
    bundle = atom_bundle()
    subprocess.run(
        ["git", "clone", "--quiet", str(bundle), str(dest)],
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return dest


def oracle_python() -> str:
    """A Python that has InferenceX's dependencies; the venv is made once and cached."""
    return cached_python(ORACLE_REQUIREMENTS)


def scm_python() -> str:
    """A Python with setuptools-scm itself, the oracle of engine versions (ATOM's versioning)."""
    return cached_python(SCM_REQUIREMENTS)


def cached_python(requirements: tuple[str, ...]) -> str:
    """A Python with `requirements` installed, in a venv made once and cached by their hash."""
    key = hashlib.sha256("\n".join((sys.version, *requirements)).encode()).hexdigest()[:12]
    venv = ORACLE_CACHE / f"venv-{key}"
    python = venv / "bin" / "python"
    ORACLE_CACHE.mkdir(parents=True, exist_ok=True)
    with file_lock(ORACLE_CACHE / f"venv-{key}.lock", timeout_s=900, what="oracle venv lock"):
        if not (venv / ".ready").is_file():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            done = subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    *requirements,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                unavailable(f"cannot install {', '.join(requirements)}: {done.stderr[-300:]}")
            (venv / ".ready").write_text("ok\n")
    return str(python)


def run_oracle(
    script: str | Path,
    *args: str,
    cwd: Path | None = None,
    timeout: float = 300,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run InferenceX's own code with its own dependencies, as its CI has it.

    `script` is a name under InferenceX's `utils/` (e.g. "validate_perf_changelog.py"), or the
    Path of one of our drivers in tests/oracles/ that imports InferenceX's modules from the tree
    and judges many cases in one process. `utils/` and `utils/matrix_logic/` are on the path.
    """
    tree = inferencex_tree()
    utils = tree / "utils"
    program = script if isinstance(script, Path) else utils / script
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(utils), str(utils / "matrix_logic")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [oracle_python(), str(program), *args],
        cwd=cwd or tree,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def engines_dir() -> Path:
    """vLLM/SGLang layouts, labelled changes and real ROCm image tags (`engines/SOURCE.md`)."""
    path = Path(os.environ.get(CORPUS_ENV, DATA / "inferencex")).parent / "engines"
    if not (path / "rocm-image-tags.tsv").is_file():
        unavailable(f"engines corpus not found at {path}")
    return path


def image_tags() -> list[dict[str, str]]:
    """The rows of `engines/rocm-image-tags.tsv` (395 real tags with their class and date)."""
    import csv

    with open(engines_dir() / "rocm-image-tags.tsv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def inferencex_e2e() -> Path:
    """InferenceX as of 2026-10 (`tree-2026-10/`, a partial reconstruction: read its SOURCE.md):
    the `inferencex-e2e/` folder, with the 2026-10 validator `infx/workflows/...`."""
    e2e = inferencex_dir() / "tree-2026-10" / "inferencex-e2e"
    if not (e2e / "infx" / "workflows" / "validate_perf_changelog.py").is_file():
        unavailable(f"InferenceX 2026-10 tree not found at {e2e}")
    return e2e


def run_oracle_e2e(
    script: Path, *args: str, input: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """One of our drivers in tests/oracles/ run by the oracle Python with the 2026-10 tree's
    `infx` package importable (as its SOURCE.md runs the validator)."""
    e2e = inferencex_e2e()
    env = {**os.environ, "PYTHONPATH": str(e2e), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [oracle_python(), str(script), *args],
        cwd=e2e,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
