"""JSON output escapes what a reader cannot see (issue 27.7: `relpipe diff --json` printed raw C1
controls and U+202E, `ensure_ascii=False`).

`core.sanitize.json_text` is the one JSON sink: a property test holds that it parses back to the
same value and that no C0/C1 control, bidi or zero-width character or lone surrogate appears raw
in it. Then every command that prints JSON built from untrusted text is run on such text: the
engine diff (commit subjects and paths of a real git repository), the notes check (a facts file)
and the changelog hook (an entry's description). A source rule keeps `json.dumps(...,
ensure_ascii=False)` out of every sink but the record key serialisation.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from relpipe.core import sanitize
from tests.support import commit_files, git

ROOT = Path(__file__).resolve().parents[2]
# Raw in output: C0 but newline (indentation), DEL, C1, bidi and zero-width marks, separators,
# the BOM, lone surrogates.
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ud800-\udfff]"
)
HOSTILE = "\x1b[2J\x9b31m\x9d8;;http://evil\x07\u202egnp.exe\u200b\u2066\ufeff\x85\udcff"
TEXT = st.text(
    alphabet=st.characters(codec=None, categories=None) | st.sampled_from(list(HOSTILE)),
    max_size=12,
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=VALUES, indent=st.sampled_from([None, 2]), sort_keys=st.booleans())
def test_json_text_loses_nothing_and_shows_no_control(
    value: Any, indent: int | None, sort_keys: bool
) -> None:
    out = sanitize.json_text(value, indent=indent, sort_keys=sort_keys)
    assert RAW.search(out) is None, ascii(out)
    assert json.loads(out) == value
    out.encode("utf-8")  # printable: no lone surrogate left to crash the terminal's encoder


def _raw_free(stdout: str) -> Any:
    assert RAW.search(stdout) is None, ascii(stdout[:400])
    return json.loads(stdout)


def _relpipe(
    *args: str, cwd: Path, module: str = "relpipe.pipeline"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=120,
    )


def test_diff_json_escapes_hostile_commit_subjects_and_paths(tmp_path: Path) -> None:
    repo = tmp_path / "engine"
    old = commit_files(repo, {"atom/model_ops/linear.py": "x = 1\n"}, "base")
    commit_files(
        repo,
        {f"atom/model_ops/{HOSTILE[:12]}norm.py": "y = 2\n", "atom/model_ops/linear.py": "x = 2\n"},
        f"quant: {HOSTILE} (#2479)",
    )
    new = git(repo, "rev-parse", "HEAD").strip()
    out = _relpipe("diff", old, new, "--repo", str(repo), "--json", cwd=tmp_path)
    assert out.returncode in (0, 1), out.stderr
    doc = _raw_free(out.stdout)
    assert HOSTILE in json.dumps(doc, ensure_ascii=False) or "\u202e" in json.dumps(
        doc, ensure_ascii=False
    )  # the subject is there, escaped, not dropped


def test_notes_check_and_hook_json_escape_hostile_text(tmp_path: Path) -> None:
    example = json.loads((ROOT / "changelog" / "notes" / "example.json").read_text())
    example["new_image"]["ref"] = "rocm/atom-dev:nightly_1" + HOSTILE
    (tmp_path / "facts.json").write_text(json.dumps(example))
    (tmp_path / "notes.md").write_text(f"# notes {HOSTILE}\n", errors="surrogateescape")
    notes = _relpipe("notes", "check", "notes.md", "--facts", "facts.json", "--json", cwd=tmp_path)
    assert notes.returncode in (1, 2), notes.stderr
    if notes.returncode == 1:
        assert _raw_free(notes.stdout)["ok"] is False
    repo = tmp_path / "bench"
    commit_files(repo, {"perf-changelog.yaml": ""}, "empty changelog")
    entry = (
        "- config-keys:\n    - k\n  description:\n"
        f'    - "{HOSTILE[:-1]}"\n  pr-link: https://github.com/o/r/pull/1\n'
    )
    (repo / "perf-changelog.yaml").write_text(entry)
    hook = _relpipe(
        "--base-ref", "HEAD", "--worktree", "--json", cwd=repo, module="relpipe.validate.gate.cli"
    )
    assert hook.returncode in (0, 1), hook.stderr
    assert "findings" in _raw_free(hook.stdout)


def test_no_sink_writes_json_with_raw_text_but_the_one_escaper() -> None:
    """`json.dumps(..., ensure_ascii=False)` only in core/sanitize.py and the record key hash."""
    allowed = {("core/sanitize.py", "json_text"), ("pipeline/runrecord.py", "canonical_json")}
    found = set()
    for layer in ("core", "pipeline", "validate", "changelog", "images"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for func in ast.walk(tree):
                if not isinstance(func, ast.FunctionDef):
                    continue
                for node in ast.walk(func):
                    if isinstance(node, ast.keyword) and node.arg == "ensure_ascii":
                        found.add((str(path.relative_to(ROOT)), func.name))
    assert found <= allowed, found - allowed
