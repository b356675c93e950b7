"""A FIFO, a device or a socket among the files to read (issue 34.4): refused with one line, never
a wait. `core.files.read_capped` opens without blocking and reads only a regular file, with a
bound; `history ingest` and `review --results` read through it. On the code before, a FIFO named
`*.json` in an ingested folder blocked `open` forever (the tests' timeout ends them there)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import empty_checkout, run_cli

from relpipe.core.errors import RelpipeError
from relpipe.core.files import read_capped

AGG = (
    "inferencex/agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_"
    "MI355-gbt350-odcdh5-wbb3.json"
)
SPECIAL = ("fifo", "zero", "null", "socket", "folder")


def _make(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")  # endless
    elif kind == "null":
        path.symlink_to("/dev/null")  # a device that reads as empty
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:
        path.mkdir()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", SPECIAL)
def test_read_capped_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.json"
    _make(path, kind)
    # (a socket cannot even be opened: ENXIO, "No such device or address")
    refused = r"^cannot read facts .*: (not a regular file \(a [a-zA-Z ]+\)|No such device)"
    with pytest.raises(RelpipeError, match=refused):
        read_capped(path, 1024, "facts")
    regular = tmp_path / "ok.json"
    regular.write_bytes(b"x" * 3000)
    assert read_capped(regular, 3000, "facts") == b"x" * 3000
    with pytest.raises(RelpipeError, match="over the 2999-byte cap"):
        read_capped(regular, 2999, "facts")


@pytest.mark.timeout(120)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(SPECIAL[:4]), min_size=1, max_size=4))
def test_ingest_reads_the_regular_files_and_refuses_the_others(
    tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("results")
    real = (corpus.results_dir() / AGG).read_text(encoding="utf-8")
    (folder / "agg_real.json").write_text(real, encoding="utf-8")
    for n, kind in enumerate(kinds):
        _make(folder / f"agg_{n}.json", kind)
    code, out, err = run_cli(
        "history", "ingest", "--history", str(folder / "h.sqlite"), str(folder)
    )
    assert code == 1 and "unexpected error" not in err
    lines = err.strip().splitlines()
    assert len(lines) == len(kinds), err
    for n, line in enumerate(lines):
        assert f"agg_{n}.json: not ingested: " in line
        assert "not a regular file" in line or "No such device" in line
    assert f"{len(kinds) + 1} files" in out and " 0 samples" not in out


@pytest.mark.timeout(60)
def test_review_results_refuses_a_fifo_as_a_failed_check(tmp_path: Path) -> None:
    repo = empty_checkout(tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    os.mkfifo(results / "agg_1.json")
    args = ["review", "--repo", str(repo), "--check", "pareto", "--results", str(results)]
    code, out, _ = run_cli(*args, "--json")
    (check,) = json.loads(out)["checks"]
    assert code == 1 and check["status"] == "FAIL"
    assert check["reason"].startswith("result file agg_1.json refused: ")
    assert ": not a regular file (a FIFO)" in check["reason"]
