"""Release notes: facts record, EN/ZH rendering, title, description lines, escaping, CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import git

from relpipe.changelog import entry as entries
from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.notes import (
    ReleaseFacts,
    description_lines,
    load_facts,
    render,
    render_title,
)
from relpipe.core.sanitize import markdown as escape
from relpipe.core.sanitize import markdown_code as code
from relpipe.pipeline import cli
from relpipe.validate import notes_check

EXAMPLE = Path(str(resources.files("relpipe.changelog.notes").joinpath("example.json")))
PINNED = "rocm/atom-dev:nightly_202610070333"
DIGEST = "sha256:2f605a3e8b459a0385f784edb0335c11892277fee650fe42044e4af39e36dd01"


def _example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return data


@pytest.fixture
def facts() -> ReleaseFacts:
    return load_facts(EXAMPLE)


def test_facts_round_trip(facts: ReleaseFacts) -> None:
    assert ReleaseFacts.from_json(facts.to_json()) == facts
    assert facts.new_image.packages == (("lmcache", "0.5.6.dev139+gf22dec28"),)
    assert facts.commits[0].pr == 2483


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"schema": 2}, "release.schema must be 1"),
        ({"surprise": 1}, r"release has unknown fields \['surprise'\]"),
        ({"config_keys": []}, "at least one config key"),
        (
            {"new_image": {"ref": PINNED, "digest": "sha256:2f605a3e"}},
            "release.new_image.digest must be matching",
        ),
        (
            {"new_image": {"ref": "rocm/atom-dev:nightly 1"}},
            "release.new_image.ref must be matching",
        ),
        (
            {"commits": [{"sha": "xyz", "subject": "s"}]},
            r"release.commits\[0\].sha must be matching",
        ),
        ({"risks": [{"kind": "note", "text": "only English"}]}, "needs text and text_zh"),
        ({"validation": {"checks": [{"id": "C3", "status": "OK"}]}}, "status must be one of"),
        ({"config_changes": [{"kind": "teleport"}]}, "unknown kind 'teleport'"),
        (
            {"config_changes": [{"kind": "image", "key": "k", "old": "a"}]},
            r"^config change image: new: missing; fix release.json$",
        ),
        (
            {
                "config_changes": [
                    {"kind": "concurrency", "key": "k", "scenario": "s", "arm": "a"}
                    | {"added": [1, True], "removed": []}
                ]
            },
            r"^config change concurrency: added\[1\]: expected an integer, got true; fix",
        ),
        ({"points_plan": [{"key": "k", "old": 1, "new": "2"}]}, r"^points plan entry: new: "),
        (
            {"config_changes": [{"kind": "key", "key": "k", "change": "moved"}]},
            "must be 'added' or 'removed'",
        ),
    ],
)
def test_bad_facts_fail_with_one_line(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(ChangelogError, match=message) as info:
        ReleaseFacts.from_json(dict(_example(), **patch))
    assert "\n" not in str(info.value)


def test_body_states_the_facts_in_both_halves(facts: ReleaseFacts) -> None:
    text = render(facts, "both")
    en, zh = text.split("\n## 中文\n")
    for half in (en, zh):
        assert f"`{PINNED}`" in half and f"`{DIGEST}`" in half and "ROCm/ATOM#2452" in half
    assert (
        "- Image: `rocm/atom-dev:nightly_202609281543` → `rocm/atom-dev:nightly_202610070333`" in en
    )
    assert "  - ATOM: `0.1.7.dev43+gaa0c5c3a1` → `0.1.7.dev60+g7fc0926c6` (17 commits)" in en
    assert "  - ATOM：`0.1.7.dev43+gaa0c5c3a1` → `0.1.7.dev60+g7fc0926c6`（17 个提交）" in zh
    assert "- Upstream fix ROCm/ATOM#2452 is not yet in the image" in en
    assert "- 上游修复 ROCm/ATOM#2452 尚未包含在该镜像中" in zh
    assert "- 评测 `gsm8k`：0.93（阈值 0.92，1319 个样本）" in zh
    assert render(facts, "en") + "\n## 中文\n\n" + render(facts, "zh") == text


def test_minimal_facts_render_notes_that_pass_the_check() -> None:
    facts = ReleaseFacts.from_json(
        {"schema": 1, "config_keys": ["dsv4-fp4-mi355x-atom"], "new_image": {"ref": PINNED}}
    )
    assert render(facts, "en") == (
        "### Summary\n\n- Config keys: `dsv4-fp4-mi355x-atom`\n"
        "- Image: `rocm/atom-dev:nightly_202610070333`\n"
    )
    assert notes_check.check(render(facts, "both"), facts) == []
    assert description_lines(facts) == ("Use engine image rocm/atom-dev:nightly_202610070333",)


def test_rendering_is_byte_identical_across_runs_and_processes(facts: ReleaseFacts) -> None:
    first = render(facts, "both")
    assert render(load_facts(EXAMPLE), "both") == first
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", "notes", "render", str(EXAMPLE)],
        capture_output=True,
        env=env,
        check=True,
    )
    assert out.stdout == first.encode()


def test_title_names_the_pinned_tag_in_both_languages(facts: ReleaseFacts) -> None:
    assert render_title(facts) == (
        "Update ATOM image to nightly_202610070333 for minimaxm3-fp4-mi355x-atom-agentic-mtp / "
        "将 minimaxm3-fp4-mi355x-atom-agentic-mtp 的 ATOM 镜像更新至 nightly_202610070333"
    )


def test_description_lines_in_house_phrasing(facts: ReleaseFacts) -> None:
    key = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
    assert description_lines(facts) == (
        "Update ATOM image from rocm/atom-dev:nightly_202609281543"
        " to rocm/atom-dev:nightly_202610070333",
        "ATOM 0.1.7.dev43+gaa0c5c3a1 -> 0.1.7.dev60+g7fc0926c6, ROCm 7.2.4",
        f"Pin rocm/atom-dev:nightly_202610070333 to {DIGEST}",
        f"{key} (agentic-coding; tp=4, kv-offloading=none, spec-decoding=mtp): "
        "ATOM_MONO_ENABLE=0 removed "
        "at concurrency 15, 20, 24, 28",
        f"{key} (agentic-coding; tp=2, kv-offloading=none, spec-decoding=mtp): concurrency 8 added",
        f"{key} (agentic-coding; tp=4, kv-offloading=dram, kv-offload-backend=lmcache, "
        "spec-decoding=mtp): "
        "LMCache version 0.5.3 → 0.5.6.dev139+gf22dec28",
        "Upstream PRs: ROCm/ATOM#2483",
        "Record LMCache 0.5.6.dev139+gf22dec28",
    )


def test_description_lines_pass_validate_perf_changelog(
    facts: ReleaseFacts, corpus_dir: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "bench"
    repo.mkdir()
    shutil.copy(corpus_dir / "perf-changelog.yaml", repo / "perf-changelog.yaml")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "history")
    # A config value with YAML and Markdown syntax must not break the entry either.
    odd = {"kind": "field", "key": facts.config_keys[0], "path": "model"}
    odd |= {"old": 'a "quoted": value', "new": "b # not a comment \\ \t tab"}
    data = _example()
    data["config_changes"].append(odd)
    lines = description_lines(ReleaseFacts.from_json(data))
    assert lines[-3].endswith('model a "quoted": value → b # not a comment \\ tab')
    entry = entries.Entry(
        config_keys=facts.config_keys,
        description=lines,
        pr_link="https://github.com/SemiAnalysisAI/InferenceX/pull/2710",
        scenario_type=("agentic-coding",),
    )
    with (repo / "perf-changelog.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\n" + entries.render(entry))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "relpipe.validate.gate.cli",
            "--base-ref",
            "HEAD",
            "--worktree",
            "--skip-config-keys",
            "--repo-url",
            "https://github.com/SemiAnalysisAI/InferenceX",
            "--pr-number",
            "2710",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


HOSTILE = "fix(mono): *bold* [link](http://x) <script>@alice #12 `tick`\nsecond line\u202e | ~~x~~"


def test_untrusted_subjects_are_one_inert_line(facts: ReleaseFacts) -> None:
    data = _example()
    data["commits"][0]["subject"] = HOSTILE
    hostile = ReleaseFacts.from_json(data)
    line = next(x for x in render(hostile, "en").splitlines() if x.startswith("- ROCm/ATOM#2483"))
    assert line == (
        # @mentions and bare #N become code spans, which GitHub neither pings nor links;
        # the bidi override shows as U+FFFD (core.sanitize).
        "- ROCm/ATOM#2483: fix(mono): \\*bold\\* \\[link\\](http://x) \\<script\\>`@alice` `#12` "
        "\\`tick\\` second line\ufffd \\| \\~\\~x\\~\\~"
    )
    assert notes_check.check(render(hostile, "both"), hostile) == []
    assert code("a`b") == "``a`b``" and code("`x") == "`` `x ``"
    assert escape("x" * 400).endswith("…") and len(escape("x" * 400)) == 300


@settings(max_examples=40, deadline=None)
@given(
    subject=st.text(
        alphabet=st.characters(codec="ascii") | st.sampled_from("修复并发镜像"),
        min_size=1,
        max_size=80,
    ).filter(lambda s: s.strip())
)
def test_any_subject_renders_notes_that_pass_the_check(subject: str) -> None:
    data = _example()
    data["commits"][0]["subject"] = subject
    facts = ReleaseFacts.from_json(data)
    assert notes_check.check(render(facts, "both"), facts) == []


def test_cli_render_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["notes", "render", str(EXAMPLE), "--title"]) == 0
    notes = tmp_path / "NOTES.md"
    notes.write_text(capsys.readouterr().out, encoding="utf-8")
    assert notes.read_text().startswith("# Update ATOM image to nightly_202610070333")
    assert cli.main(["notes", "check", str(notes), "--facts", str(EXAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "findings": []}
    assert cli.main(["notes", "render", str(EXAMPLE), "--description"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("Update ATOM image from ")
    notes.write_text(notes.read_text().replace("nightly_202610070333", "nightly_202610061452"))
    assert cli.main(["notes", "check", str(notes), "--facts", str(EXAMPLE)]) == 1
    out = capsys.readouterr().out
    assert "nightly_202610061452" in out and "nightly_202610070333" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["notes", "render", "missing.json"], "cannot read facts file missing.json"),
        (["notes", "render", "--lang", "fr", "x.json"], "invalid choice: 'fr'"),
        (["notes", "check", "NOTES.md"], "the following arguments are required: --facts"),
    ],
)
def test_cli_user_errors_are_one_line_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_rejects_binary_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "NOTES.md"
    notes.write_bytes(b"\xff\xfe not utf-8")
    assert cli.main(["notes", "check", str(notes), "--facts", str(EXAMPLE)]) == 2
    assert "is not UTF-8" in capsys.readouterr().err
