"""The generated sbatch script runs exactly the intended commands, whatever the paths hold (issue
27.5: a newline in the plan path became a line of the script, and `--dry-run`'s script ran it).

The script of `pipeline.slurm.render_script` (what `relpipe slurm submit` writes) is checked with
`bash -n` and then run by bash as an array task would run it, with a DEBUG trap that records
every simple command bash executes and a recorder in place of relpipe that records its argv:
the commands must be the template's, in order, and relpipe's argv the intended one, byte for byte.
A value that cannot be written safely is refused with one line instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.slurm import SubmitOptions, render_script

RECORDER = "import json, os, sys\nopen(os.environ['RECORD'], 'w').write(json.dumps(sys.argv[1:]))\n"
# The template's simple commands, by their first word, as bash executes them for task 1.
COMMANDS = ["set", "shard=", "out=", "rm", "RELPIPE", "code=", "printf", "mv", "exit"]
HOSTILE = st.text(
    alphabet=st.sampled_from(list("ab/ \n\r\t;&|$`'\"\\#(){}<>*?!~=-") + ["\u202e", "\x85", "é"]),
    min_size=1,
    max_size=24,
)


def _first_word(command: str) -> str:
    word = command.split(" ", 1)[0]
    return word.split("=", 1)[0] + "=" if "=" in word else word


def _run(script: str, work: Path, relpipe: str) -> tuple[list[str], list[str]]:
    """Run `script` as array task 1 in `work`: (first words of the commands run, relpipe's argv)."""
    path = work / "job.sbatch"
    path.write_text(script)
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    trace, record = work / "trace", work / "argv.json"
    trap = 'printf "%s\\0" "$BASH_COMMAND" >> "$TRACE"'
    env = {"PATH": os.environ["PATH"], "SLURM_ARRAY_TASK_ID": "1", "TRACE": str(trace)}
    subprocess.run(
        [
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            f"set -T; trap '{trap}' DEBUG; . \"$0\"",
            str(path),
        ],
        cwd=work,
        env={**env, "RECORD": str(record)},
        capture_output=True,
        timeout=60,
    )
    ran = [c for c in trace.read_text().split("\0") if c and c != '. "$0"']
    words = ["RELPIPE" if c.startswith(relpipe) else _first_word(c) for c in ran]
    argv = json.loads(record.read_text()) if record.exists() else []
    return words, argv


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(plan="/p\ntouch X\n#", jobs="j", repo=None)
@example(plan="p", jobs="$(touch${IFS}X)", repo="`touch X`")
@example(plan="p'; touch X; '", jobs="j;touch${IFS}X", repo="a\u2028b")
@example(plan=";", jobs=";", repo='"')  # a value that starts with a quote is quoted too
@given(plan=HOSTILE, jobs=HOSTILE, repo=st.none() | HOSTILE)
def test_the_script_runs_only_its_commands_or_the_value_is_refused(
    tmp_path: Path, plan: str, jobs: str, repo: str | None
) -> None:
    work = tmp_path / "work"
    if work.exists():
        for child in sorted(work.rglob("*"), reverse=True):
            child.unlink() if child.is_file() or child.is_symlink() else child.rmdir()
    work.mkdir(exist_ok=True)
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER)
    opts = SubmitOptions(
        partition="debug",
        workspace=Path(repo) if repo is not None else None,
        relpipe=(sys.executable, str(recorder)),
    )
    plan_path, jobs_path = tmp_path / "plans" / plan, work / "jobs" / jobs
    try:
        script = render_script(plan_path, jobs_path, 3, [1, 2, 3], opts)
    except PipelineError as exc:
        assert "\n" not in str(exc)
        return
    jobs_path.mkdir(parents=True, exist_ok=True)
    words, argv = _run(script, work, sys.executable)
    assert words == COMMANDS, words
    intended = ["qualify", "--from-plan", str(plan_path), "--shard", "1/3"]
    intended += ["--out", f"{jobs_path}/shard-1"]
    intended += ["--repo", str(opts.workspace)] if opts.workspace is not None else []
    assert argv == intended
    assert (jobs_path / "shard-1.exit").read_text() == "0\n"
    assert not (work / "X").exists() and not (tmp_path / "X").exists()


def test_the_issues_plan_path_is_refused_in_one_line(tmp_path: Path) -> None:
    opts = SubmitOptions(partition="debug")
    with pytest.raises(PipelineError, match="control character") as err:
        render_script(Path("/p\ntouch X\n#"), tmp_path, 2, [1, 2], opts)
    assert "\n" not in str(err.value)
