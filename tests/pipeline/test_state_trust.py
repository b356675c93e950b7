"""State that arrives with a clone never decides anything (issue 34.1): relpipe's state under the
work tree (`.relpipe/`: the results store, run records, the stage cache, bisect journals) is used
only where this user put it (`core.state.trusted`: no symbolic link below the repository root,
owned by this user, tracked by git nowhere), and the results store refuses schema objects relpipe
does not create (`Store.check_schema`: a trigger, a rule, a view). Real git repositories, the
real `relpipe history` commands and real SQLite files.

Before: a committed store with rewritten rows made `history regressions` report nothing; a
trigger deleted half of each ingest while the summary said all were added; a `.relpipe` linked
out of the repository made ingest create files outside it; a committed stage result or bisect
journal was read as this machine's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import empty_checkout, git, run_cli

from relpipe.core.state import UntrustedState
from relpipe.pipeline.run import state_dir
from relpipe.pipeline.workspace import Workspace

AGG = (
    "inferencex/agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_"
    "MI355-gbt350-odcdh5-wbb3.json"
)
# Files of relpipe's state a clone could carry, and links it could plant.
STATE_FILES = [
    ".relpipe/history.sqlite",
    ".relpipe/cache/stages/eval-0123456789abcdef.json",
    ".relpipe/bisect/0123456789abcdef.json",
    ".relpipe/runs/abc/run.json",
]


@st.composite
def hostile_state(draw: st.DrawFn) -> tuple[str, str]:
    """(how the state is planted, which part of it)."""
    how = draw(st.sampled_from(["committed", "linked-folder", "linked-file", "honest"]))
    return how, draw(st.sampled_from(STATE_FILES))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_state())
def test_state_in_the_work_tree_is_used_only_where_the_user_put_it(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]
) -> None:
    how, part = case
    base = tmp_path_factory.mktemp("trust")
    repo, outside = empty_checkout(base), base / "outside"
    outside.mkdir()
    if how == "committed":
        (repo / part).parent.mkdir(parents=True, exist_ok=True)
        (repo / part).write_text("{}")
        git(repo, "add", "-f", part)
        git(repo, "commit", "-q", "-m", "a store that came with the clone")
    elif how == "linked-folder":
        (repo / ".relpipe").symlink_to(outside)
    elif how == "linked-file":  # git carries symbolic links
        (repo / part).parent.mkdir(parents=True, exist_ok=True)
        (repo / part).symlink_to(outside / "planted")
        git(repo, "add", "-f", part)
        git(repo, "commit", "-q", "-m", "a link that came with the clone")
    else:
        (repo / part).parent.mkdir(parents=True, exist_ok=True)
        (repo / part).write_text("{}")  # made here, by this user, not tracked
    if how == "honest":
        assert state_dir(Workspace(repo), None) == repo / ".relpipe"
    else:
        with pytest.raises(UntrustedState) as info:
            state_dir(Workspace(repo), None)
        assert "\n" not in str(info.value)
        assert ("symbolic link" if how == "linked-folder" else "tracked by git") in str(info.value)
    # The default results store, through the real command: refused in one line, nothing written
    # outside the repository.
    artifact = corpus.results_dir() / AGG
    code, out, err = run_cli("history", "ingest", "--repo", str(repo), str(artifact))
    # (the store is refused when its own path is hostile: a committed stage result does not make
    # this user's store untrustworthy, but it makes the state folder so, above)
    if how == "linked-folder" or (how != "honest" and part == ".relpipe/history.sqlite"):
        assert code == 2 and err.count("\n") == 1 and "relpipe's state" in err, err
    elif how == "honest" and part != ".relpipe/history.sqlite":
        assert code == 0, err
    assert list(outside.iterdir()) == []


def test_a_store_with_a_trigger_is_refused_before_it_drops_rows(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    artifact = corpus.results_dir() / AGG
    assert run_cli("history", "ingest", "--history", str(db), str(artifact))[0] == 0
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER drop_half AFTER INSERT ON results WHEN new.rowid % 2 = 0 "
            "BEGIN DELETE FROM results WHERE rowid = new.rowid; END"
        )
    code, out, err = run_cli("history", "ingest", "--history", str(db), str(artifact))
    assert code == 2 and "holds a trigger relpipe did not create ('drop_half')" in err
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER drop_half")
        conn.execute("CREATE VIEW latest AS SELECT * FROM results")
    code, _, err = run_cli("history", "regressions", "--history", str(db))
    assert code == 2 and "holds a view relpipe did not create ('latest')" in err


def test_a_committed_store_with_rewritten_rows_decides_nothing(tmp_path: Path) -> None:
    repo = empty_checkout(tmp_path)
    artifact = corpus.results_dir() / AGG
    assert run_cli("history", "ingest", "--repo", str(repo), str(artifact))[0] == 0
    with sqlite3.connect(repo / ".relpipe" / "history.sqlite") as conn:
        conn.execute("UPDATE results SET value = value * 1000")  # every run "improved"
    git(repo, "add", "-f", ".relpipe/history.sqlite")
    git(repo, "commit", "-q", "-m", "a store that came with the clone")
    code, out, err = run_cli("history", "regressions", "--repo", str(repo))
    assert code == 2 and "tracked by git" in err and out == ""
