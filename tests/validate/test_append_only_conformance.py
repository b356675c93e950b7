"""Conformance: append-only entries, relpipe's hook against InferenceX's `process_changelog.py`.

Each case is a commit on top of a git copy of the real InferenceX tree: real master configs
edited as an append-only PR would edit them, plus one appended perf-changelog entry. The oracle
is InferenceX's own `utils/process_changelog.py` with its own dependencies, run in a checkout of
the case's head with `--base-ref`, `--head-ref` and `--changelog-file`, as its CI runs it (git
for the diff and the base's generation inputs, its sweep generator at both revisions). All cases
go through one oracle process (tests/oracles/process_changelog_cases.py: the generator runs
in-process, loads memoized by file bytes); one accepted and one rejected case also run exactly
as CI does (`python3` subprocesses for the generator, that `python3` the oracle's), with the
same verdicts. The hook is the real command line on the same refs. Accepted by the oracle: exit
0; rejected: exit 1 with one error naming the same cause on the entry's `append-only` line.

The copy's nvidia-master.yaml keeps its first keys only (committed in the base, so every case
sees the same masters): the oracle loads and validates the masters with its pure-Python YAML
loader, 1.5 s per load with the whole 324 KB file. All cases edit AMD keys.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import corpus
import pytest
from support import git

from relpipe.changelog.configs.load import load_master, master_blocks, parse_master
from relpipe.validate.gate import cli

REPO = "https://github.com/SemiAnalysisAI/InferenceX"
DRIVER = Path(__file__).resolve().parent.parent / "oracles" / "process_changelog_cases.py"
KEY = "dsr1-fp4-mi355x-atom"  # fixed-seq-len 8k1k: tp4 conc 4..256, tp8 conc 4
DRAM = "kimik3-fp4-mi355x-atom-agentic-mtp"  # agentic, with a kv-offloading: dram item
NVIDIA_KEYS = 2
TP4 = "      - { tp: 4, ep: 1, conc-start: 4, conc-end: 256 }\n"
TP8 = "      - { tp: 8, ep: 1, conc-start: 4, conc-end: 4 }\n"
DRAM_ARM = 'kv-offloading: dram, kv-offload-backend: { name: lmcache, version: "0.4.5" }, '


@dataclass(frozen=True)
class Case:
    name: str
    edits: tuple[tuple[str, str], ...]  # (old, new) in configs/amd-master.yaml, each once
    keys: tuple[str, ...] = (KEY,)
    scenario: str | None = None  # the entry's scenario-type
    append_only: bool = True
    oracle: str = ""  # the oracle's error contains this ("": it accepts)
    ours: str = ""  # relpipe's error contains this
    then: tuple[str, ...] = ()  # the keys of a second append-only entry after this one


ADD_TP8_CONC8 = (TP8, TP8.replace("conc-start: 4, conc-end: 4", "conc-list: [4, 8]"))
CASES = (
    Case("adds a concurrency point", (ADD_TP8_CONC8,)),
    Case(
        "adds a recipe variant (a new tp) to the existing curve",
        ((TP8, TP8 + "      - { tp: 2, ep: 1, conc-list: [4] }\n"),),
    ),
    Case(
        "adds a point to an agentic DRAM-offload item",
        ((DRAM_ARM + "conc-list: [8, 10]", DRAM_ARM + "conc-list: [8, 10, 12]"),),
        keys=(DRAM,),
    ),
    Case(
        "adds a point, and a comment to an unselected config (the same parsed config)",
        (
            ADD_TP8_CONC8,
            (
                "dsr1-fp4-mi355x-sglang:\n  image: lmsysorg",
                "dsr1-fp4-mi355x-sglang:\n  # a comment\n  image: lmsysorg",
            ),
        ),
    ),
    Case(
        "removes a concurrency point",
        ((TP4 + TP8, TP4.replace("conc-end: 256", "conc-end: 128") + TP8),),
        oracle="append-only may not remove existing concurrency points",
        ours="may not remove existing concurrency points: dsr1-fp4-mi355x-atom",
    ),
    Case(
        "changes an unselected config",
        (
            ADD_TP8_CONC8,
            (
                "dsr1-fp4-mi355x-sglang:\n  image: lmsysorg",
                "dsr1-fp4-mi355x-sglang:\n  image: example.org/lmsysorg",
            ),
        ),
        oracle="append-only PR changed configs not selected by its changelog entry",
        ours="changed configs its entries do not select: dsr1-fp4-mi355x-sglang",
    ),
    Case(
        "changes a config-wide field while a scenario is unselected",
        (("dsr1-fp4-mi355x-atom:\n  image: rocm/atom:", "dsr1-fp4-mi355x-atom:\n  image: x/a:"),),
        scenario="agentic-coding",
        oracle="append-only changed config-wide fields",
        ours="changed config-wide field(s) image of dsr1-fp4-mi355x-atom",
    ),
    Case(
        "changes an unselected scenario",
        (ADD_TP8_CONC8,),
        scenario="agentic-coding",
        oracle="append-only changed a scenario outside its changelog scope",
        ours="changed scenario fixed-seq-len of dsr1-fp4-mi355x-atom",
    ),
    Case(
        "adds a point and changes the image (existing recipes modified)",
        (
            ADD_TP8_CONC8,
            ("dsr1-fp4-mi355x-atom:\n  image: rocm/atom:", "dsr1-fp4-mi355x-atom:\n  image: x/a:"),
        ),
        oracle="append-only may not remove or modify existing generated recipes",
        ours="may not remove or modify existing generated recipes",
    ),
    Case(
        "adds a point and changes the DRAM utilization (existing DRAM budget modified)",
        (
            (DRAM_ARM + "conc-list: [8, 10]", DRAM_ARM + "conc-list: [8, 10, 12]"),
            ("dram-utilization: 0.086", "dram-utilization: 0.2"),
        ),
        keys=(DRAM,),
        oracle="append-only may not remove or modify existing generated recipes",
        ours="may not remove or modify existing generated recipes",
    ),
    Case(
        "adds a point on a curve with a different image (a new spec-decoding curve)",
        ((TP8, TP8 + "      - { tp: 8, ep: 1, conc-list: [4], spec-decoding: mtp }\n"),),
        oracle="append-only additions must belong to an existing visual curve",
        ours="must belong to an existing visual curve with one unchanged non-null image: "
        "dsr1-fp4-mi355x-atom",
    ),
    Case(
        "adds nothing",
        (),
        oracle="append-only did not add any generated points",
        ours="append-only did not add any generated points",
    ),
    Case(
        "append-only keys that generate no points (scenario-type the key lacks)",
        (),
        scenario="agentic-coding",
        oracle="append-only requires an existing curve in the base revision",
        ours="generate no points there",
    ),
    Case(
        "two append-only entries: the first adds a point, the second adds none",
        (ADD_TP8_CONC8,),
        then=(DRAM,),
        oracle="append-only did not add any generated points",
        ours="append-only did not add any generated points",
    ),
    Case(
        "two append-only entries for the same key (its points run once, for the first)",
        (ADD_TP8_CONC8,),
        then=(KEY,),
    ),
    Case(
        "adds a point, and breaks the YAML of the masters",
        (ADD_TP8_CONC8, ("dsr1-fp4-mi355x-atom:\n  image:", "dsr1-fp4-mi355x-atom:\n  image: [")),
        oracle="yaml.parser.ParserError",
        ours=":configs/amd-master.yaml line 34: invalid YAML",  # the line in the file
    ),
    Case(
        "adds a point, and a selected item the generator cannot expand",
        ((TP4 + TP8, TP4.replace("conc-end: 256", "conc-end: 2") + ADD_TP8_CONC8[1]),),
        oracle="Master config entry 'dsr1-fp4-mi355x-atom' failed validation",
        ours="the sweep generator cannot expand the selection: config key dsr1-fp4-mi355x-atom",
    ),
    Case(
        "regular entry whose keys generate no points",
        (),
        scenario="agentic-coding",
        append_only=False,
    ),
)


def _entry(case: Case, number: int) -> str:
    """The case's appended entry (and its second one), as the house style writes them."""
    keys = "".join(f"    - {key}\n" for key in case.keys)
    scenario = f"  scenario-type:\n    - {case.scenario}\n" if case.scenario else ""
    flag = "  append-only: true\n" if case.append_only else ""
    text = (
        f'\n- config-keys:\n{keys}{scenario}  description:\n    - "{case.name}"\n'
        f"  pr-link: {REPO}/pull/{number}\n{flag}"
    )
    if case.then:
        text += _entry(Case("the second entry", (), keys=case.then), number + 100)
    return text


def _trim_nvidia(path: Path) -> None:
    text = path.read_text()
    starts = [m.start() for m in re.finditer(r"^[^\s#]", text, re.MULTILINE)]
    path.write_text(text[: starts[NVIDIA_KEYS]])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """The git copy of the real tree: its base commit and one head commit per case."""
    tree = corpus.inferencex_tree()
    root = tmp_path_factory.mktemp("append-only") / "InferenceX"
    shutil.copytree(tree, root, ignore=shutil.ignore_patterns("__pycache__"))
    _trim_nvidia(root / "configs" / "nvidia-master.yaml")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    master = root / "configs" / "amd-master.yaml"
    changelog = root / "perf-changelog.yaml"
    original, log = master.read_text(), changelog.read_text()
    heads = {}
    for number, case in enumerate(CASES, start=9001):
        text = original
        for old, new in case.edits:
            assert text.count(old) == 1, (case.name, old)
            text = text.replace(old, new)
        master.write_text(text)
        changelog.write_text(log + _entry(case, number))
        git(root, "checkout", "-q", "--detach", base)
        git(root, "commit", "-q", "-am", case.name)
        heads[case.name] = git(root, "rev-parse", "HEAD").strip()
        git(root, "checkout", "-q", base)
    return root, base, heads


def _argv(base: str, head: str) -> list[str]:
    return ["--base-ref", base, "--head-ref", head, "--changelog-file", "perf-changelog.yaml"]


@pytest.fixture(scope="module")
def worktrees(repo: tuple[Path, str, dict[str, str]]) -> dict[str, Path]:
    """One checkout of the copy per case, at the case's head (the oracle reads the head's
    masters from its working directory, as CI does)."""
    root, _base, heads = repo
    out = {}
    for index, case in enumerate(CASES):
        work = root.parent / f"case-{index}"
        git(root, "worktree", "add", "-q", "--detach", str(work), heads[case.name])
        out[case.name] = work
    return out


@pytest.fixture(scope="module")
def oracle(
    repo: tuple[Path, str, dict[str, str]], worktrees: dict[str, Path]
) -> dict[str, tuple[bool, str]]:
    """process_changelog.py's verdict per case, all in one oracle process (the driver)."""
    _root, base, heads = repo
    cases = [{"cwd": str(worktrees[c.name]), "argv": _argv(base, heads[c.name])} for c in CASES]
    done = corpus.run_oracle(DRIVER, input=json.dumps(cases))
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    return {c.name: (ok, why) for c, (ok, why) in zip(CASES, verdicts, strict=True)}


def test_the_driver_gives_the_verdicts_ci_gives(
    repo: tuple[Path, str, dict[str, str]],
    worktrees: dict[str, Path],
    oracle: dict[str, tuple[bool, str]],
) -> None:
    """process_changelog.py as CI runs it (its generator a `python3` subprocess, that
    python3 the oracle's), on one accepted and one rejected case: the driver's verdicts."""
    _root, base, heads = repo
    venv_bin = str(Path(corpus.oracle_python()).parent)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", venv_bin + os.pathsep + os.environ["PATH"])
        for name in ("adds a concurrency point", "removes a concurrency point"):
            done = corpus.run_oracle(
                "process_changelog.py", *_argv(base, heads[name]), cwd=worktrees[name]
            )
            lines = done.stderr.strip().splitlines()
            accepted, why = oracle[name]
            assert (done.returncode == 0) == accepted, done.stderr[-1000:]
            assert accepted or why.split(": ", 1)[1] in lines[-1]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hook_verdict_equals_process_changelog(
    case: Case,
    repo: tuple[Path, str, dict[str, str]],
    oracle: dict[str, tuple[bool, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, base, heads = repo
    accepted, why = oracle[case.name]
    # The oracle's verdict is the one this case was built for (else the case tests nothing).
    assert accepted == (not case.oracle), why
    assert case.oracle in why
    monkeypatch.chdir(root)
    code = cli.main(["--base-ref", base, "--head-ref", heads[case.name], "--repo-url", REPO])
    out = capsys.readouterr()
    assert code == (0 if accepted else 1), out
    if not accepted:
        errors = [line for line in out.out.splitlines() if ": error: " in line]
        line = git(root, "show", f"{heads[case.name]}:perf-changelog.yaml").count("\n")
        assert errors == [f"perf-changelog.yaml:{line}: error: {errors[0].split('error: ', 1)[1]}"]
        assert case.ours in errors[0], errors


def test_staged_and_worktree_heads_get_the_same_checks(
    repo: tuple[Path, str, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The pre-commit path: the head is the index (or the working tree), read beside the base."""
    root, base, heads = repo
    monkeypatch.chdir(root)
    files = ("configs/amd-master.yaml", "perf-changelog.yaml")
    try:
        for name, code in (("removes a concurrency point", 1), ("adds a concurrency point", 0)):
            git(root, "checkout", "-q", heads[name], "--", *files)  # staged and in the worktree
            assert cli.main(["--base-ref", base, "--repo-url", REPO]) == code
            assert cli.main(["--base-ref", base, "--worktree", "--repo-url", REPO]) == code
            git(root, "checkout", "-q", base, "--", *files)
            (root / files[0]).write_text(git(root, "show", f"{heads[name]}:{files[0]}"))
            # Only the changelog staged: the index's masters are the base's, so nothing is added.
            git(root, "checkout", "-q", heads[name], "--", files[1])
            assert cli.main(["--base-ref", base, "--repo-url", REPO]) == 1
            assert "did not add any generated points" in capsys.readouterr().out
            git(root, "checkout", "-q", base, "--", *files)
    finally:
        git(root, "checkout", "-q", "-f", "--detach", base)


def test_append_only_path_imports_only_stdlib_and_pyyaml(
    repo: tuple[Path, str, dict[str, str]],
) -> None:
    root, base, heads = repo
    head = heads["adds a point to an agentic DRAM-offload item"]
    probe = (
        "import sys\nfrom relpipe.validate.gate.cli import main\n"
        f"code = main(['--base-ref', '{base}', '--head-ref', '{head}', '--repo-url', '{REPO}'])\n"
        "print('relpipe.validate.gate.append_only' in sys.modules)\n"  # the append-only path ran
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-2] == "True"
    third_party = set(eval(done.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own list
    third_party -= {"relpipe", "yaml", "_yaml", "cython_runtime", "__main__"}
    assert {
        m for m in third_party if not m.startswith(("_distutils", "__editable__", "_cython_"))
    } == set()


def test_config_blocks_parse_as_the_whole_masters() -> None:
    """The append-only checks parse a config from its own block of text: the same config."""
    for path in sorted((corpus.inferencex_tree() / "configs").glob("*-master.yaml")):
        blocks = master_blocks(path.read_bytes(), path)
        assert blocks is not None
        whole = load_master(path)
        assert list(blocks) == list(whole)
        assert all(parse_master(text.encode(), path) == {k: whole[k]} for k, text in blocks.items())
    flow = b"a:\n  image: x\nb: {image: y}\n"  # not a plain `key:` line: loaded whole
    assert master_blocks(flow, Path("m.yaml")) is None
    assert master_blocks(b"a:\n  x: 1\na:\n  x: 2\n", Path("m.yaml")) is None  # repeated
