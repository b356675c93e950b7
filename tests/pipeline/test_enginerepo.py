"""Engine histories copied out of images (pipeline.enginerepo): hostile `.git` folders run nothing.

The container runtime is replaced at its boundary (`extract_path`) by a copy of a `.git` crafted on
disk, the way an untrusted image would ship it: config naming programs (fsmonitor, pager, hooks
path, gpg, ssh), executable hooks for every event a fetch or ref update fires, and alternates
pointing at a host repository. Copying out of real images is tested with dockerd elsewhere.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from support import commit_files, git

from relpipe.pipeline import containers, enginerepo
from relpipe.pipeline.commands import diff as diff_cmd
from relpipe.validate.errors import ValidateError
from relpipe.validate.precision import gitio

HOOKS = (
    "reference-transaction",
    "post-update",
    "pre-auto-gc",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "fsmonitor-watchman",
)


class FakeRuntime:
    """`images.runtime.Runtime.extract_path` over folders on disk: ref -> a crafted `.git`."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources
        self.requested: list[tuple[str, str]] = []

    def extract_path(self, ref: str, path_in_image: str, dest: Path) -> Path:
        self.requested.append((ref, path_in_image))
        shutil.copytree(self.sources[ref], dest, symlinks=True)
        return dest


def _hostile(git_dir: Path, markers: Path, name: str) -> None:
    """Arm a copied `.git` with every program-running setting and hook we know of."""
    markers.mkdir(exist_ok=True)
    script = markers.parent / f"{name}-payload.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" > "{markers}/{name}-$$"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    hooks_dir = markers.parent / f"{name}-hooks"
    hooks_dir.mkdir()
    for hooks in (git_dir / "hooks", hooks_dir):
        hooks.mkdir(exist_ok=True)
        for hook in HOOKS:
            shutil.copy(script, hooks / hook)
            (hooks / hook).chmod(0o755)
    with open(git_dir / "config", "a") as config:
        config.write(
            f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n\thooksPath = {hooks_dir}\n"
            f"\tsshCommand = {script}\n\taskPass = {script}\n"
            f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {script}\n"
            f"[diff]\n\texternal = {script}\n[uploadpack]\n\tpackObjectsHook = {script}\n"
            f"[fetch]\n\tfsckObjects = false\n[gc]\n\tauto = 1\n"
            f"[alias]\n\tfetch = !{script}\n\trev-parse = !{script}\n"
        )
    (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (git_dir / "objects" / "info" / "alternates").write_text("/etc\n")


@pytest.fixture
def images(tmp_path: Path) -> tuple[FakeRuntime, dict[str, str], Path]:
    """Two engine histories on release branches (not ancestors), each copied out and armed."""
    repo = tmp_path / "engine"
    commit_files(repo, {"atom/model_ops/linear.py": "y = x\n"}, "base (#1)")
    git(repo, "branch", "release-old")
    new = commit_files(repo, {"atom/model_ops/layernorm.py": "v = x * x\n"}, "fix(norm): fp32 (#2)")
    git(repo, "checkout", "-q", "release-old")
    old = commit_files(repo, {"README.md": "docs\n"}, "docs (#3)")
    markers = tmp_path / "markers"
    sources = {}
    for ref in ("old", "new"):
        git(repo, "checkout", "-q", "release-old" if ref == "old" else "main")
        sources[ref] = tmp_path / f"image-{ref}" / ".git"
        shutil.copytree(repo / ".git", sources[ref])
        _hostile(sources[ref], markers, ref)
    return FakeRuntime(sources), {"old": old, "new": new}, markers


def test_a_pair_is_sanitised_and_joined_without_running_anything(
    images: tuple[FakeRuntime, dict[str, str], Path], tmp_path: Path
) -> None:
    runtime, heads, markers = images
    work = tmp_path / "work"
    work.mkdir()
    repo = enginerepo.extract(runtime, "new", work, old_ref="old")
    assert runtime.requested == [("new", "/app/ATOM/.git"), ("old", "/app/ATOM/.git")]
    shas = gitio.parse_shas(
        gitio.run(repo, *gitio.rev_parse_args([enginerepo.OLD_REF, enginerepo.NEW_REF])), 2
    )
    assert shas == [heads["old"], heads["new"]]
    for git_dir in (work / "new.git", work / "old.git"):
        config = (git_dir / "config").read_text()
        assert "fsmonitor" not in config and "hooksPath" not in config and "alias" not in config
        assert not (git_dir / "hooks").exists()
        assert not (git_dir / "objects" / "info" / "alternates").exists()
    # The joined repository is what the precision stage diffs: both sides of the branches.
    report = containers.precision_report(repo, None, "image:new")
    assert {c.sha for c in report.commits} >= {heads["new"]}
    assert [f.path for f in report.files if f.verdict == "relevant"] == [
        "atom/model_ops/layernorm.py"
    ]
    assert sorted(p.name for p in markers.iterdir()) == []


def test_diff_image_repository_goes_through_the_same_sanitising(
    images: tuple[FakeRuntime, dict[str, str], Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from relpipe.images import runtime as images_runtime

    runtime, heads, markers = images
    ref = "127.0.0.1:5000/rocm/atom-dev@sha256:" + "ab" * 32
    runtime.sources[ref] = runtime.sources["new"]
    monkeypatch.setattr(images_runtime.Runtime, "from_env", classmethod(lambda cls: runtime))
    code = diff_cmd.main(
        ["HEAD~1", "HEAD", "--repo", f"image:{ref}", "--image-path", "/app/aiter-test/", "--json"]
    )
    assert code == 0
    assert runtime.requested == [(ref, "/app/aiter-test/.git")]
    report = json.loads(capsys.readouterr().out)
    assert report["new"] == heads["new"]
    assert sorted(p.name for p in markers.iterdir()) == []


def test_a_copy_without_history_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.git"
    empty.mkdir()
    with pytest.raises(ValidateError, match="not a git directory"):
        enginerepo.prepare(empty)


@pytest.mark.parametrize(
    ("ref", "rules", "expected"),
    [
        ("rocm/atom-dev:nightly_202610070333", None, (None, "/app/ATOM")),
        ("rocm/atom-dev:nightly_202610070333", "aiter", ("aiter", "/app/ATOM")),
        ("vllm/vllm-openai-rocm:nightly-" + "a" * 40, None, ("vllm", "/vllm-workspace")),
        (
            "lmsysorg/sglang-rocm:v0.5.20-rocm720-mi35x-20260927",
            None,
            ("sglang", "/sgl-workspace/sglang"),
        ),
        ("lmsysorg/sglang:v0.5.16-rocm720-mi35x", "my.yaml", ("my.yaml", "/sgl-workspace/sglang")),
        ("127.0.0.1:5000/relpipe-test/atom-dev:nightly_209901010000", None, (None, "/app/ATOM")),
    ],
)
def test_the_engine_source_and_rules_follow_the_image_family(
    ref: str, rules: str | None, expected: tuple[str | None, str]
) -> None:
    assert enginerepo.source_of(ref, rules) == expected
