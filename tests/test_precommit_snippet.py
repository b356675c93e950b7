"""The `.pre-commit-config.yaml` a benchmark repository copies (`examples/pre-commit-config.yaml`,
shown in the README) through the real pre-commit client, in a git copy of a real InferenceX tree
of each layout: every relpipe hook fires on a config bump and passes it with its changelog entry,
and the same bump without the entry fails. Only `repo:`/`rev:` are replaced (a snapshot of this
checkout as the hook repository); every other line runs as the README shows it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from corpus import inferencex_dir
from precommit_support import ROOT, hook_repo, pre_commit
from support import git

SNIPPET = ROOT / "examples" / "pre-commit-config.yaml"
ORIGIN = "https://github.com/SemiAnalysisAI/InferenceX"
# Each layout InferenceX has had: a tree of the corpus, where its changelog and masters are.
LAYOUTS = {
    "2026-03 .github/configs": ("eras/2026-03-30", "", ".github/configs"),
    "2026-08 configs": ("tree", "", "configs"),
    "2026-10 inferencex-e2e": ("tree-2026-10", "inferencex-e2e/", "inferencex-e2e/configs"),
}
HOOK_NAMES = (
    "validate perf-changelog.yaml",
    "relpipe review (InferenceX review checklist, fast checks)",
    "relpipe review (benchmark-affecting change has a perf-changelog entry)",
)
# pre-commit's result line: `NAME.....Passed`, `NAME...(no files to check)Skipped`
_RESULT = re.compile(r"^(.+?)\.{3,}(?:\(no files to check\))?(Passed|Failed|Skipped)$", re.M)
_ATOM_IMAGE = re.compile(r"^(\S+):\n  image: (rocm/atom\S*)$", re.M)


def test_the_readme_shows_the_snippet_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"```yaml\n{SNIPPET.read_text()}```" in readme
    hooks = re.findall(r"^- id: (\S+)$", (ROOT / ".pre-commit-hooks.yaml").read_text(), re.M)
    assert re.findall(r"^      - id: (\S+)$", SNIPPET.read_text(), re.M) == hooks  # every hook


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The snippet pointing at a snapshot of this checkout, and one PRE_COMMIT_HOME for all
    layouts (pre-commit builds the hook's environment once)."""
    tmp = tmp_path_factory.mktemp("hook")
    repo, sha = hook_repo(tmp)
    text = SNIPPET.read_text()
    config, n = re.subn(
        r"^  - repo: \S+\n    rev: \S+$", f"  - repo: {repo}\n    rev: {sha}", text, flags=re.M
    )
    assert n == 1
    return config, tmp / "pre-commit-home"


def _bench(tree: Path, tmp: Path, config: str) -> Path:
    bench = tmp / "bench"
    shutil.copytree(tree, bench, symlinks=True)
    (bench / ".pre-commit-config.yaml").write_text(config)
    git(bench, "init", "-q", "-b", "main")
    git(bench, "remote", "add", "origin", ORIGIN)
    git(bench, "add", "-A")
    git(bench, "commit", "-q", "-m", "base")
    return bench


def _bump(master: Path) -> str:
    """Move the first ATOM key of `master` to another image; the key."""
    text = master.read_text()
    match = _ATOM_IMAGE.search(text)
    assert match, master
    master.write_text(text[: match.end(2)] + "-next" + text[match.end(2) :])
    return match.group(1)


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_hook_of_the_snippet_runs_in_every_layout(
    layout: str, hook: tuple[str, Path], tmp_path: Path
) -> None:
    tree, prefix, masters = LAYOUTS[layout]
    config, home = hook
    bench = _bench(inferencex_dir() / tree, tmp_path, config)
    key = _bump(bench / masters / "amd-master.yaml")
    git(bench, "add", "-A")
    missing = pre_commit(bench, home, "relpipe-changelog-required")
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert "Failed" in missing.stdout and key in missing.stdout

    changelog = bench / prefix / "perf-changelog.yaml"
    with changelog.open("a") as handle:
        handle.write(
            f'\n- config-keys:\n    - {key}\n  description:\n    - "Bump ATOM"\n'
            f"  pr-link: {ORIGIN}/pull/2750\n"
        )
    git(bench, "add", "-A")
    done = pre_commit(bench, home)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = dict(_RESULT.findall(done.stdout))
    assert ran == dict.fromkeys(HOOK_NAMES, "Passed")  # each fired (not skipped) and passed
