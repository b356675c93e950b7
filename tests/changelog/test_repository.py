"""`changelog.repository`: the InferenceX eras, detected by their files, on copies of the real
trees; the `.relpipe.toml` override; and bad checkouts (mixed layouts, none, recipes that leave
the repository) refused in one line with nothing written; an unknown master field is a WARN at
file:line, never a refusal."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import corpus
import pytest
import yaml
from support import git

from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.repository import launch as keyfiles
from relpipe.changelog.repository.checkout import open_checkout
from relpipe.changelog.repository.detect import locate
from relpipe.changelog.repository.era import HOOK_GATE, HOOK_REQUIRED, HOOKS
from relpipe.changelog.repository.eras import ERA_2026_10, ERAS, hook_files
from relpipe.core.record import replace
from relpipe.pipeline.cli import main as cli
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
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
        name: open_checkout(path)
        for name, path in (
            ("2026-08", inferencex_tree),
            ("2026-10", inferencex_tree_2026_10),
            ("pre-2026-07", old),
        )
    }
    assert {name: r.era.name for name, r in got.items()} == {
        "2026-08": "2026-08",
        "2026-10": "2026-10",
        "pre-2026-07": "pre-2026-07",
    }
    ten = got["2026-10"]
    assert [p.name for p in ten.masters()] == ["amd-master.yaml"]
    for path in (
        ten.era.runners,
        ten.era.changelog,
        ten.era.thresholds,
        ten.era.validator,
        ten.era.models,
        ten.era.checklist,
        ten.era.golden + "/minimaxm3_eagle3_gqa.yaml",
        ten.era.waivers + "/3088.md",
    ):
        assert (inferencex_tree_2026_10 / path).exists(), path
    assert ten.codeowners() == ".github/CODEOWNERS"
    old_masters = [p.name for p in got["pre-2026-07"].masters()]
    assert old_masters == ["amd-master.yaml", "nvidia-master.yaml"]
    # `--repo inferencex-e2e/` is the same checkout.
    inner = open_checkout(inferencex_tree_2026_10 / "inferencex-e2e")
    assert inner.root == inferencex_tree_2026_10.resolve()


def test_key_files_resolve_in_the_2026_10_schema(inferencex_tree_2026_10: Path) -> None:
    layout = open_checkout(inferencex_tree_2026_10).era
    cfg = {"multinode": False, "srt-recipe-dir": "minimaxm3/atom/mi355x-fp4-mtp"}
    assert keyfiles.srt_recipe(layout, cfg, "agentic.yaml") == (RECIPE_10, None)
    full = RECIPE_10.removeprefix("inferencex-e2e/")
    assert keyfiles.srt_recipe(layout, {}, f"{full}:override_tp2_c4") == (
        RECIPE_10,
        "override_tp2_c4",
    )
    assert keyfiles.cluster_hook(layout, "cluster:mi355x-amds") == (
        "inferencex-e2e/runners/srt-slurm/hooks/mi355x-amds/setup.sh"
    )
    assert keyfiles.outside(keyfiles.srt_recipe(layout, cfg, "../" * 9 + "x.yaml")[0])


def test_the_override_file_names_the_layout_and_its_paths(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "amd-master.yaml").write_text("{}\n")
    (tmp_path / ".relpipe.toml").write_text(
        '[tool.relpipe]\nlayout = "2026-08"\nchangelog = "changes/perf.yaml"\n'
        'extra-fields = ["my-field"]\n'
    )
    layout = open_checkout(tmp_path).era
    assert (layout.name, layout.changelog, layout.masters, layout.extra_fields) == (
        "2026-08",
        "changes/perf.yaml",
        "configs",
        ("my-field",),
    )
    (tmp_path / ".relpipe.toml").write_text('[tool.relpipe]\nmasters-dir = "x"\n')
    with pytest.raises(ChangelogError, match=r"unknown \[tool.relpipe\] field\(s\) masters-dir"):
        open_checkout(tmp_path)


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
        open_checkout(mixed)
    assert (
        "mixes layouts (inferencex-e2e/configs/*-master.yaml (2026-10) and "
        "configs/*-master.yaml (2026-08))"
    ) in str(mixed_err.value)
    with pytest.raises(ChangelogError) as none_err:
        open_checkout(tmp_path)
    assert (
        "looked for inferencex-e2e/configs/*-master.yaml, inferencex-e2e/perf-changelog.yaml, "
        "configs/*-master.yaml, .github/configs/*-master.yaml;"
    ) in str(none_err.value)


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


# ------------------------------------------------------------------ the registry of eras


def test_every_real_tree_is_the_era_its_files_say() -> None:
    """The five real trees of one year: each detected as its era, with the era's masters, and
    the era's paths that exist in that tree (the early ones lack golden AL, MODELS.md, docs)."""
    want = {
        "2026-01-15": "pre-2026-07",
        "2026-03-30": "pre-2026-07",
        "2026-07-01": "pre-2026-07",
        "2026-08-22": "2026-08",
        "2026-10-07": "2026-10",
    }
    for date, tree in corpus.inferencex_trees().items():
        found = open_checkout(tree)
        assert found.era.name == want[date], date
        assert {p.name for p in found.masters()} >= {"amd-master.yaml"}, date
        assert (tree / found.era.changelog).is_file(), date
        assert (tree / found.era.runners).is_file(), date
        has_golden = (tree / found.era.golden).is_dir()
        assert has_golden == (date >= "2026-07-01"), date
        assert (tree / found.era.validator).is_file() == (date >= "2026-07-01"), date
        assert (tree / found.era.checklist).is_file() == (date >= "2026-07-01"), date
        assert (tree / found.era.models).is_file() == (date >= "2026-08-22"), date


def test_the_pre_commit_hooks_watch_what_the_eras_declare() -> None:
    """`.pre-commit-hooks.yaml` is built from the declarations (`hook_files`), and in every real
    tree each era's masters, launch scripts and changelog fire the hooks that watch them."""
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == set(HOOKS)
    for hook in HOOKS:
        assert hooks[hook]["files"] == hook_files(hook), hook
    required = re.compile(hooks[HOOK_REQUIRED]["files"])
    gate = re.compile(hooks[HOOK_GATE]["files"])
    for date, tree in corpus.inferencex_trees().items():
        era = open_checkout(tree).era
        master = f"{era.masters}/amd-master.yaml"
        scripts = sorted((tree / era.benchmarks).rglob("*.sh"))
        assert scripts, date
        script = scripts[0].relative_to(tree).as_posix()
        for path in (master, script, era.changelog):
            assert required.search(path), (date, path)
        assert gate.search(era.changelog) and not gate.search(master), date
        assert not required.search(f"{era.at('docs')}/README.md"), date


# A test-only era: what adding one takes (one declaration, a fixture tree).
ERA_TEST = replace(
    ERA_2026_10,
    name="test-2027",
    markers=("bench/configs/*-master.yaml",),
    project="bench",
    masters="bench/configs",
    runners="bench/configs/runners.yaml",
    changelog="bench/CHANGES.yaml",
    golden="bench/golden",
    single_recipes="bench/benchmarks/single_node/srt-slurm-recipes",
    multi_recipes="bench/benchmarks/multi_node/srt-slurm-recipes",
    entry_schema="2026-10",
)


def test_adding_an_era_is_one_declaration_and_a_fixture(tmp_path: Path) -> None:
    (tmp_path / "bench/configs").mkdir(parents=True)
    (tmp_path / "bench/configs/amd-master.yaml").write_text("{}\n")
    eras = (*ERAS, ERA_TEST)
    with pytest.raises(ChangelogError, match="not an InferenceX checkout"):
        open_checkout(tmp_path)  # relpipe's own registry does not know it
    found = open_checkout(tmp_path, eras)
    assert (found.era.name, [p.name for p in found.masters()]) == ("test-2027", ["amd-master.yaml"])
    located = locate(str(tmp_path), eras)
    assert (located.found, located.era.changelog) == (True, "bench/CHANGES.yaml")
    assert keyfiles.cluster_hook(found.era, "cluster:mi355x-amds") == (
        "bench/runners/srt-slurm/hooks/mi355x-amds/setup.sh"
    )
    pattern = re.compile(hook_files(HOOK_REQUIRED, eras))
    assert pattern.search("bench/configs/amd-master.yaml")
    assert pattern.search("bench/benchmarks/x.sh") and pattern.search("bench/CHANGES.yaml")


# ------------------------------------------------------------------ paths stay inside (issue 34.8)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("changelog", "/etc/perf-changelog.yaml"),
        ("changelog", "../outside/perf-changelog.yaml"),
        ("masters", "/tmp"),
        ("masters", "configs/../../x"),
        ("lock", "link/images.lock.yaml"),  # `link` is a symlink to a folder outside
        ("codeowners", ["../CODEOWNERS"]),
    ],
)
def test_an_override_path_leaving_the_checkout_is_one_line(
    tmp_path: Path, field: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / "configs/amd-master.yaml").write_text("{}\n")
    (root / "link").symlink_to(outside)
    rendered = f'"{value}"' if isinstance(value, str) else str(value).replace("'", '"')
    (root / ".relpipe.toml").write_text(f"[tool.relpipe]\n{field} = {rendered}\n")
    with pytest.raises(ChangelogError, match="leaves the checkout") as err:
        open_checkout(root)
    assert "\n" not in str(err.value)
    with pytest.raises(ChangelogError, match="leaves the checkout"):
        locate(str(root))
    assert cli(["review", "--repo", str(root), "--all-keys"]) == 2
    assert "leaves the checkout" in capsys.readouterr().err
    git(root, "init", "-q", "-b", "main")
    revert = ["revert", "--repo", str(root), "--github-repo", "o/r", "--config-key", "k"]
    assert cli([*revert, "--reason", "r", "--dry-run"]) == 2
    assert "leaves the checkout" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_a_committed_masters_symlink_to_a_folder_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "amd-master.yaml").write_text("{}\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "perf-changelog.yaml").write_text("")
    (root / "configs").symlink_to(outside)
    with pytest.raises(ChangelogError, match=r"configs \(masters\) leaves the checkout"):
        open_checkout(root)
    with pytest.raises(PipelineError, match="leaves the checkout"):
        Workspace(root).era  # noqa: B018 - every command's way in
    # A symlink inside the checkout is fine (InferenceX has one: runners/launch_b200-dgxc-slurm.sh).
    (root / "configs").unlink()
    (root / "real").mkdir()
    (root / "real/amd-master.yaml").write_text("{}\n")
    (root / "configs").symlink_to("real")
    assert open_checkout(root).era.name == "2026-08"
