"""The CLI contract through the installed `relpipe` entry point: exit 0 PASS/WARN, 1 FAIL (or WARN
with --strict), 2 usage or environment (a missing extra names its `pip install` line), 3 an
unexpected error (one line plus the path of a log with the traceback); one JSON document per
`--json` invocation.

Faults are injected at the import boundary by a `sitecustomize` on PYTHONPATH (a missing optional
package, a module that raises), in a subprocess: the code under test runs unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest
from support import git

from relpipe.core import jsoncodec
from relpipe.core.status import PASS
from relpipe.pipeline.containers import Engine
from relpipe.pipeline.outputs import (
    ConfigScope,
    EvalOutput,
    ProbeOutput,
    PullOutput,
    Resolved,
    SmokeOutput,
)
from relpipe.pipeline.plan import Options, Plan, open_record
from relpipe.pipeline.run import execute
from relpipe.pipeline.runrecord import relpipe_version

# Blocks the modules named in RELPIPE_TEST_MISSING (as if not installed) and makes importing those
# in RELPIPE_TEST_RAISE fail with a RuntimeError (an unexpected bug).
SITECUSTOMIZE = textwrap.dedent(
    """
    import os, sys

    class _Fault:
        missing = set(filter(None, os.environ.get("RELPIPE_TEST_MISSING", "").split(",")))
        raising = set(filter(None, os.environ.get("RELPIPE_TEST_RAISE", "").split(",")))

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.missing or name in self.missing:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            if name in self.raising:
                raise RuntimeError(f"injected fault importing {name}")
            return None

    sys.meta_path.insert(0, _Fault())
    """
)

NOTES_EXAMPLE = Path(str(resources.files("relpipe.changelog.notes").joinpath("example.json")))


def _relpipe_script() -> str:
    script = Path(sys.executable).with_name("relpipe")
    return str(script) if script.exists() else shutil.which("relpipe") or "relpipe"


@pytest.fixture
def run(tmp_path: Path):  # noqa: ANN201 - returns the runner below
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    state = tmp_path / "state"

    def _run(
        *args: str, missing: str = "", raising: str = "", cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PYTHONPATH": str(hook),
            "RELPIPE_TEST_MISSING": missing,
            "RELPIPE_TEST_RAISE": raising,
            "XDG_STATE_HOME": str(state),
        }
        return subprocess.run(
            [_relpipe_script(), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd or tmp_path,
            env=env,
            check=False,
        )

    return _run


@pytest.fixture
def engine_repo(tmp_path: Path) -> dict[str, str]:
    """A real git history: OLD, a side branch with PR #7 (never merged), NEW with PR #5."""
    repo = tmp_path / "engine"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "atom" / "model_ops").mkdir(parents=True)
    (repo / "atom" / "model_ops" / "layernorm.py").write_text("def rms_norm(x):\n    return x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init (#1)")
    old = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README.md").write_text("side\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs: side note (#7)")
    git(repo, "checkout", "-q", "main")
    (repo / "atom" / "model_ops" / "layernorm.py").write_text(
        "def rms_norm(x):\n    return x.float()\n"
    )
    git(repo, "commit", "-q", "-am", "fix(layernorm): accumulate in fp32 (#5)")
    new = git(repo, "rev-parse", "HEAD").strip()
    return {"repo": str(repo), "old": old, "new": new}


def test_exit_0_for_pass_and_warn_1_for_fail_or_strict_warn(run, engine_repo) -> None:  # noqa: ANN001
    base = ["diff", engine_repo["old"], engine_repo["new"], "--repo", engine_repo["repo"]]
    assert run(*base).returncode == 0
    # A must-contain change that is missing is a risk (WARN): 0, and 1 with --strict.
    warn = run(*base, "--must-contain", "#7")
    assert warn.returncode == 0, warn.stderr
    assert run(*base, "--must-contain", "#7", "--strict").returncode == 1
    # A must-not-contain change that is present is a failure.
    failed = run(*base, "--must-not-contain", "#5", "--json")
    assert failed.returncode == 1, failed.stderr
    upstream = json.loads(failed.stdout)["upstream"]
    assert [(u["ref"], u["found"], u["ok"]) for u in upstream] == [("#5", True, False)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no-such-command",), "unknown command 'no-such-command'"),
        (("merge",), "the following arguments are required: PLAN_DIR, SHARD_DIR, --out"),
        (("diff", "a", "b", "--scope", "nope"), "argument --scope: invalid choice: 'nope'"),
        (("qualify", "--max-batch", "many"), "invalid int value: 'many'"),
        (("notes", "render", "missing.json"), "cannot read facts file missing.json"),
    ],
)
def test_exit_2_for_usage_errors_in_one_line(run, args: tuple[str, ...], message: str) -> None:  # noqa: ANN001
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.count("\n") == 1 and message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "missing", "extra"),
    [
        (
            ("diff", "a", "b", "--repo", f"image:127.0.0.1:1/x@sha256:{'0' * 64}"),
            "docker",
            "images",
        ),
    ],
)
def test_exit_2_for_a_missing_extra_with_the_pip_line(
    run,  # noqa: ANN001
    args: tuple[str, ...],
    missing: str,
    extra: str,
) -> None:
    done = run(*args, missing=missing)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"pip install 'relpipe[{extra}]'" in done.stderr and missing in done.stderr


class RecordedEngine(Engine):
    """The container boundary replaced by recorded stage outputs (the fixture run's JSON): what a
    run record holds after a real qualification, without docker."""

    def __init__(self, recorded: dict) -> None:  # type: ignore[type-arg]
        super().__init__()
        self.recorded = recorded

    def pull(self, ref: str) -> PullOutput:
        return PullOutput(status=PASS, image="sha256:" + "ef" * 32)

    def probe(self, ref: str, options: Options) -> ProbeOutput:
        return jsoncodec.from_json(ProbeOutput, self.recorded["probe"])

    def smoke(self, ref: str, options: Options) -> SmokeOutput:
        return jsoncodec.from_json(SmokeOutput, self.recorded["smoke"])

    def evaluate(self, ref: str, inputs: dict, options: Options) -> EvalOutput:  # type: ignore[override, type-arg]
        ev = next(e for e in self.recorded["evals"] if e["batch"] == inputs["batch"])
        return jsoncodec.from_json(EvalOutput, {k: v for k, v in ev.items() if k != "point"})


@pytest.fixture
def run_record(tmp_path: Path, outcome_json) -> Path:  # noqa: ANN001
    """A qualification run record (no baseline), written by the real stage and record code."""
    recorded = outcome_json()
    plan = Plan(
        image=jsoncodec.from_json(Resolved, recorded["image"]),
        baseline=None,
        config=jsoncodec.from_json(ConfigScope, recorded["config"]),
        thresholds={},
        golden=None,
        options=Options(),
        workspace=None,
    )
    # Stage keys hash relpipe's source: fingerprint it now, as the `relpipe report` process will.
    relpipe_version.cache_clear()
    record = open_record(tmp_path / "state", plan)
    result = execute(plan, record, engine=RecordedEngine(recorded), quiet=True)
    assert result.verdict is not None and result.verdict.overall == "PASS"
    return record.root


def test_exit_2_when_the_report_extra_is_missing(run, run_record: Path) -> None:  # noqa: ANN001
    done = run("report", str(run_record), missing="matplotlib")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "pip install 'relpipe[report]'" in done.stderr


def test_report_json_is_one_document_equal_to_the_record(run, run_record: Path) -> None:  # noqa: ANN001
    before = (run_record / "report.json").read_bytes()
    done = run("report", str(run_record), "--json")
    assert done.returncode == 0, done.stderr
    assert _one_document(done.stdout) == json.loads(before)
    assert (run_record / "report.json").read_bytes() == before  # re-rendered byte for byte
    strict = run("report", str(run_record), "--json", "--strict")
    assert strict.returncode == 0 and _one_document(strict.stdout)["verdict"]["overall"] == "PASS"  # type: ignore[index]


def _log_of(stderr: str) -> Path:
    found = re.search(r"\(traceback in (\S+)\)$", stderr.strip())
    assert found, stderr
    return Path(found.group(1))


def test_exit_3_for_an_unexpected_error_with_one_line_and_a_log(run, tmp_path: Path) -> None:  # noqa: ANN001
    done = run("notes", "render", str(NOTES_EXAMPLE), raising="relpipe.validate.notes_check")
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert (
        "unexpected error: RuntimeError: injected fault importing relpipe.validate.notes_check"
        in done.stderr
    )
    assert "Traceback" not in done.stderr
    log = _log_of(done.stderr)
    assert log.is_relative_to(tmp_path / "state" / "relpipe")
    text = log.read_text()
    assert text.startswith("relpipe notes render ") and "Traceback (most recent call last)" in text
    assert "RuntimeError: injected fault importing relpipe.validate.notes_check" in text


def test_exit_3_when_one_of_relpipes_own_modules_is_missing(run) -> None:  # noqa: ANN001
    # Not an optional extra: a broken installation, which no `pip install` line would fix.
    done = run("notes", "render", str(NOTES_EXAMPLE), missing="relpipe.validate.notes_check")
    assert done.returncode == 3 and "pip install" not in done.stderr
    assert "notes_check" in done.stderr and _log_of(done.stderr).is_file()


def _one_document(stdout: str) -> object:
    """The whole of stdout is exactly one JSON document (json.loads refuses trailing data)."""
    assert stdout.strip(), "no output"
    return json.loads(stdout)


def test_json_prints_exactly_one_document(run, engine_repo, tmp_path: Path) -> None:  # noqa: ANN001
    base = ["diff", engine_repo["old"], engine_repo["new"], "--repo", engine_repo["repo"]]
    for args in (base, [*base, "--must-not-contain", "#5"]):
        doc = _one_document(run(*args, "--json").stdout)
        assert isinstance(doc, dict) and doc["new"] == engine_repo["new"]
    notes = tmp_path / "NOTES.md"
    notes.write_text(run("notes", "render", str(NOTES_EXAMPLE), "--title").stdout)
    checked = run("notes", "check", str(notes), "--facts", str(NOTES_EXAMPLE), "--json")
    assert checked.returncode == 0 and _one_document(checked.stdout) == {
        "ok": True,
        "findings": [],
    }
    notes.write_text(notes.read_text().replace("nightly_202610070333", "nightly_202610061452"))
    found = run("notes", "check", str(notes), "--facts", str(NOTES_EXAMPLE), "--json")
    assert found.returncode == 1 and _one_document(found.stdout)["ok"] is False  # type: ignore[index]


def test_json_resolve_prints_one_document(run, registry: str) -> None:  # noqa: ANN001
    from registry_support import push_image, unique_repo

    from relpipe.images.registry import RegistryClient

    repo = unique_repo(registry, "cli-json")
    with RegistryClient() as client:
        pushed = [push_image(client, repo, tag, seed=tag) for tag in ("a", "b")]
    done = run("images", "resolve", f"{repo}:a", f"{repo}:b", "--json")
    assert done.returncode == 0, done.stderr
    doc = _one_document(done.stdout)
    assert [r["digest"] for r in doc] == [p.digest for p in pushed]  # type: ignore[union-attr]
    assert git  # the helper stays imported for the fixtures above


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1e400", "-Infinity", "NaN"])
def test_an_out_of_range_score_in_a_run_record_is_one_line(
    run,  # noqa: ANN001
    run_record: Path,
    literal: str,
) -> None:
    """Issue 34.3: a score of a 401-digit integer in a run record was exit 3 in `relpipe report`
    (`float()` overflowed); numbers from outside are bounded once (core.numbers)."""
    # What `report` reads: the stage outputs (a score) and the history comparison (a value).
    targets = [(p, "score") for p in sorted(run_record.glob("stages/eval-*.json"))]
    targets.append((run_record / "history.json", "new_value"))
    for path, field in targets:
        text = path.read_text()
        mutated = re.sub(rf'"{field}": [-0-9.e]+', f'"{field}": {literal}', text, count=1)
        assert mutated != text, path
        path.write_text(mutated)
        done = run("report", str(run_record))
        assert done.returncode in (1, 2), (path, done.stdout)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "out of range" in done.stderr or "not a number" in done.stderr, done.stderr
        path.write_text(text)
