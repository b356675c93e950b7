"""Which modules the commit hook's usual run loads: its start-up is bought by the shape of its
own modules (standard library and PyYAML only, records declared with `core.record.Record`), never
by changing the process (tests/test_layering.py: nothing replaced in `sys.modules`).

The usual commit appends one house-style entry to the real changelog, with the real masters (its
config keys resolved). A module that is not listed here is a cost every commit of every user
pays: add it only with a measurement (bench/bench_hook.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import corpus_checkout, git

from relpipe.changelog.append import append
from relpipe.changelog.entry import Entry

REPO_URL = "https://github.com/SemiAnalysisAI/InferenceX"
GOOD = Entry(
    config_keys=("dsr1-fp4-mi355x-atom",),
    description=("Bump ATOM to rocm/atom-dev:nightly_202610070333",),
    pr_link=f"{REPO_URL}/pull/2500",
)
# Standard-library modules the usual commit may load beyond a bare interpreter's: `re`, argparse
# and subprocess (with what they import), and the few the hook's own modules use.
STDLIB = {
    "__future__",
    "_blake2",
    "_collections",
    "_functools",
    "_locale",
    "_operator",
    "_posixsubprocess",
    "_sre",
    "_weakrefset",
    "argparse",
    "collections",
    "collections.abc",
    "contextlib",
    "copyreg",
    "enum",
    "errno",
    "fcntl",
    "fnmatch",
    "functools",
    "gc",
    "gettext",
    "glob",
    "importlib",
    "importlib._bootstrap",
    "importlib._bootstrap_external",
    "itertools",
    "keyword",
    "locale",
    "math",
    "operator",
    "re",
    "re._casefix",
    "re._compiler",
    "re._constants",
    "re._parser",
    "reprlib",
    "select",
    "selectors",
    "signal",
    "subprocess",
    "threading",
    "types",
    "warnings",
}  # fmt: skip - one name list
# What costs a hook milliseconds and the usual commit does not need (`dataclasses` imports
# `inspect`, which imports `ast`, `dis` and `tokenize`; PyYAML loads only for a YAML 1.1 scalar).
NEVER = {"dataclasses", "inspect", "ast", "dis", "typing", "pathlib", "json", "tempfile", "yaml"}
# relpipe's packages the hook may use: the core, the changelog's entries, masters and layout, and
# the gate itself (never the pipeline, the images client, the engine or another check).
OURS = (
    "relpipe.core.",
    "relpipe.changelog.entry",
    "relpipe.changelog.configs.load",
    "relpipe.changelog.errors",
    "relpipe.changelog.layout",
    "relpipe.changelog.repository",
    "relpipe.validate.errors",
    "relpipe.validate.gate.",
)
PACKAGES = {"relpipe", "relpipe.core", "relpipe.changelog", "relpipe.changelog.configs"}
PACKAGES |= {"relpipe.validate", "relpipe.validate.gate"}
PROBE = """
import contextlib, io, sys
before = set(sys.modules)
from relpipe.validate.gate.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main([])
assert code == 0 and "ok (append: 1 appended" in out.getvalue(), out.getvalue()
print(sorted(set(sys.modules) - before))
"""


@pytest.fixture
def repo(tmp_path: Path, corpus_dir: Path) -> Path:
    """The real changelog and masters at HEAD; one house-style entry appended and staged."""
    root = corpus_checkout(tmp_path / "bench-repo", corpus_dir)
    append(root / "perf-changelog.yaml", GOOD)
    git(root, "add", "perf-changelog.yaml")
    return root


def _loaded(repo: Path, cache: Path) -> set[str]:
    """The modules the hook's run added to a fresh interpreter's (the interpreter's own, and
    what an editable install's path hook loads, are not the hook's). The first run checks the
    base and remembers it (validate.gate.basecache), as the previous commit did; the second is
    the usual commit."""
    env = {**os.environ, "RELPIPE_HOOK_CACHE": str(cache)}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", PROBE],
            cwd=repo, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    return set(eval(done.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own printed list


def test_the_usual_commit_loads_only_the_listed_modules(repo: Path, tmp_path: Path) -> None:
    loaded = _loaded(repo, tmp_path / "bases")
    ours = {m for m in loaded if m == "relpipe" or m.startswith("relpipe.")}
    others = loaded - ours
    assert others & NEVER == set()
    assert others - STDLIB == set()
    assert {m for m in ours - PACKAGES if not m.startswith(OURS)} == set()
    # The probe ran the hook: its command line, its checks and the entry grammar were loaded.
    assert {"relpipe.validate.gate.cli", "relpipe.validate.gate.hook", "subprocess"} <= loaded
    assert "relpipe.changelog.entry.grammar" in loaded


def test_the_lists_name_standard_library_modules() -> None:
    """A misspelt name in STDLIB or NEVER would allow or forbid nothing."""
    assert {m.split(".")[0] for m in STDLIB | NEVER} - {"yaml"} <= set(sys.stdlib_module_names)
