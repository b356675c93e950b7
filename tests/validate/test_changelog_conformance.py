"""Conformance: relpipe's perf-changelog verdict against InferenceX's own gate, case by case.

The oracle is InferenceX's code from its real tree (`utils/validate_perf_changelog.py`,
`utils/process_changelog.py`), run by its own Python (pydantic, PyYAML) through one driver
process for all cases (tests/oracles/changelog_gate.py). The cases are InferenceX's own validator
tests (utils/changelog_gate_tests/test_validate_perf_changelog.py, rebuilt here as base/head
bytes) and mutations of the real 772-entry perf-changelog.yaml. Every case must get the same
verdict, except the documented security exceptions (docs/perf-changelog.md), which relpipe
rejects and InferenceX accepts. A few pairs also go through real git and the command line.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path

import corpus
import pytest
import yaml
from support import git

from relpipe.changelog.configs.load import master_keys
from relpipe.validate.gate import cli
from relpipe.validate.gate import hook as gate

REPO = "https://github.com/SemiAnalysisAI/InferenceX"
PR = f"{REPO}/pull/"
KEY = "dsr1-fp4-mi355x-atom"
DRIVER = Path(__file__).resolve().parent.parent / "oracles" / "changelog_gate.py"


@dataclass(frozen=True)
class Case:
    name: str
    base: bytes
    head: bytes
    pr: int | None = None
    all_evals: bool = False
    evals_only: bool = False
    resolve: bool = True
    exception: bool = False  # a documented security exception: relpipe rejects, InferenceX not
    message: str = ""  # relpipe's first error must contain this


def entry(
    key: str = KEY,
    description: str = "Bump ATOM to rocm/atom-dev:nightly_202610070333",
    link: str = PR + "2500",
    extra: str = "",
    items: str = "    - ",
) -> bytes:
    return (
        f'- config-keys:\n{items}{key}\n  description:\n{items}"{description}"\n'
        f"  pr-link: {link}\n{extra}"
    ).encode()


def _dump(entries: list[dict[str, object]]) -> bytes:
    """How InferenceX's own tests write a changelog (yaml.safe_dump: 2-space list items)."""
    return yaml.safe_dump(entries, sort_keys=False).encode()


def _own(key: str, link: str = PR + "1") -> dict[str, object]:
    return {"config-keys": [key], "description": [f"Update {key}"], "pr-link": link}


def inferencex_cases() -> list[Case]:
    """utils/changelog_gate_tests/test_validate_perf_changelog.py, as base -> head pairs."""
    a, b = _dump([_own("config-a")]), _dump([_own("config-b", "XXX")])
    nested = (
        b"- config-keys:\n    - config-a\n  description:\n    - Update config-a\n"
        b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
        b"  - config-keys:\n    - config-b\n  description:\n    - Update config-b\n"
        b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n"
    )
    dup = (
        b"- config-keys:\n    - config-b\n  description:\n    - First\n  description:\n"
        b"    - Second\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
    )
    xxx = _dump([_own("config-a", "XXX")])
    fixed = xxx.replace(b"pr-link: XXX", f"pr-link: {PR}42".encode())
    changed = _dump([{**_own("config-a"), "description": ["Different description"]}])
    c = _dump([_own("config-c", "XXX")])
    own = dict(resolve=False)
    return [
        Case("ix: appended PR entry with XXX", a, a + b"\n" + b, pr=42, **own),
        Case(
            "ix: wrong PR link on append",
            a,
            a + b"\n" + _dump([_own("config-b", PR + "41")]),
            pr=42,
            **own,
        ),
        Case("ix: main needs a canonical link", a, a + b"\n" + b, **own),
        Case("ix: pr-link-only correction", xxx, fixed, pr=99, **own),
        Case("ix: existing content change", a, changed, pr=42, **own),
        Case("ix: deleted entry", a + b"\n" + c, a, pr=42, **own),
        Case("ix: correction mixed with append", xxx, fixed + b"\n" + b, pr=42, **own),
        Case(
            "ix: history byte changed on append",
            a,
            (a + b"\n" + b).replace(b"Update config-a", b"Update config-a "),
            pr=42,
            **own,
        ),
        Case("ix: two blank separator lines", a, a + b"\n" + b + b"\n\n" + c, pr=42, **own),
        Case("ix: final blank line", a, a + b"\n" + b + b"\n", pr=42, **own),
        Case(
            "ix: whitespace change with correction",
            xxx,
            fixed.replace(b"  - Update config-a\n", b"  - Update config-a  \n"),
            pr=42,
            **own,
        ),
        Case("ix: missing final newline", a, (a + b"\n" + b).rstrip(b"\n"), pr=42, **own),
        Case("ix: malformed nested entry", a, a + b"\n" + nested, pr=42, **own),
        Case("ix: duplicate mapping key", a, a + b"\n" + dup, pr=42, **own),
    ]


def real_cases(real: bytes) -> list[Case]:
    """Mutations of the real file: what users do, and the issue's reported wrong verdicts."""
    new = entry()
    return [*_appends(real, new), *_history_edits(real, new), *_sweeps_and_hostile(real, new)]


def _appends(real: bytes, new: bytes) -> list[Case]:
    """Entries appended to the real file: house style, its variants, separators, keys."""
    return [
        Case("append a house-style entry", real, real + b"\n" + new),
        Case("append with XXX on main", real, real + b"\n" + entry(link="XXX")),
        Case("append with XXX in PR mode", real, real + b"\n" + entry(link="XXX"), pr=2500),
        Case(
            "append with another PR's link in PR mode",
            real,
            real + b"\n" + entry(link=PR + "7"),
            pr=2500,
        ),
        Case(
            "scenario-type scalar",
            real,
            real + b"\n" + entry(extra="  scenario-type: fixed-seq-len\n"),
            message="scenario-type must be a list",
        ),
        Case(
            "scenario-type list",
            real,
            real + b"\n" + entry(extra="  scenario-type:\n    - agentic-coding\n"),
        ),
        Case("yes as a boolean", real, real + b"\n" + entry(extra="  evals-only: yes\n")),
        Case("quoted true as a boolean", real, real + b"\n" + entry(extra='  all-evals: "true"\n')),
        Case("2-space list items", real, real + b"\n" + entry(items="  - ")),
        Case(
            "trailing whitespace",
            real,
            real + b"\n" + entry().replace(b"  description:\n", b"  description:  \n"),
        ),
        Case("comment line in entry", real, real + b"\n" + entry(extra="  # why\n")),
        Case(
            "flow-style lists",
            real,
            real
            + b"\n"
            + f'- config-keys: [{KEY}]\n  description: ["Bump"]\n  pr-link: {PR}2500\n'.encode(),
        ),
        Case("two blank lines before", real, real + b"\n\n" + new),
        Case("whitespace-only separator", real, real + b"  \n" + new),
        Case("no separator", real, real + new),
        Case("blank line at the end", real, real + b"\n" + new + b"\n"),
        Case("no final newline", real, real + b"\n" + new.rstrip(b"\n")),
        Case("unknown config key", real, real + b"\n" + entry(key="no-such-key")),
        Case("glob config key", real, real + b"\n" + entry(key='"dsr1-fp4-*"')),
        Case("duplicate key in the new entry", real, real + b"\n" + entry(extra=new[-60:])),
        Case("two entries appended", real, real + b"\n" + new + b"\n" + entry(link=PR + "2501")),
    ]


def _history_edits(real: bytes, new: bytes) -> list[Case]:
    """History touched: pr-link corrections, edits, deletions, insertions, odd bases."""
    last = real.rfind(b"\n- config-keys:") + 1
    xxx_link = b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX\n"
    assert real.count(xxx_link) == 1
    return [
        Case(
            "pr-link correction XXX -> canonical",
            real,
            real.replace(xxx_link, f"  pr-link: {PR}1234\n".encode()),
        ),
        Case(
            "pr-link correction XXX -> not a PR",
            real,
            real.replace(xxx_link, b"  pr-link: https://example.com/not-a-pr\n"),
            message="pr-link correction is not canonical",
        ),
        Case(
            "pr-link correction canonical -> XXX",
            real,
            real.replace(f"  pr-link: {PR}2707\n".encode(), b"  pr-link: XXX\n"),
            message="pr-link correction is not canonical",
        ),
        Case(
            "pr-link correction mixed with an append",
            real,
            real.replace(xxx_link, f"  pr-link: {PR}1234\n".encode()) + b"\n" + new,
            message="pr-link corrections mixed with new entries",
        ),
        Case(
            "whitespace edit of the last entry plus an append",
            real,
            real[:last]
            + real[last:].replace(b"  description:\n", b"  description: \n")
            + b"\n"
            + new,
            message="history changed above the appended entries",
        ),
        Case("last entry deleted", real, real[: last - 1]),
        Case("entry inserted before history", real, new + b"\n" + real),
        Case("base ends in a blank line", real + b"\n", real + b"\n" + new),
        Case(
            "base with 2-space items at its end",
            real + b"\n" + entry(items="  - "),
            real + b"\n" + entry(items="  - ") + b"\n" + new,
        ),
        Case(
            "base lacks the final newline",
            real.rstrip(b"\n"),
            real + b"\n" + new,
            message="the base version is rejected",
        ),
    ]


def _sweeps_and_hostile(real: bytes, new: bytes) -> list[Case]:
    """Sweep labels and append-only rules, large appends, and hostile characters and YAML."""
    big = b"\n".join(entry(description="x" * 1000 + str(i)) for i in range(40))
    assert len(big) >= 32 * 1024
    return [
        Case("append-only entry", real, real + b"\n" + entry(extra="  append-only: true\n")),
        Case(
            "append-only with all-evals label",
            real,
            real + b"\n" + entry(extra="  append-only: true\n"),
            all_evals=True,
            message="append-only sweeps cannot use the all-evals modifier",
        ),
        Case(
            "append-only with evals-only label",
            real,
            real + b"\n" + entry(extra="  append-only: true\n"),
            evals_only=True,
        ),
        Case(
            "append-only mixed with a regular entry",
            real,
            real + b"\n" + entry(extra="  append-only: true\n") + b"\n" + entry(link=PR + "2501"),
            message="append-only entries cannot share a sweep",
        ),
        Case("regular entry with evals-only label", real, real + b"\n" + new, evals_only=True),
        Case(
            "append-only with eval-min-prefill-ep",
            real,
            real + b"\n" + entry(extra="  append-only: true\n  eval-min-prefill-ep: 2\n"),
        ),
        Case(
            "eval-min-prefill-ep 0", real, real + b"\n" + entry(extra="  eval-min-prefill-ep: 0\n")
        ),
        Case(
            "integer of 5000 digits",
            real,
            real + b"\n" + entry(extra=f"  eval-min-prefill-ep: {'7' * 5000}\n"),
        ),
        Case("unknown key", real, real + b"\n" + entry(extra="  notes: x\n")),
        Case("large append (>= 32 KiB)", real, real + b"\n" + big),
        Case(
            "large append with a second pr-link below the last entry",
            real,
            real + b"\n" + big + b"\n  pr-link: https://evil.example/pull/1\n",
        ),
        Case(
            "large append with a second pr-link after a blank line",
            real,
            real + b"\n" + big + b"\n\n  pr-link: https://evil.example/pull/1\n",
        ),
        Case("unchanged", real, real),
        Case(
            "bidi control in a description",
            real,
            real + b"\n" + entry(description="safe \u202etxt.exe").decode().encode(),
            exception=True,
        ),
        Case(
            "zero-width space as an escape",
            real,
            real + b"\n" + entry(description="a\\u200bb"),
            exception=True,
        ),
        Case(
            "private-use character",
            real,
            real + b"\n" + entry(description="a\ue000b"),
            exception=True,
        ),
        # Issue 34.12: a second YAML document after the appended entry (InferenceX's yaml.load
        # takes one document); in a large append the whole-entry grammar took any `-` at column
        # 0 for the next entry.
        Case("second document after an append", real, real + b"\n" + new + b"---\n"),
        Case("second document with a comment", real, real + b"\n" + new + b"--- # more\n"),
        Case(
            "second document holding an entry",
            real,
            real + b"\n" + new + b"---\n" + entry(link=PR + "2501"),
        ),
        Case("document end at the end", real, real + b"\n" + new + b"...\n"),
        Case(
            "document end, then an entry",
            real,
            real + b"\n" + new + b"...\n" + entry(link=PR + "2501"),
        ),
        Case("second document after a large append", real, real + b"\n" + big + b"---\n"),
        Case("list item after a large append", real, real + b"\n" + big + b"- x\n"),
        Case(
            "document end inside a large append",
            real,
            real + b"\n" + big.replace(b"\n\n", b"\n...\n\n", 1),
        ),
        Case(
            "YAML alias",
            real,
            real + b"\n" + entry(extra="  scenario-type: &s\n    - fixed-seq-len\n"),
            exception=True,
        ),
    ]


def real_tail(real: bytes, entries: int = 85) -> bytes:
    """The real file's last `entries` entries (with its XXX link): the oracle's pure-Python
    loader needs about a second per whole file, so most mutations use this real tail."""
    starts = [m.start() + 1 for m in re.finditer(rb"\n- config-keys:", real)]
    return real[starts[-entries] :]


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    real = (corpus.inferencex_dir() / "perf-changelog.yaml").read_bytes()
    whole = {"append a house-style entry"}  # the whole real file, once (see real_tail)
    return (
        inferencex_cases()
        + real_cases(real_tail(real))
        + [c for c in real_cases(real) if c.name in whole]
    )


@pytest.fixture(scope="module")
def masters() -> list[Path]:
    return sorted((corpus.inferencex_tree() / "configs").glob("*-master.yaml"))


@pytest.fixture(scope="module")
def oracle(cases: list[Case], masters: list[Path]) -> list[tuple[bool, str]]:
    """InferenceX's verdicts for all cases, from one oracle process."""
    payload = [
        {
            "base": base64.b64encode(c.base).decode(),
            "head": base64.b64encode(c.head).decode(),
            "pr": c.pr,
            "all_evals": c.all_evals,
            "evals_only": c.evals_only,
            "resolve": c.resolve,
        }
        for c in cases
    ]
    done = corpus.run_oracle(DRIVER, *map(str, masters), input=json.dumps(payload))
    assert done.returncode == 0, done.stderr[-2000:]
    return [(ok, why) for ok, why in json.loads(done.stdout)]


def relpipe(case: Case, keys: list[str]) -> gate.Report:
    rules = gate.Policy(
        repo_url=REPO,
        pr_number=case.pr,
        config_keys=keys if case.resolve else None,
        all_evals=case.all_evals,
        evals_only=case.evals_only,
    )
    return gate.check(case.base, case.head, rules)


def test_verdicts_match_inferencex_case_by_case(
    cases: list[Case], oracle: list[tuple[bool, str]], masters: list[Path]
) -> None:
    keys = [k for path in masters for k in master_keys(path)]
    disagreements = []
    for case, (accepted, why) in zip(cases, oracle, strict=True):
        report = relpipe(case, keys)
        errors = [f for f in report.findings if f.severity == "error"]
        expected = False if case.exception else accepted
        if report.ok != expected or (case.exception and not accepted):
            disagreements.append(
                f"{case.name}: relpipe {'accepts' if report.ok else 'rejects'} "
                f"({errors[:1]}), InferenceX {'accepts' if accepted else 'rejects'} ({why})"
            )
        if errors:
            assert all(f.line >= 1 for f in errors), (case.name, errors)
        if case.message:
            assert errors and case.message in errors[0].message + errors[-1].message, (
                case.name,
                errors,
            )
    assert not disagreements, "\n".join(disagreements)


def test_issue_diagnoses_name_the_real_cause(cases: list[Case], masters: list[Path]) -> None:
    keys = [k for path in masters for k in master_keys(path)]
    by_name = {c.name: c for c in cases}
    for name in (
        "pr-link correction mixed with an append",
        "whitespace edit of the last entry plus an append",
    ):
        messages = " ".join(f.message + f.hint for f in relpipe(by_name[name], keys).findings)
        assert "behind the base" not in messages and "rebase" not in messages, name
    report = relpipe(by_name["base lacks the final newline"], keys)
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.code == "base" and "base line " in finding.message
    report = relpipe(by_name["no final newline"], keys)
    assert [f.code for f in report.findings if f.severity == "error"] == ["final-newline"]


def test_style_is_a_warning_by_default_and_an_error_under_strict(
    cases: list[Case], masters: list[Path]
) -> None:
    keys = [k for path in masters for k in master_keys(path)]
    case = next(c for c in cases if c.name == "2-space list items")
    loose = relpipe(case, keys)
    assert loose.ok and {f.code for f in loose.findings} == {"indent"}
    rules = gate.Policy(repo_url=REPO, pr_number=None, config_keys=keys, strict=True)
    strict = gate.check(case.base, case.head, rules)
    assert not strict.ok and {f.severity for f in strict.findings} == {"error"}


def test_git_pairs_through_the_command_line(
    tmp_path: Path, cases: list[Case], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Real git refs and the real CLI: the same verdicts, exit 0/1, never 2."""
    repo = tmp_path / "ix"
    (repo / "configs").mkdir(parents=True)
    tree = corpus.inferencex_tree()
    for name in ("amd-master.yaml", "nvidia-master.yaml"):
        (repo / "configs" / name).write_bytes((tree / "configs" / name).read_bytes())
    git(repo, "init", "-q", "-b", "main")
    monkeypatch.chdir(repo)
    wanted = {
        "append a house-style entry": 0,
        "pr-link correction XXX -> not a PR": 1,
        "base ends in a blank line": 0,
        "whitespace edit of the last entry plus an append": 1,
        "append-only with all-evals label": 1,
    }
    for case in cases:
        expected = wanted.pop(case.name, None)
        if expected is None:
            continue
        (repo / "perf-changelog.yaml").write_bytes(case.base)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "base")
        base = git(repo, "rev-parse", "HEAD").strip()
        (repo / "perf-changelog.yaml").write_bytes(case.head)
        git(repo, "commit", "-q", "--allow-empty", "-am", "head")
        expected = (
            1 if "not a PR" in case.name or "plus" in case.name or "label" in case.name else 0
        )
        argv = ["--base-ref", base, "--head-ref", "HEAD", "--repo-url", REPO]
        if case.all_evals:
            argv.append("--all-evals")
        code = cli.main(argv)
        out = capsys.readouterr()
        assert code == expected, (case.name, out.out, out.err)
    assert not wanted


def test_the_2026_10_validator_agrees_on_its_own_tests_and_the_3750_change() -> None:
    """InferenceX's 2026-10 validator (`infx/workflows/validate_perf_changelog.py`, whose tests in
    `infx/tests/workflows/` are the cases of inferencex_cases() minus the CLI ones) and the real
    #3750 change on the whole 2026-10 changelog (1,088 -> 1,089 entries, 136 with a Chinese line
    in the final file): relpipe gives its verdict case by case."""
    derived = corpus.inferencex_e2e().parent / "_derived"
    base = (derived / "perf-changelog.base-before-3750.yaml").read_bytes()
    head = (derived / "perf-changelog.head-3750.yaml").read_bytes()
    full = (corpus.inferencex_e2e() / "perf-changelog.yaml").read_bytes()  # 1,101 entries
    entry = head[len(base) + 1 :]
    starts = [m.start() + 1 for m in re.finditer(rb"\n- config-keys:", full)]
    chinese = full.index('    - "新增'.encode())
    cases = [
        *inferencex_cases(),
        Case("#3750 on main", base, head, resolve=False),
        Case("#3750 in its PR", base, head, pr=3750, resolve=False),
        Case("#3750 as another PR", base, head, pr=3751, resolve=False),
        Case("1,101 entries + 1", full, full + b"\n" + entry, resolve=False),
        Case(
            "entry 500 deleted",
            full,
            full[: starts[499]] + full[starts[500] :] + b"\n" + entry,
            resolve=False,
        ),
        Case(
            "inserted at 600",
            full,
            full[: starts[599]] + entry + b"\n" + full[starts[599] :],
            resolve=False,
        ),
        Case(
            "a Chinese line edited",
            full,
            full[:chinese] + full[chinese:].replace("新增".encode(), "更新".encode(), 1),
            resolve=False,
        ),
    ]
    payload = [
        {"base": base64.b64encode(c.base).decode(), "head": base64.b64encode(c.head).decode(),
         "pr": c.pr, "all_evals": False, "evals_only": False, "resolve": False}
        for c in cases
    ]  # fmt: skip
    done = corpus.run_oracle_e2e(DRIVER, "--e2e", input=json.dumps(payload))
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = [ok for ok, _ in json.loads(done.stdout)]
    assert verdicts[-7:] == [True, True, False, True, False, False, False]
    wrong = [c.name for c, ok in zip(cases, verdicts, strict=True) if relpipe(c, []).ok != ok]
    assert not wrong, wrong


def test_the_placeholders_are_inferencex_s_in_both_layouts(
    inferencex_tree: Path, inferencex_tree_2026_10: Path
) -> None:
    """The pr-links a PR's entry may carry before the PR exists (the gate accepts them in PR mode,
    `relpipe pr` replaces them once the PR is numbered) are the validators'
    PR_LINK_PLACEHOLDERS."""
    import ast

    from relpipe.validate.gate.hook import placeholders

    validators = (
        inferencex_tree / "utils" / "validate_perf_changelog.py",
        inferencex_tree_2026_10 / "inferencex-e2e/infx/workflows/validate_perf_changelog.py",
    )
    for path in validators:
        module = ast.parse(path.read_text())
        (value,) = [
            node.value
            for node in module.body
            if isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "PR_LINK_PLACEHOLDERS" for t in node.targets)
        ]
        assert set(ast.literal_eval(value)) == set(placeholders(REPO)), path
