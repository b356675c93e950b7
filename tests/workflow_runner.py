"""Run the `run:` steps of a GitHub Actions workflow locally, as a runner would give them.

Enough of the runner for relpipe's own workflows, and strict about the rest: expressions are
parsed by a small evaluator of GitHub's expression language (contexts `vars`, `inputs`,
`secrets`, `env`, `matrix`, `steps`, `needs`, `runner`; operators `||`, `&&`, `==`, `!=`, `!`;
functions `fromJSON`, `toJSON`, `always`, `cancelled`, `success`, `failure`), and an expression
it cannot evaluate fails the test instead of being guessed. Jobs run in `needs` order, matrix
jobs once per `include` row, each in its own workspace; `$GITHUB_OUTPUT`, `$GITHUB_PATH`,
`$GITHUB_ENV` and `$GITHUB_STEP_SUMMARY` work as on GitHub. `uses:` steps are emulated for the
three actions the workflows use: `actions/checkout` (with `path:`, from a local folder the test
names; without `path:`, the project itself, which the test has installed), and
`actions/upload-artifact` / `actions/download-artifact` (a folder per artifact). Steps whose id
the test lists in `skip` (the install step: the test's environment already has relpipe) are not
run, and are reported as skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?[0-9]+(?:\.[0-9]+)?)"
    r"|(?P<op>\|\||&&|==|!=|!|\(|\)|,|\.)|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)


class Expression:
    """A recursive-descent evaluator of one `${{ }}` body against a context mapping."""

    def __init__(self, text: str, context: Mapping[str, Any]) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot parse expression {text!r} at {pos}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.context = context
        self.text = text

    def value(self) -> Any:
        out = self._or()
        if self.i != len(self.tokens):
            raise ValueError(f"trailing tokens in {self.text!r}")
        return out

    def _peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def _take(self, op: str) -> bool:
        if self._peek() == op and self.tokens[self.i][0] == "op":
            self.i += 1
            return True
        return False

    def _or(self) -> Any:
        left = self._and()
        while self._take("||"):
            right = self._and()
            left = left or right
        return left

    def _and(self) -> Any:
        left = self._cmp()
        while self._take("&&"):
            right = self._cmp()
            left = left and right
        return left

    def _cmp(self) -> Any:
        left = self._unary()
        if self._take("=="):
            return _loose(left) == _loose(self._unary())
        if self._take("!="):
            return _loose(left) != _loose(self._unary())
        return left

    def _unary(self) -> Any:
        if self._take("!"):
            return not self._unary()
        return self._primary()

    def _primary(self) -> Any:
        if self._take("("):
            out = self._or()
            if not self._take(")"):
                raise ValueError(f"missing ) in {self.text!r}")
            return out
        kind, tok = self.tokens[self.i]
        self.i += 1
        if kind == "str":
            return tok[1:-1].replace("''", "'")
        if kind == "num":
            return float(tok)
        if kind != "name":
            raise ValueError(f"unexpected {tok!r} in {self.text!r}")
        if self._take("("):
            args = []
            if not self._take(")"):
                args.append(self._or())
                while self._take(","):
                    args.append(self._or())
                if not self._take(")"):
                    raise ValueError(f"missing ) in {self.text!r}")
            return self._call(tok, args)
        if tok in ("true", "false"):
            return tok == "true"
        if tok == "null":
            return None
        if tok not in self.context:
            raise ValueError(f"unknown context {tok!r} in {self.text!r}")
        value: Any = self.context[tok]
        while self._take("."):
            _, key = self.tokens[self.i]
            self.i += 1
            value = value.get(key, "") if isinstance(value, Mapping) else ""
        return value

    def _call(self, name: str, args: list[Any]) -> Any:
        status = self.context.get("job", {}).get("status", "success")
        if name == "fromJSON":
            return json.loads(args[0])
        if name == "toJSON":
            return json.dumps(args[0])
        if name == "always":
            return True
        if name == "cancelled":
            return status == "cancelled"
        if name == "success":
            return status == "success"
        if name == "failure":
            return status == "failure"
        raise ValueError(f"function {name}() is not supported here")


def _loose(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def evaluate(text: Any, context: Mapping[str, Any]) -> Any:
    """A workflow value with its `${{ }}` parts evaluated (a whole-value expression keeps its
    type)."""
    if not isinstance(text, str) or "${{" not in text:
        return text
    whole = re.fullmatch(r"\s*\$\{\{(.*?)\}\}\s*", text, re.S)
    if whole:
        return Expression(whole.group(1), context).value()
    return re.sub(
        r"\$\{\{(.*?)\}\}",
        lambda m: _text(Expression(m.group(1), context).value()),
        text,
        flags=re.S,
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _key_values(path: Path) -> dict[str, str]:
    """A $GITHUB_OUTPUT / $GITHUB_ENV file: `k=v` lines and `k<<EOF ... EOF` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            key, marker = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != marker:
                body.append(lines[i])
                i += 1
            out[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


@dataclass
class StepResult:
    job: str
    name: str
    status: str  # ran | skipped | emulated
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""


@dataclass
class Run:
    """One workflow run: what every step did, job outputs and results, the artifacts."""

    steps: list[StepResult] = field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifacts: Path | None = None
    summaries: dict[str, str] = field(default_factory=dict)


def run_workflow(
    workflow: Path,
    root: Path,
    *,
    vars: Mapping[str, str],
    env: Mapping[str, str],
    checkouts: Mapping[str, Path],
    skip: tuple[str, ...] = ("install",),
    inputs: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    given: Mapping[str, Mapping[str, Any]] | None = None,
) -> Run:
    """Run every job of `workflow` under `root` (a temp folder); raises on a failed step.

    `given` names jobs that are not run, with the `result` and `outputs` the test gives them (a
    test of one job), and artifacts a test puts under `root/artifacts/NAME` are there from the
    start.
    """
    import yaml

    doc = yaml.safe_load(workflow.read_text())
    jobs: dict[str, Any] = doc["jobs"]
    run = Run(artifacts=root / "artifacts")
    run.artifacts.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    run.jobs.update({name: dict(job) for name, job in (given or {}).items()})
    done: set[str] = set(given or {})
    while len(done) < len(jobs):
        ready = [
            name for name, job in jobs.items() if name not in done and set(_needs(job)) <= done
        ]
        if not ready:
            raise ValueError(f"jobs with unmet or cyclic needs: {set(jobs) - done}")
        for name in ready:
            _run_job(
                name,
                jobs[name],
                doc,
                root,
                run,
                vars,
                env,
                checkouts,
                skip,
                inputs or {},
                secrets or {},
            )
            done.add(name)
    return run


def _needs(job: Mapping[str, Any]) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def _run_job(
    name: str,
    job: Mapping[str, Any],
    doc: Mapping[str, Any],
    root: Path,
    run: Run,
    vars: Mapping[str, str],
    env: Mapping[str, str],
    checkouts: Mapping[str, Path],
    skip: tuple[str, ...],
    inputs: Mapping[str, str],
    secrets: Mapping[str, str],
) -> None:
    needs = {n: run.jobs[n] for n in _needs(job)}
    base = {
        "vars": dict(vars),
        "inputs": dict(inputs),
        "secrets": dict(secrets),
        "needs": needs,
        "job": {"status": "success"},
        "runner": {"temp": str(root / "runner-temp")},
    }
    if "if" in job and not evaluate(_condition(job["if"]), base):
        run.jobs[name] = {"result": "skipped", "outputs": {}}
        return
    strategy = (job.get("strategy") or {}).get("matrix")
    rows = [{}]
    if strategy is not None:
        matrix = evaluate(strategy, base)
        rows = list(matrix.get("include") or [])
    result = "success"
    outputs: dict[str, str] = {}
    for index, row in enumerate(rows):
        workspace = root / f"{name}-{index}"
        workspace.mkdir(parents=True)
        temp = root / f"{name}-{index}-temp"
        temp.mkdir()
        context = {**base, "matrix": row, "steps": {}, "env": {}}
        wf_env = {k: _text(evaluate(v, context)) for k, v in (doc.get("env") or {}).items()}
        context["env"] = wf_env
        job_env = {
            **wf_env,
            **{k: _text(evaluate(v, context)) for k, v in (job.get("env") or {}).items()},
        }
        context["env"] = job_env
        extra_path: list[str] = []
        for i, step in enumerate(job["steps"]):
            label = step.get("name") or step.get("id") or step.get("uses") or f"step {i}"
            if "if" in step and not evaluate(_condition(step["if"]), context):
                run.steps.append(StepResult(name, label, "skipped"))
                continue
            if step.get("id") in skip:
                run.steps.append(StepResult(name, label, "skipped"))
                continue
            if "uses" in step:
                _emulate(step, context, workspace, run, checkouts)
                run.steps.append(StepResult(name, label, "emulated"))
                continue
            where = _Where(job=name, row=index, workspace=workspace, temp=temp, step=i)
            extra_path = _run_script(step, label, where, context, job_env, env, extra_path, run)
        for key, value in (job.get("outputs") or {}).items():
            outputs[key] = _text(evaluate(value, context))
    run.jobs[name] = {"result": result, "outputs": outputs}


@dataclass(frozen=True, kw_only=True)
class _Where:
    """Where a step runs: its job and matrix row, folders, and index in the job."""

    job: str
    row: int
    workspace: Path
    temp: Path
    step: int


def _run_script(
    step: Mapping[str, Any],
    label: str,
    where: _Where,
    context: dict[str, Any],
    job_env: dict[str, str],
    env: Mapping[str, str],
    extra_path: list[str],
    run: Run,
) -> list[str]:
    """Run one `run:` step as the runner does (bash -e -o pipefail, GITHUB_* files); record its
    outputs in `context`, its GITHUB_ENV in `job_env`; return the PATH additions so far."""
    name = where.job
    step_env = {k: _text(evaluate(v, context)) for k, v in (step.get("env") or {}).items()}
    script = step["run"]
    if "${{" in script:
        raise ValueError(f"{name}/{label}: `${{{{ }}}}` inside a run script; use env:")
    files = {k: where.temp / f"{k}-{where.step}" for k in ("output", "path", "env")}
    summary = where.temp / "summary.md"
    proc_env = {
        **env,
        **job_env,
        **step_env,
        "GITHUB_OUTPUT": str(files["output"]),
        "GITHUB_PATH": str(files["path"]),
        "GITHUB_ENV": str(files["env"]),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(where.workspace),
        "RUNNER_TEMP": str(where.temp),
        "CI": "true",
    }
    proc_env["PATH"] = os.pathsep.join([*extra_path, proc_env.get("PATH", "")])
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=where.workspace,
        env=proc_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    run.steps.append(StepResult(name, label, "ran", proc.returncode, proc.stdout, proc.stderr))
    if proc.returncode != 0:
        raise AssertionError(
            f"{name}[{where.row}] step {label!r} exited {proc.returncode}:\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    if step.get("id"):
        context["steps"][step["id"]] = {
            "outputs": _key_values(files["output"]),
            "outcome": "success",
        }
    if files["path"].exists():
        extra_path = [*files["path"].read_text().split(), *extra_path]
    job_env.update(_key_values(files["env"]))
    if summary.exists():
        run.summaries[f"{name}-{where.row}"] = summary.read_text()
    return extra_path


def _condition(value: Any) -> str:
    text = str(value)
    return text if "${{" in text else "${{ " + text + " }}"


def _emulate(
    step: Mapping[str, Any],
    context: Mapping[str, Any],
    workspace: Path,
    run: Run,
    checkouts: Mapping[str, Path],
) -> None:
    action = str(step["uses"]).split("@")[0]
    with_ = {k: _text(evaluate(v, context)) for k, v in (step.get("with") or {}).items()}
    assert run.artifacts is not None
    if action == "actions/checkout":
        path = with_.get("path")
        if path is None:
            return  # the project itself: the test runs its installed copy
        source = checkouts[path]
        shutil.copytree(source, workspace / path, symlinks=True)
    elif action == "actions/upload-artifact":
        source = workspace / with_["path"]
        if not source.exists():
            if with_.get("if-no-files-found", "warn") == "error":
                raise AssertionError(f"artifact {with_['name']}: {source} does not exist")
            return
        shutil.copytree(source, run.artifacts / with_["name"])
    elif action == "actions/download-artifact":
        dest = workspace / with_.get("path", ".")
        if "name" in with_:
            shutil.copytree(run.artifacts / with_["name"], dest, dirs_exist_ok=True)
        else:
            for artifact in sorted(run.artifacts.iterdir()):
                shutil.copytree(artifact, dest / artifact.name)
    else:
        raise ValueError(f"action {action} is not emulated; extend tests/workflow_runner.py")
