"""Every command in every era of the benchmark repository: git copies of the five real trees of
one year of InferenceX (`eras/2026-01-15`, `eras/2026-03-30`, `eras/2026-07-01`, `tree/` of
2026-08, `tree-2026-10/`), as a contributor works: a feature branch, `origin` their fork,
`upstream` the canonical repository (the one the era's own changelog links to).

- through the real pre-commit client: an image bump of a master staged without an entry is
  refused by `relpipe-changelog-required` (exit 1, not skipped); with the entry appended
  (`pr-link .../pull/XXX`: the PR does not exist yet) every relpipe hook passes;
- `review --config-key`, `review` of the bump (base..head), `doctor` and golden AL: no exit 2 or
  3 on a valid repository of any era, findings at file:line.

One git copy per era and one pre-commit environment for all (module scope): the suite stays
lean on two cores.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import corpus
import pytest
from precommit_support import hook_repo, pre_commit
from support import checkout_snapshot, git

from relpipe.changelog.configs.pin import edit_image
from relpipe.changelog.repository.checkout import open_checkout
from relpipe.changelog.repository.detect import linked_repository
from relpipe.changelog.repository.era import HOOKS
from relpipe.core import jsoncodec
from relpipe.core.status import PASS, WARN
from relpipe.pipeline.cli import main as cli
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.outputs import ConfigScope
from relpipe.pipeline.release import (
    DEFAULT_REPO_URL,
    Request,
    apply_changelog,
    hook_result,
    make_entry,
)
from relpipe.pipeline.selection import select
from relpipe.pipeline.verdict import Outcome, check_scope
from relpipe.pipeline.workspace import Workspace
from relpipe.validate import golden_al

FORK = "https://github.com/someone/InferenceX"
HOOK_NAMES = {
    "validate-perf-changelog": "validate perf-changelog.yaml",
    "relpipe-review": "relpipe review (InferenceX review checklist, fast checks)",
    "relpipe-changelog-required": (
        "relpipe review (benchmark-affecting change has a perf-changelog entry)"
    ),
}
# pre-commit's result line: `NAME.....Passed`, `NAME...(no files to check)Skipped`
_RESULT = re.compile(r"^(.+?)\.{3,}(?:\(no files to check\))?(Passed|Failed|Skipped)$", re.M)
_IMAGE = re.compile(r"^([A-Za-z0-9][\w.-]*):\n(?:  .*\n)*?  image: (\S+)$", re.M)
ERAS = ("2026-01-15", "2026-03-30", "2026-07-01", "2026-08-22", "2026-10-07")


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A `.pre-commit-config.yaml` with every relpipe hook, pointing at a snapshot of this
    checkout, and one PRE_COMMIT_HOME for all eras (pre-commit builds the environment once)."""
    tmp = tmp_path_factory.mktemp("hooks")
    repo, sha = hook_repo(tmp)
    ids = "".join(f"      - id: {h}\n" for h in HOOKS)
    return f"repos:\n  - repo: {repo}\n    rev: {sha}\n    hooks:\n{ids}", tmp / "home"


@pytest.fixture(scope="module", params=ERAS)
def bench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git copy of one era's tree: `main` committed, then a feature branch."""
    tree = corpus.inferencex_trees()[request.param]
    root = tmp_path_factory.mktemp(f"era-{request.param}") / "InferenceX"
    shutil.copytree(tree, root, symlinks=True)
    era = open_checkout(root).era
    canonical = linked_repository((root / era.changelog).read_bytes())
    assert canonical is not None
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", f"{FORK}.git")
    git(root, "remote", "add", "upstream", f"{canonical}.git")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "bump-image")
    return root


def _bump(root: Path) -> tuple[str, str, str]:
    """Move the first key of the era's AMD master to a new image, staged: (key, master, entry
    pr-link's repository)."""
    era = open_checkout(root).era
    master = f"{era.masters}/amd-master.yaml"
    text = (root / master).read_text()
    m = _IMAGE.search(text)
    assert m, master
    (root / master).write_text(f"{text[: m.end(2)]}-next{text[m.end(2) :]}")
    git(root, "add", master)
    return m.group(1), master, era.changelog


def _reset(root: Path) -> None:
    git(root, "reset", "-q", "--hard", "HEAD")


@pytest.mark.slow
def test_the_hooks_through_pre_commit_in_every_era(bench: Path, hooks: tuple[str, Path]) -> None:
    config, home = hooks
    (bench / ".pre-commit-config.yaml").write_text(config)
    try:
        key, master, changelog = _bump(bench)
        git(bench, "add", ".pre-commit-config.yaml")
        missing = pre_commit(bench, home, "relpipe-changelog-required")
        assert missing.returncode == 1, missing.stdout + missing.stderr
        assert dict(_RESULT.findall(missing.stdout)) == {
            HOOK_NAMES["relpipe-changelog-required"]: "Failed"
        }
        assert f"{master}:" in missing.stdout and key in missing.stdout
        canonical = linked_repository((bench / changelog).read_bytes())
        with (bench / changelog).open("a") as handle:
            handle.write(
                f'\n- config-keys:\n    - {key}\n  description:\n    - "Bump the image"\n'
                f"  pr-link: {canonical}/pull/XXX\n"
            )
        git(bench, "add", changelog)
        done = pre_commit(bench, home)
        assert done.returncode == 0, done.stdout + done.stderr
        assert dict(_RESULT.findall(done.stdout)) == {
            name: "Passed" for name in HOOK_NAMES.values()
        }
    finally:
        _reset(bench)
        (bench / ".pre-commit-config.yaml").unlink(missing_ok=True)


def _review(bench: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict]:
    code = cli(["review", "--repo", str(bench), "--json", *argv])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    checks = {c["id"]: c for c in json.loads(captured.out)["checks"]}
    for check in checks.values():  # every finding names its file:line (or a file, a key)
        for where, _ in check.get("evidence", []):
            assert where, check
    return checks


def test_review_of_a_key_and_of_a_change_in_every_era(
    bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, master, _ = _bump(bench)
    try:
        change = _review(bench, capsys, "--base-ref", "main")
        required = change["changelog-required"]
        assert required["status"] == "FAIL", required
        assert [f"{master}:", f"{key}: its block changed"] == [
            required["evidence"][0][0][: len(master) + 1],
            required["evidence"][0][1],
        ]
        assert change["master-fields"]["status"] == "PASS", change["master-fields"]
        one = _review(bench, capsys, "--config-key", key)
        assert one["master-fields"]["status"] == "PASS"
        for check in one.values():
            assert "Traceback" not in check["reason"]
    finally:
        _reset(bench)


def test_golden_al_and_doctor_in_every_era(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    era = open_checkout(bench).era
    keys = sorted(
        re.findall(
            r"^(\S+-agentic-mtp):$", (bench / era.masters / "amd-master.yaml").read_text(), re.M
        )
    )
    if (bench / era.golden).is_dir():
        found = golden_al.verdict(bench, keys[:3])
        assert found.status in ("PASS", "WARN", "FAIL", "N/A")
        for row in found.rows:
            assert row.path and row.line >= 1
    else:  # no golden curves yet in this era: N/A with the reason, not a FAIL
        checks = _review(bench, capsys, "--all-keys", "--check", "golden-al")
        assert checks["golden-al"]["status"] == "N/A"
        assert f"no {era.golden}/ in the repository" in checks["golden-al"]["reason"]
    code = cli(["doctor", "--repo", str(bench), "--json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    document = json.loads(captured.out)
    assert document["layout"] == era.name
    assert not [d for d in document["disagreements"] if d["kind"] == "field"], document


def test_a_release_links_to_the_repositorys_identity_not_a_forks_origin(bench: Path) -> None:
    """`relpipe release` without --repo-url: the `upstream` remote, else the repository the
    era's own changelog links to (InferenceMAX/InferenceMAX in January 2026), never `origin`."""
    era = open_checkout(bench).era
    linked = linked_repository((bench / era.changelog).read_bytes())
    assert Workspace(bench).repository_url("https://example.invalid/x") == linked
    upstream = git(bench, "remote", "get-url", "upstream").strip()
    git(bench, "remote", "remove", "upstream")
    try:
        assert Workspace(bench).repository_url("https://example.invalid/x") == linked != FORK
    finally:
        git(bench, "remote", "add", "upstream", upstream)


def _readable(root: Path) -> re.Match[str]:
    """The first key of the era's AMD master that relpipe reads (the trees keep only some of
    2026-10's srt-slurm recipes: a key naming a missing one is refused, rightly)."""
    master = open_checkout(root).era.masters + "/amd-master.yaml"
    ws = Workspace(root)
    for m in _IMAGE.finditer((root / master).read_text()):
        try:
            ws.config_key(m.group(1), 1)
        except PipelineError:
            continue
        return m
    raise AssertionError(f"no key of {master} is readable")


def test_an_unknown_master_field_is_a_warn_at_file_line_never_a_refusal(
    bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A master field no schema relpipe knows has (`warmup-policy`, beside the era's own
    `duration`/`seq-len-configs` of early 2026) is read, not refused: every command that reads a
    key (release, pr, revert, selection) gets it as a WARN at file:line, and release carries it
    into C10's evidence."""
    era = open_checkout(bench).era
    master = f"{era.masters}/amd-master.yaml"
    text = (bench / master).read_text()
    m = _readable(bench)
    key = m.group(1)
    (bench / master).write_text(f"{text[: m.end(2)]}\n  warmup-policy: long{text[m.end(2) :]}")
    try:
        line = text[: m.end(2)].count("\n") + 2
        found = Workspace(bench).config_key(key, 1)
        assert [w.split(";")[0] for w in found.warnings] == [
            f"{master}:{line}: unknown master field 'warmup-policy' of {key}"
        ]
        assert select(Workspace(bench), [key]) == (key,)
        scope = ConfigScope(
            status=PASS,
            key=key,
            master=found.master,
            image=found.image,
            points=found.points,
            warnings=found.warnings,
        )
        assert jsoncodec.from_json(ConfigScope, jsoncodec.to_json(scope)) == scope  # recorded
        c10 = check_scope(Outcome(config=scope))
        assert c10.status == WARN and c10.reason == found.warnings[0]
        where, what = found.warnings[0].split(": ", 1)
        assert where == f"{master}:{line}"
        assert (where, what) in [(e.where, e.what) for e in c10.evidence or ()]
        # revert prints it and goes on to what it really lacks (a recorded pin of the image)
        canonical = linked_repository((bench / era.changelog).read_bytes()) or ""
        code = cli(
            [
                *("revert", "--dry-run", "--repo", str(bench), "--config-key", key),
                *("--github-repo", canonical.removeprefix("https://github.com/")),
                *("--reason", "gsm8k dropped", "--api-url", "http://127.0.0.1:9"),
            ]
        )
        err = capsys.readouterr().err.splitlines()
        assert code in (1, 2) and len(err) == 2, err
        assert err[0] == f"relpipe revert: warning: {found.warnings[0]}"
        assert "warmup-policy" not in err[1] and m.group(2) in err[1]
    finally:
        _reset(bench)


def test_release_dry_run_up_to_qualification_in_every_era(bench: Path) -> None:
    """What `release --dry-run` does before and after qualifying (the qualification itself, a
    docker run of the image, is tested on the 2026-08 tree in tests/pipeline/
    test_release_keys.py): key selection, the one-line master bump, the entry in the era's
    schema and the era's hook on the staged copy; the checkout is left byte-identical."""
    era = open_checkout(bench).era
    master = f"{era.masters}/amd-master.yaml"
    m = _readable(bench)
    key, old = m.group(1), m.group(2)
    before = checkout_snapshot(bench)
    ws = Workspace(bench)
    assert select(ws, [key]) == (key,)
    found = ws.config_key(key, 1)
    assert (found.master, found.image, found.warnings) == (master, old, ())
    scratch = bench.parent / "staged"
    shutil.copytree(bench, scratch, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    try:
        new = f"{old}-next"
        edited, _ = edit_image((scratch / master).read_text(), key, new, master)
        (scratch / master).write_text(edited)
        repo_url = ws.repository_url(DEFAULT_REPO_URL)
        base = (scratch / era.changelog).read_bytes()
        for number, link in ((None, "XXX"), (4242, "4242")):  # the PR not open yet, then open
            (scratch / era.changelog).write_bytes(base)
            req = Request(config_keys=(key,), image=new, repo_url=repo_url, pr_number=number)
            apply_changelog(scratch / era.changelog, make_entry(req, ["Bump the image"], []))
            hook = hook_result(ws, scratch, req)
            assert hook.problems == (), hook.problems
            assert hook.evidence is not None and hook.evidence["appended"] == 1
            assert f"pr-link: {repo_url}/pull/{link}\n" in (scratch / era.changelog).read_text()
    finally:
        shutil.rmtree(scratch)
    assert checkout_snapshot(bench) == before


def test_revert_dry_run_without_a_recorded_pin_is_one_line_in_every_era(
    bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pins live in relpipe's state (the results store), not in the benchmark repository: a
    revert with no pin recorded for the key's image says so in one line, writes nothing."""
    era = open_checkout(bench).era
    m = _readable(bench)
    before = checkout_snapshot(bench)
    argv = ["revert", "--dry-run", "--repo", str(bench), "--config-key", m.group(1)]
    canonical = linked_repository((bench / era.changelog).read_bytes()) or ""
    argv += ["--github-repo", canonical.removeprefix("https://github.com/")]
    code = cli([*argv, "--reason", "gsm8k dropped", "--api-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code in (1, 2), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert m.group(2) in err and "pin" in err
    assert checkout_snapshot(bench) == before


def test_pr_open_dry_run_in_every_era(
    bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release left in the working tree (the bump and its entry, `pr-link .../pull/XXX`):
    `pr open --dry-run` prints the request it would send, pushes and writes nothing."""
    era = open_checkout(bench).era
    master, changelog = f"{era.masters}/amd-master.yaml", era.changelog
    m = _readable(bench)
    key = m.group(1)
    text = (bench / master).read_text()
    (bench / master).write_text(f"{text[: m.end(2)]}-next{text[m.end(2) :]}")
    try:
        canonical = linked_repository((bench / changelog).read_bytes())
        with (bench / changelog).open("a") as handle:
            handle.write(
                f'\n- config-keys:\n    - {key}\n  description:\n    - "Bump the image"\n'
                f"  pr-link: {canonical}/pull/XXX\n"
            )
        new = Workspace(bench).config_key(key, 1).image
        old = new.removesuffix("-next")
        name = (canonical or "").removeprefix("https://github.com/")
        notes = tmp_path / "notes.md"
        notes.write_text(f"# {key}: {old} -> {new}\n\nBump {key} from {old} to {new}.\n")
        before = checkout_snapshot(bench)
        code = cli(
            [
                *("pr", "open", "--dry-run", "--repo", str(bench), "--config-key", key),
                *("--notes", str(notes), "--api-url", "http://127.0.0.1:9"),
                *("--github-repo", name),
            ]
        )
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert f"POST http://127.0.0.1:9/repos/{name}/pulls\n" in captured.out
        assert "dry run: nothing pushed or sent" in captured.out
        assert checkout_snapshot(bench) == before
    finally:
        _reset(bench)
        git(bench, "clean", "-q", "-fd")
