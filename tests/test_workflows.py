"""What the GitHub workflows (and the workflow examples in docs/) promise about secrets, pins and
scripts (issue 27.10).

- Registry secrets are set on the steps that talk to the registry only, and the PR token on the
  step that pushes and opens the PR: never workflow- or job-wide, never on a step that installs
  packages, never to an action but a checkout's `token` (which, not persisted, only fetches).
- Every third-party action is pinned by a full commit SHA with its tag in a comment, and the pair
  is one of VERIFIED: SHAs read from the actions' own repositories (`git rev-parse TAG^{commit}`
  in a mirror of github.com/actions/checkout, upload-artifact and download-artifact).
- Every checkout sets `persist-credentials: false`, so the job token is not left in .git/config
  for later steps.
- No `${{ }}` expression inside a `run:` script: inputs reach scripts through `env:`.
`nox -s lint` checks the same files against GitHub's schema and with actionlint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# action -> {commit SHA: tag}, each read from the action's own repository.
VERIFIED = {
    "actions/checkout": {"fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09": "v5.1.0"},
    "actions/upload-artifact": {"b7c566a772e6b6bfb58ed0dc250532a479d7789f": "v6.0.0"},
    "actions/download-artifact": {"37930b1c2abaa49bbe596cd826c3c89aef350131": "v7.0.0"},
}
_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$")
_FENCE = re.compile(r"^```ya?ml\n(.*?)^```", re.S | re.M)
_INSTALLS = re.compile(r"\b(?:pip|pip3|uv|npm|apt-get|apt)\b.*\binstall\b")


def _documents() -> Iterator[tuple[str, str, Any]]:
    """(where, text, parsed) of every workflow and every YAML example in the docs."""
    for path in WORKFLOWS:
        text = path.read_text()
        yield str(path.relative_to(ROOT)), text, yaml.safe_load(text)
    for path in DOCS:
        for n, block in enumerate(_FENCE.findall(path.read_text())):
            parsed = yaml.safe_load(block)
            if isinstance(parsed, list) and any(isinstance(s, dict) and "run" in s for s in parsed):
                yield (
                    f"{path.relative_to(ROOT)} example {n + 1}",
                    block,
                    {"jobs": {"x": {"steps": parsed}}},
                )


def _steps(doc: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for job_name, job in (doc.get("jobs") or {}).items():
        for step in job.get("steps") or []:
            yield job_name, job, step


PER_DOCUMENT = pytest.mark.parametrize(
    ("where", "text", "doc"), [pytest.param(*d, id=d[0]) for d in _documents()]
)


def test_the_documents_are_found() -> None:
    names = [where for where, _, _ in _documents()]
    assert ".github/workflows/nightly-qualification.yml" in names
    assert any(name.startswith("docs/review.md example") for name in names)


@PER_DOCUMENT
def test_actions_are_pinned_to_verified_shas_with_their_tag(
    where: str, text: str, doc: Any
) -> None:
    for line in text.splitlines():
        m = _USES.match(line)
        if not m or m.group(1).startswith(("./", "docker://")):
            continue
        action, _, ref = m.group(1).partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{where}: {action}@{ref} is not pinned by SHA"
        tag = VERIFIED.get(action, {}).get(ref)
        assert tag is not None, f"{where}: {action}@{ref} is not a verified SHA"
        assert m.group(2).strip() == f"# {tag}", (
            f"{where}: {action}@{ref} needs the comment # {tag}"
        )


@PER_DOCUMENT
def test_checkouts_persist_no_credentials(where: str, text: str, doc: Any) -> None:
    for job, _, step in _steps(doc):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert (step.get("with") or {}).get("persist-credentials") is False, f"{where}/{job}"


@PER_DOCUMENT
def test_no_expression_inside_a_run_script(where: str, text: str, doc: Any) -> None:
    for job, _, step in _steps(doc):
        assert "${{" not in str(step.get("run", "")), f"{where}/{job}: {step.get('name', step)}"


@PER_DOCUMENT
def test_secrets_reach_only_the_steps_that_use_them(where: str, text: str, doc: Any) -> None:
    assert "secrets." not in str(doc.get("env") or {}), f"{where}: a workflow-wide secret"
    for job_name, job, step in _steps(doc):
        assert "secrets." not in str(job.get("env") or {}), f"{where}/{job_name}: a job-wide secret"
        if "secrets." not in str(step.get("env") or {}) + str(step.get("with") or {}):
            continue
        label = f"{where}/{job_name}/{step.get('name', step.get('uses'))}"
        if "uses" in step:
            # One exception: a checkout's `token` fetches a private repository and is not kept.
            given = {k for k, v in (step.get("with") or {}).items() if "secrets." in str(v)}
            assert str(step["uses"]).startswith("actions/checkout@") and given == {"token"}, label
            assert step["with"].get("persist-credentials") is False, label
            continue
        run = str(step.get("run", ""))
        assert not _INSTALLS.search(run), f"{label}: a secret next to an install"
        # The registry secrets go to relpipe commands that pull or pin images; the PR token to
        # the command that pushes and opens the PR; nothing else.
        if "RELPIPE_REGISTRY" in str(step.get("env")):
            assert re.search(r"\brelpipe (?:nightly|qualify|release)\b", run), label
        if "RELPIPE_PR_TOKEN" in str(step.get("env")):
            assert re.search(r"\brelpipe pr\b", run), label


def test_the_nightly_registry_secrets_are_on_exactly_the_pulling_steps() -> None:
    doc = yaml.safe_load((ROOT / ".github/workflows/nightly-qualification.yml").read_text())
    with_secret = sorted(
        (job, step.get("name"))
        for job, _, step in _steps(doc)
        if "secrets.RELPIPE_REGISTRY_PASSWORD" in str(step.get("env") or {})
    )
    assert with_secret == [
        ("plan", "Pin the newest nightly and plan the shards"),
        ("pull-request", "Release the qualified image in the benchmark checkout"),
        ("qualify", "Qualify the shard"),
    ]
    with_token = [
        (job, step.get("name") or step.get("uses"))
        for job, _, step in _steps(doc)
        if "secrets.RELPIPE_PR_TOKEN" in str(step.get("env") or {})
    ]
    assert with_token == [("pull-request", "Open or update the bump pull request")]
