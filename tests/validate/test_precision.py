"""Precision diff on crafted real git repositories: the acceptance cases of issue 5."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import commit_files, git, import_commit

from relpipe.core import jsoncodec, sanitize
from relpipe.validate import precision
from relpipe.validate.errors import ValidateError
from relpipe.validate.precision import globs

LINEAR = '''"""Linear layers."""
import logging

import torch

logger = logging.getLogger(__name__)


class Linear:
    def forward(self, x, w):
        y = x @ w.t()
        return y.to(torch.bfloat16)
'''
LINEAR_COSMETIC = '''"""Linear layers (GEMM wrappers).

Every projection goes through here.
"""
import logging

import torch

logger = logging.getLogger(__name__)


class Linear:
  # two-space indentation and comments do not change what runs
  def forward(self, x, w):
      """Project x."""
      logger.debug("forward %s", tuple(x.shape))

      y = x @ w.t()  # GEMM
      return y.to(torch.bfloat16)
'''
CONFIG = """from dataclasses import dataclass

_MODELS = {"LlamaForCausalLM": "llama"}


@dataclass
class Config:
    kv_cache_dtype: str = "auto"
    index_cache_dtype: str = "bf16"
    max_num_seqs: int = 256
"""
CONFIG_DP = CONFIG + '    dp_load_balance: str = "round_robin"\n'
CONFIG_INDEX = CONFIG_DP.replace(
    'index_cache_dtype: str = "bf16"', 'index_cache_dtype: str = "fp8"'
)
LAYERNORM = "def rms_norm(x, w, eps=1e-6):\n    return x * w\n"
BASE = {
    "atom/model_ops/linear.py": LINEAR,
    "atom/config.py": CONFIG,
    "atom/model_ops/layernorm.py": LAYERNORM,
    "atom/quant_spec.py": "FP8 = 'e4m3'\n",
    "atom/models/eagle3_llama.py": "class Eagle3:\n    pass\n",
    "atom/spec_decode/drafter.py": "ARCH = {'Eagle3LlamaForCausalLM': 'eagle3'}\n",
    "atom/spec_decode/eagle_proposer.py": "def propose(ids):\n    return ids\n",
    "atom/model_loader/loader.py": "def load(m):\n    return m\n",
    "atom/plugin/vllm/ops.py": "X = 1\n",
    "docs/index.md": "# ATOM\n",
    "tests/test_linear.py": "def test():\n    pass\n",
}


class Story:
    """One repository whose commits are the acceptance scenarios, in order."""

    def __init__(self, root: Path) -> None:
        self.repo = root / "atom"
        self.base = commit_files(self.repo, BASE, "Initial import of ATOM (#1)")
        self.cosmetic = commit_files(
            self.repo,
            {"atom/model_ops/linear.py": LINEAR_COSMETIC},
            "docs(linear): explain GEMM wrappers (#10)",
        )
        self.dp = commit_files(
            self.repo, {"atom/config.py": CONFIG_DP}, "[Feature] add a DP load-balance option (#11)"
        )
        self.index = commit_files(
            self.repo,
            {"atom/config.py": CONFIG_INDEX},
            "[Perf] default index_cache_dtype to fp8 (#12)",
        )
        git(self.repo, "mv", "atom/quant_spec.py", "atom/quant_spec_v2.py")
        self.rename = commit_files(self.repo, {}, "refactor(quant): rename quant_spec (#13)")
        self.delete = commit_files(
            self.repo,
            {"atom/model_ops/layernorm.py": None},
            "fix(norm)!: drop the torch rms_norm (#14)",
        )
        self.binary = commit_files(
            self.repo,
            {"atom/model_ops/table.bin": b"\0\1\2kernel\0", "docs/logo.png": b"\x89PNG\0\0"},
            "[Kernel] ship a tuned table (#15)",
        )
        git(self.repo, "checkout", "-q", "-b", "feature", self.binary)
        self.side = commit_files(
            self.repo,
            {"atom/models/eagle3_llama.py": "class Eagle3:\n    dtype = 'bf16'\n"},
            "feat(eagle3): bf16 draft head (#16)",
        )
        git(self.repo, "checkout", "-q", "main")
        self.main_only = commit_files(
            self.repo, {"docs/index.md": "# ATOM\n\nmore\n"}, "docs: more (#17)"
        )
        git(
            self.repo,
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge pull request #18 from x/feature",
            "feature",
        )
        self.merge = git(self.repo, "rev-parse", "HEAD").strip()
        # A release branch off `dp` with a cherry-pick: not an ancestor of main.
        git(self.repo, "checkout", "-q", "-b", "release", self.dp)
        self.release = commit_files(
            self.repo,
            {"atom/config.py": CONFIG_INDEX},
            "[Perf] default index_cache_dtype to fp8 (#12)\n\n"
            f"(cherry picked from commit {self.index})",
        )
        git(self.repo, "checkout", "-q", "main")

    def diff(self, old: str, new: str, **kw: object) -> precision.PrecisionReport:
        return precision.diff(self.repo, old, new, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return Story(tmp_path_factory.mktemp("story"))


def _file(report: precision.PrecisionReport, path: str) -> precision.FileChange:
    return next(f for f in report.files if f.path == path)


def _watch(report: precision.PrecisionReport, label: str) -> precision.WatchResult:
    return next(w for w in report.watch if w.label == label)


def test_comment_docstring_logging_and_indent_only_edit_is_cosmetic(story: Story) -> None:
    report = story.diff(story.base, story.cosmetic)
    linear = _file(report, "atom/model_ops/linear.py")
    assert (linear.category, linear.verdict) == ("linear", "cosmetic")
    assert linear.commits == (story.cosmetic,)
    assert report.summary()["relevant"] == 0
    assert _watch(report, "atom/model_ops/linear.py").state == "cosmetic"
    assert _watch(report, "atom/quant_spec.py").state == "unchanged"


def test_content_gated_file_with_irrelevant_change_is_not_relevant(story: Story) -> None:
    report = story.diff(story.cosmetic, story.dp)
    config = _file(report, "atom/config.py")
    assert (config.category, config.verdict) == ("kv-cache", "not-relevant")
    assert "content gates of kv-cache, model-mapping" in config.reason
    mapping = _watch(report, "architecture mapping in config.py")
    assert (mapping.state, mapping.note) == ("unchanged", "file changed outside the watched lines")


def test_content_gated_file_with_index_cache_dtype_change_is_relevant(story: Story) -> None:
    report = story.diff(story.dp, story.index)
    config = _file(report, "atom/config.py")
    assert (config.category, config.verdict) == ("kv-cache", "relevant")
    assert 'index_cache_dtype: str = "fp8"' in config.reason  # the added line, not the removed one
    assert report.relevant_commits() == (story.index,)
    assert report.commits[0].pr == 12 and report.commits[0].type == "perf"


def test_rename_follows_the_file_and_its_commits(story: Story) -> None:
    report = story.diff(story.index, story.rename)
    moved = _file(report, "atom/quant_spec_v2.py")
    assert (moved.status, moved.old_path, moved.category) == (
        "renamed",
        "atom/quant_spec.py",
        "quantization",
    )
    assert moved.verdict == "cosmetic" and moved.reason.startswith(
        "renamed from atom/quant_spec.py"
    )
    # The watched old name is gone from NEW: that is a change, not "unchanged".
    assert _watch(report, "atom/quant_spec.py").state == "changed"


def test_rename_with_edits_attributes_commits_under_both_names(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/model_ops/linear.py": LINEAR}, "init")
    b = commit_files(
        repo,
        {"atom/model_ops/linear.py": LINEAR.replace("bfloat16", "float16")},
        "fix(linear): fp16 output (#2)",
    )
    git(repo, "mv", "atom/model_ops/linear.py", "atom/model_ops/gemm.py")
    c = commit_files(repo, {}, "refactor: rename (#3)")
    report = precision.diff(repo, a, c)
    (gemm,) = report.files
    assert (gemm.status, gemm.old_path, gemm.verdict) == (
        "renamed",
        "atom/model_ops/linear.py",
        "relevant",
    )
    assert set(gemm.commits) == {b, c}


def test_deletion_counts_and_breaks_the_watch(story: Story) -> None:
    report = story.diff(story.rename, story.delete)
    gone = _file(report, "atom/model_ops/layernorm.py")
    assert (gone.status, gone.category, gone.verdict) == ("deleted", "norm", "relevant")
    assert _watch(report, "atom/model_ops/layernorm.py").state == "changed"
    assert report.commits[0].type == "fix" and report.commits[0].scope == "norm"


def test_binary_files_count_when_in_a_precision_path(story: Story) -> None:
    report = story.diff(story.delete, story.binary)
    table = _file(report, "atom/model_ops/table.bin")
    assert (table.binary, table.verdict, table.category) == (True, "relevant", "kernel")
    assert "binary" in table.reason
    logo = _file(report, "docs/logo.png")
    assert (logo.verdict, logo.category) == ("not-relevant", "docs")
    assert logo.reason == "prose and licences are not executed"


def test_same_commit_gives_an_empty_but_valid_report(story: Story) -> None:
    report = story.diff(story.index, "main~0")  # refs resolve; same idea with the sha itself
    same = story.diff(story.index, story.index)
    assert (same.files, same.commits, same.ancestor) == ((), (), True)
    assert {w.state for w in same.watch} == {"unchanged"} | (
        {"missing"} & {w.state for w in same.watch}
    )
    assert json.loads(json.dumps(same.to_json()))["summary"]["relevant"] == 0
    assert "0 commits, 0 files changed" in precision.render_markdown(same)
    assert report.new != same.new


def test_merge_commit_and_its_branch_commits_are_listed(story: Story) -> None:
    report = story.diff(story.binary, story.merge)
    merge = next(c for c in report.commits if c.sha == story.merge)
    assert (merge.merge, merge.type, merge.pr, merge.files) == (True, "merge", 18, ())
    eagle = _file(report, "atom/models/eagle3_llama.py")
    assert (eagle.verdict, eagle.category, eagle.commits) == (
        "relevant",
        "draft-model",
        (story.side,),
    )
    assert _watch(report, "atom/models/eagle3_llama.py").state == "changed"
    assert {c.sha for c in report.commits} == {story.merge, story.side, story.main_only}


def test_non_ancestor_pair_uses_both_sides(story: Story) -> None:
    report = story.diff(story.release, story.merge)
    assert report.ancestor is False
    sides = {c.sha: c.side for c in report.commits}
    assert sides[story.release] == "old" and sides[story.index] == "new"
    # The cherry-pick made config.py identical on both sides: no change to report.
    assert "atom/config.py" not in {f.path for f in report.files}
    assert "*old*" in precision.render_markdown(report)


def test_upstream_watch_by_pr_and_sha_including_cherry_picks(story: Story) -> None:
    checks = [
        precision.parse_upstream("must-contain", "#12", "the index-cache fix"),
        precision.parse_upstream("must-contain", story.index[:10]),
        precision.parse_upstream("must-not-contain", "ROCm/ATOM#16"),
        precision.parse_upstream("must-contain", "#999"),
    ]
    report = story.diff(story.base, story.release, upstream=checks)
    found = [(u.ref, u.found, u.ok) for u in report.upstream]
    # The release branch carries #12 as a cherry-pick (body names the original sha).
    assert found == [
        ("#12", True, True),
        (story.index[:10], True, True),
        ("#16", False, True),
        ("#999", False, False),
    ]
    assert report.summary()["upstream_ok"] is False
    assert "**FAIL**" in precision.render_markdown(report)


def test_scope_limits_plugin_rules_to_their_image_family(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/plugin/vllm/ops.py": "X = 1\n"}, "init")
    b = commit_files(repo, {"atom/plugin/vllm/ops.py": "X = 2\n"}, "feat(vllm): x (#2)")
    verdicts = {
        scope: precision.diff(repo, a, b, scope=scope).files[0].verdict
        for scope in (None, "vllm", "atom")
    }
    assert verdicts == {None: "relevant", "vllm": "relevant", "atom": "not-relevant"}


def test_five_thousand_file_diff(tmp_path: Path) -> None:
    repo = tmp_path / "big"
    a = commit_files(repo, {"README": "x\n"}, "init")
    files = {f"atom/models/m{i // 100}/f{i}.py": f"X = {i}\n" for i in range(5000)}
    b = import_commit(repo, files, "feat(models): five thousand models (#5000)")
    report = precision.diff(repo, a, b)
    assert len(report.files) == 5000
    assert report.summary()["by_category"] == {
        "model": {"relevant": 5000, "cosmetic": 0, "not-relevant": 0}
    }
    assert all(f.commits == (b,) for f in report.files)


HOSTILE = (
    "fix: <script>alert(1)</script> | *bold* _x_ [link](http://evil) `code` "
    "![img](x) ~~s~~ $x$ \\ & end"
)


def test_mentions_in_subjects_do_not_ping(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/models/a.py": "A = 1\n"}, "init")
    b = commit_files(repo, {"atom/models/a.py": "A = 2\n"}, "fix: thanks @alice (#2501)")
    text = precision.render_markdown(precision.diff(repo, a, b))
    # A mention in a code span is shown, never acted on (core.sanitize, the one escaper).
    assert "thanks `@alice`" in text and not re.search(r"(?<![\\`])@alice", text)
    assert "[ROCm/ATOM\\#2501](https://github.com/ROCm/ATOM/pull/2501)" in text


def test_hostile_subject_and_path_come_out_escaped(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/models/a.py": "A = 1\n"}, "init")
    weird = "atom/models/we|ird`name<b>.py"
    b = commit_files(
        repo,
        {weird: "B = 1\n", "atom/models/a.py": "A = 2\n"},
        HOSTILE + "\n\nbody | with <html>\n",
    )
    report = precision.diff(repo, a, b)
    assert report.commits[0].subject == HOSTILE
    text = precision.render_markdown(report)
    # Outside code spans no tag survives; inside one (the path) GFM shows it as text.
    prose = re.sub(r"(`+).*?\1", "", text)
    assert (
        "<script>" not in prose
        and "<b>" not in prose
        and "``atom/models/we\\|ird`name<b>.py``" in text
    )
    assert "\\<script\\>" in text and "\\*bold\\*" in text and "\\[link\\]" in text
    widths: list[int] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            widths.append(len(re.split(r"(?<!\\)\|", line)) - 2)
        elif widths:
            assert set(widths) == {widths[0]}, text  # every row of a table has the header's cells
            widths = []
    row = next(line for line in text.splitlines() if "ird" in line)
    assert len(re.split(r"(?<!\\)\|", row)[1:-1]) == 6  # the pipe in the path did not split it


def test_report_round_trips_through_json(story: Story) -> None:
    report = story.diff(
        story.base, story.merge, upstream=[precision.parse_upstream("must-contain", "#12")]
    )
    data = json.loads(json.dumps(report.to_json()))
    assert set(data) >= {"old", "new", "ancestor", "commits", "files", "summary", "watch"}
    assert set(data["files"][0]) >= {"path", "status", "category", "verdict", "commits", "reason"}
    assert set(data["summary"]) >= {"relevant", "cosmetic", "by_category"}
    again = jsoncodec.from_json(precision.PrecisionReport, data)
    assert again == report
    assert precision.render_markdown(again) == precision.render_markdown(report)


def test_overlaps_are_allowed_when_declared_or_content_gated(tmp_path: Path) -> None:
    text = (
        "categories:\n  a: {precision: true, why: wa}\n  b: {precision: true, why: wb}\n"
        "  d: {precision: false, why: prose}\n"
        "rules:\n  - {category: d, paths: ['*.md'], over: ['*']}\n"
        "  - {category: b, paths: ['atom/models/*_mtp.py'], over: [a]}\n"
        "  - {category: b, paths: ['atom/models/x.py'], content: ['fp8']}\n"
        "  - {category: a, paths: ['atom/models/**']}\n"
    )
    rules = precision.parse_rules(text, "inline")
    assert [(r.category, r.precision, r.why) for r in rules.rules] == [
        ("d", False, "prose"),
        ("b", True, "wb"),
        ("b", True, "wb"),
        ("a", True, "wa"),
    ]
    assert globs.overlap("atom/models/**", "atom/models/*_mtp.py")
    assert not globs.overlap("atom/models/**", "atom/model_ops/**")
    assert not globs.overlap("/setup.py", "atom/setup.py")
    assert globs.overlap("setup.py", "atom/setup.py")


def test_a_force_pushed_commit_is_named_never_an_empty_diff(tmp_path: Path) -> None:
    # The image says it was built from B; B was force-pushed away (and pruned) upstream.
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/models/a.py": "A = 1\n"}, "init (#1)")
    b = commit_files(repo, {"atom/models/a.py": "A = 2\n"}, "feat: b (#2)")
    git(repo, "reset", "-q", "--hard", a)
    c = commit_files(repo, {"atom/models/a.py": "A = 3\n"}, "feat: c (#3)")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    for ref in (b, b[:9], f"0.1.7.dev2+g{b[:9]}"):
        with pytest.raises(ValidateError) as err:
            precision.diff(repo, ref, c)
        message = str(err.value)
        assert "\n" not in message and "not a commit there" in message
        assert b[:9] in message and "force-pushed" in message


def test_report_names_missing_refs_in_one_line(story: Story) -> None:
    with pytest.raises(ValidateError, match=r"'nope' is missing in .*: not a commit there"):
        story.diff("nope", story.base)
    with pytest.raises(ValidateError, match="not a commit, tag or version"):
        story.diff("--output=/tmp/x", story.base)


# --- rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: []\n", "no rules"),
        ("rules:\n  - {category: a, paths: [x]}\nrules: []\n", "duplicate key `rules`"),
        ("a: &x [1]\nrules:\n  - {category: a, paths: *x}\n", "aliases are not allowed"),
        ("rules:\n  - {category: a, paths: [x], colour: red}\n", "unknown key 'colour'"),
        ("rules:\n  - {category: a, paths: [x], content: ['(']}\n", "bad regular expression"),
        ("rules:\n  - {category: a, paths: []}\n", "rules[0] (a).paths must be"),
        ("rules:\n  - {category: a, paths: [x]}\nwatch:\n  - {path: x, gate: a}\n", "no rule 'a'"),
        (
            "rules:\n  - {category: a, paths: [x]}\nupstream:\n  - {must-contain: xyz}\n",
            "neither a commit sha",
        ),
        ("schema: 2\nrules: []\n", "unsupported schema 2"),
        (
            "categories:\n  a: {precision: true, why: w}\nrules:\n  - {category: b, paths: [x]}\n",
            "rules[0] (b): unknown category 'b'",
        ),
        (
            "categories:\n  a: {precision: yes please, why: w}\n"
            "rules:\n  - {category: a, paths: [x]}\n",
            "categories.a.precision must be true or false",
        ),
        (
            "categories:\n  a: {precision: true, why: w}\n"
            "rules:\n  - {category: a, paths: [x], over: [zz]}\n",
            "rules[0] (a).over: unknown category 'zz'",
        ),
        (
            "rules:\n  - {category: a, paths: ['atom/[ab].py']}\n",
            "rules[0] (a).paths: invalid glob",
        ),
        ("rules:\n  - {category: a, paths: ['atom/x**']}\n", "** must be a whole path segment"),
        ("rules:\n  - {category: a, paths: ['atom//x']}\n", "empty path segment"),
        ("rules:\n  - {category: a, paths: ['../x']}\n", "'.' and '..' segments"),
        ("rules:\n  - {category: a, paths: [x]}\nwatch:\n  - {path: '{a,b}'}\n", "watch[0].path"),
        (
            "rules:\n  - {category: a, paths: ['atom/models/**']}\n"
            "  - {category: b, paths: ['atom/models/*_mtp.py']}\n",
            "rules[0] (a) and rules[1] (b) overlap ('atom/models/**' and 'atom/models/*_mtp.py'",
        ),
        (
            "rules:\n  - {category: a, paths: ['*.md']}\n  - {category: b, paths: ['docs/**']}\n",
            "rules[0] (a) and rules[1] (b) overlap",
        ),
        (
            "rules:\n  - {category: a, paths: ['atom/**']}\n"
            "  - {category: b, paths: ['atom/x.py'], over: [a]}\n",
            "rules[1] (b) says it wins over a but is listed after rules[0] (a)",
        ),
        ("rules: [\n", "invalid YAML"),
        ("rules:\n\t- x\n", "invalid YAML"),
    ],
)
def test_bad_rules_files_fail_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    with pytest.raises(ValidateError) as err:
        precision.load_rules(path)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(path) in str(err.value)


def test_builtin_rule_sets_load() -> None:
    atom, aiter = precision.load_rules(), precision.load_rules("aiter")
    assert (atom.name, atom.project, aiter.name) == ("atom", "ROCm/ATOM", "aiter")
    assert {r.category for r in atom.rules} >= {
        "quantization",
        "linear",
        "norm",
        "loader",
        "kv-cache",
        "draft-model",
        "model-mapping",
        "model",
        "kernel",
    }
    with pytest.raises(ValidateError, match="cannot read rules file .*does-not-exist"):
        precision.load_rules(Path(atom.source).parent / "does-not-exist.yaml")


@pytest.mark.parametrize("name", sorted(precision.builtin_rules()))
def test_builtin_rule_sets_pass_the_overlap_check(name: str) -> None:
    # Loading a built-in set skips the exact overlap search (cost); this is where it runs.
    path = precision.builtin_rules()[name]
    rules = precision.parse_rules(path.read_text(), str(path))
    assert rules == precision.load_rules(name)


def test_rules_file_must_be_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"rules:\n  - {category: caf\xe9, paths: [x]}\n")
    with pytest.raises(ValidateError, match="not UTF-8"):
        precision.load_rules(path)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("atom/models/**", "atom/models/a/b.py", True),
        ("atom/models/**", "atom/modelsx/a.py", False),
        ("*rmsnorm*", "csrc/kernels/fused_rmsnorm.cu", True),
        ("*.md", "a/b/c.md", True),
        ("atom/models/*_mtp.py", "atom/models/sub/x_mtp.py", False),
        ("**/tests/**", "a/tests/b", True),
        ("tests/**", "atom/tests/b", False),
        ("a?c", "x/abc", True),
    ],
)
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert bool(precision.glob_regex([pattern]).match(path)) is hit


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_markdown_cells_are_one_inert_table_cell(text: str) -> None:
    out = sanitize.markdown(text, limit=None)
    assert "\n" not in out and "\r" not in out and not re.search(r"(?<!\\)<", out)
    assert not re.search(r"(?<!\\)\|", out.replace("\\\\", ""))


def test_submodule_pointer_in_a_precision_path_counts(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"README": "x\n"}, "init")
    pointer = "1" * 40  # a gitlink: no blob to read, so its content gate cannot clear it
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{pointer},atom/model_ops/ck")
    b = commit_files(repo, {}, "build: bump composable kernels (#7)")
    (ck,) = precision.diff(repo, a, b).files
    assert (ck.path, ck.category, ck.verdict, ck.binary) == (
        "atom/model_ops/ck",
        "kernel",
        "relevant",
        False,
    )


def test_content_gated_file_names_only_the_commits_whose_own_change_fires(story: Story) -> None:
    # Two commits touch config.py: a DP option (no gate fires) and an index-cache dtype default.
    report = story.diff(story.cosmetic, story.index)
    config = _file(report, "atom/config.py")
    assert (config.category, config.verdict) == ("kv-cache", "relevant")
    assert config.commits == (story.index,)
    assert config.touched_by == (story.index, story.dp)
    assert report.relevant_commits() == (story.index,)
    assert report.commit_categories(story.dp) == ()
    data = json.loads(json.dumps(report.to_json()))
    row = next(f for f in data["files"] if f["path"] == "atom/config.py")
    assert (row["commits"], row["touched_by"]) == ([story.index], [story.index, story.dp])
    assert data["summary"]["relevant_commits"] == [story.index]
    assert jsoncodec.from_json(precision.PrecisionReport, data) == report
    line = next(x for x in precision.render_markdown(report).splitlines() if "config.py" in x)
    assert line.index(story.index[:9]) < line.index("also touched by") < line.index(story.dp[:9])


def test_gated_attribution_skips_cosmetic_commits_and_follows_renames(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    a = commit_files(repo, {"atom/config.py": CONFIG}, "init")
    b = commit_files(
        repo,
        {"atom/config.py": CONFIG.replace('"auto"', '"fp8"')},
        "[Perf] fp8 kv cache by default (#2)",
    )
    # Only a comment that mentions fp8: the gate word is there, but the edit is cosmetic.
    c = commit_files(
        repo,
        {"atom/config.py": CONFIG.replace('"auto"', '"fp8"') + "# fp8 is the default now\n"},
        "docs(config): note the fp8 default (#3)",
    )
    report = precision.diff(repo, a, c)
    (config,) = report.files
    assert (config.verdict, config.commits, config.touched_by) == ("relevant", (b,), (c, b))
    assert report.relevant_commits() == (b,)
    git(repo, "mv", "atom/config.py", "atom/engine_config.py")
    d = commit_files(repo, {}, "refactor: rename config (#4)")
    (moved,) = precision.diff(repo, a, d).files
    assert (moved.old_path, moved.verdict) == ("atom/config.py", "relevant")
    assert (moved.commits, moved.touched_by) == ((b,), (d, c, b))
