"""`changelog.repo`: the three InferenceX layouts, detected by their files, on copies of the real
trees; the `.relpipe.toml` override; and bad checkouts (mixed layouts, none, recipes that leave
the repository, unknown master fields) refused in one line with nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import git

from relpipe.changelog import repo as benchrepo
from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.errors import ChangelogError
from relpipe.pipeline.cli import main as cli
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.workspace import Workspace

KEY_10 = "minimaxm3-fp4-mi355x-atom-agentic-mtp"
RECIPE_10 = (
    "inferencex-e2e/benchmarks/single_node/srt-slurm-recipes/minimaxm3/atom/mi355x-fp4-mtp/"
    "agentic.yaml"
)


def _git_copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "copy")
    return dest


@pytest.fixture(scope="module")
def tree10(inferencex_tree_2026_10: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _git_copy(inferencex_tree_2026_10, tmp_path_factory.mktemp("ix10") / "InferenceX")


def _pre_2026_07(tree: Path, dest: Path) -> Path:
    """The 2026-08 tree as it was laid out before 2026-07-02: masters in .github/configs/."""
    dest.mkdir(parents=True)
    for name in ("perf-changelog.yaml", "MODELS.md", "golden_al_distribution", "benchmarks"):
        src = tree / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    shutil.copytree(tree / "configs", dest / ".github" / "configs")
    return dest


def test_each_layout_is_detected_by_its_files(
    inferencex_tree: Path, inferencex_tree_2026_10: Path, tmp_path: Path
) -> None:
    old = _pre_2026_07(inferencex_tree, tmp_path / "old")
    got = {
        name: benchrepo.open_repo(path)
        for name, path in (
            ("2026-08", inferencex_tree),
            ("2026-10", inferencex_tree_2026_10),
            ("pre-2026-07", old),
        )
    }
    assert {name: r.layout.name for name, r in got.items()} == {
        "2026-08": "2026-08",
        "2026-10": "2026-10",
        "pre-2026-07": "pre-2026-07",
    }
    ten = got["2026-10"]
    assert [p.name for p in ten.masters()] == ["amd-master.yaml"]
    for path in (
        ten.layout.runners,
        ten.layout.changelog,
        ten.layout.thresholds,
        ten.layout.validator,
        ten.layout.models,
        ten.layout.checklist,
        ten.layout.golden + "/minimaxm3_eagle3_gqa.yaml",
        ten.layout.waivers + "/3088.md",
    ):
        assert (inferencex_tree_2026_10 / path).exists(), path
    assert ten.codeowners() == ".github/CODEOWNERS"
    old_masters = [p.name for p in got["pre-2026-07"].masters()]
    assert old_masters == ["amd-master.yaml", "nvidia-master.yaml"]
    # `--repo inferencex-e2e/` is the same checkout.
    inner = benchrepo.open_repo(inferencex_tree_2026_10 / "inferencex-e2e")
    assert inner.root == inferencex_tree_2026_10.resolve()


def test_key_files_resolve_in_the_2026_10_schema(inferencex_tree_2026_10: Path) -> None:
    layout = benchrepo.open_repo(inferencex_tree_2026_10).layout
    cfg = {"multinode": False, "srt-recipe-dir": "minimaxm3/atom/mi355x-fp4-mtp"}
    assert benchrepo.srt_recipe(layout, cfg, "agentic.yaml") == (RECIPE_10, None)
    full = RECIPE_10.removeprefix("inferencex-e2e/")
    assert benchrepo.srt_recipe(layout, {}, f"{full}:override_tp2_c4") == (
        RECIPE_10,
        "override_tp2_c4",
    )
    assert benchrepo.cluster_hook(layout, "cluster:mi355x-amds") == (
        "inferencex-e2e/runners/srt-slurm/hooks/mi355x-amds/setup.sh"
    )
    assert benchrepo.outside(benchrepo.srt_recipe(layout, cfg, "../" * 9 + "x.yaml")[0])


def test_the_override_file_names_the_layout_and_its_paths(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "amd-master.yaml").write_text("{}\n")
    (tmp_path / ".relpipe.toml").write_text(
        '[tool.relpipe]\nlayout = "2026-08"\nchangelog = "changes/perf.yaml"\n'
        'extra-fields = ["my-field"]\n'
    )
    layout = benchrepo.open_repo(tmp_path).layout
    assert (layout.name, layout.changelog, layout.masters, layout.extra_fields) == (
        "2026-08",
        "changes/perf.yaml",
        "configs",
        ("my-field",),
    )
    (tmp_path / ".relpipe.toml").write_text('[tool.relpipe]\nmasters-dir = "x"\n')
    with pytest.raises(ChangelogError, match=r"unknown \[tool.relpipe\] field\(s\) masters-dir"):
        benchrepo.open_repo(tmp_path)


def test_a_checkout_mixing_layouts_or_matching_none_is_one_line(
    tree10: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(tree10, mixed, symlinks=True)
    shutil.copytree(mixed / "inferencex-e2e" / "configs", mixed / "configs")
    for argv in (
        ["review", "--repo", str(mixed), "--config-key", KEY_10],
        ["review", "--repo", str(tmp_path), "--all-keys"],
    ):
        assert cli(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "Traceback" not in err
    with pytest.raises(ChangelogError) as mixed_err:
        benchrepo.open_repo(mixed)
    assert "mixes layouts (configs/*-master.yaml and inferencex-e2e/configs/*-master.yaml)" in str(
        mixed_err.value
    )
    with pytest.raises(ChangelogError) as none_err:
        benchrepo.open_repo(tmp_path)
    assert "looked for configs/*-master.yaml, inferencex-e2e/configs/*-master.yaml, " in str(
        none_err.value
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "srt-recipe: agentic.yaml }\n      - { tp: 2, kv-offloading: none, conc-list: [1, 2]",
            "srt-recipe: ../../../../../../../../../../etc/passwd }\n"
            "      - { tp: 2, kv-offloading: none, conc-list: [1, 2]",
            ":776: srt-recipe ../../../../../../../../../../etc/passwd of "
            f"{KEY_10} leaves the repository",
        ),
        (
            "srt-recipe: agentic.yaml }\n      - { tp: 2, kv-offloading: none, conc-list: [1, 2]",
            "srt-recipe: gone.yaml }\n      - { tp: 2, kv-offloading: none, conc-list: [1, 2]",
            f":776: srt-recipe gone.yaml of {KEY_10}: inferencex-e2e/benchmarks/single_node/"
            "srt-slurm-recipes/minimaxm3/atom/mi355x-fp4-mtp/gone.yaml does not exist",
        ),
        (
            "  srt-recipe-dir: minimaxm3/atom/mi355x-fp4-mtp\n",
            "  srt-recipe-dir: minimaxm3/atom/mi355x-fp4-mtp\n  warmup-policy: long\n",
            f":770: unknown master field 'warmup-policy' of {KEY_10}",
        ),
    ],
)
def test_bad_masters_are_one_line_and_nothing_is_written(
    tree10: Path,
    tmp_path: Path,
    old: str,
    new: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(tree10, repo, symlinks=True)
    master = repo / "inferencex-e2e" / "configs" / "amd-master.yaml"
    text = master.read_text()
    assert old in text
    master.write_text(text.replace(old, new, 1))
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    with pytest.raises(PipelineError) as exc:
        Workspace(repo).config_key(KEY_10, 16)
    assert str(exc.value).startswith("inferencex-e2e/configs/amd-master.yaml" + message)
    assert "\n" not in str(exc.value)
    image = "rocm/atom-dev:nightly_202610070333"
    argv = ["release", "--repo", str(repo), "--config-key", KEY_10, "--image", image]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(exc.value) in err and "Traceback" not in err
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert after == before  # not even a lock file


@pytest.mark.parametrize(
    ("tree", "master", "key"),
    [
        ("tree", "configs/amd-master.yaml", "dsv4-fp4-mi355x-atom-agentic-mtp"),
        ("tree-2026-10", "inferencex-e2e/configs/amd-master.yaml", KEY_10),  # srt-recipe-dir
        (  # the same key in the full-path `srt-recipe:` form of the same month
            "tree-2026-10",
            "_versions/inferencex-e2e/configs/amd-master.yaml@010af3bb",
            KEY_10,
        ),
    ],
)
def test_a_release_edit_is_one_line_in_every_schema(
    corpus_dir: Path, tree: str, master: str, key: str
) -> None:
    path = corpus_dir / tree / master
    old = path.read_text(encoding="utf-8")
    image = "rocm/atom-dev:nightly_209912310000"
    new, _ = edit_image(old, key, image, master)
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1  # the image line; every other byte as it was
    assert after[changed[0]] == f"  image: {image}\n"
