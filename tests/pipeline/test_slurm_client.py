"""`pipeline.slurm` talks to a real one-node Slurm (services --slurm) through `core.process`:
its checks before a submission, and the one-line errors when the client is missing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from relpipe.core import process
from relpipe.pipeline import slurm
from relpipe.pipeline.errors import PipelineError

pytestmark = pytest.mark.services


@pytest.fixture
def cluster(slurm_conf: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SLURM_CONF", slurm_conf)
    return slurm_conf


def test_the_partition_check_asks_the_cluster(cluster: str) -> None:
    slurm.check_partition(slurm.SubmitOptions(partition="relpipe"))  # exists, has the node
    with pytest.raises(PipelineError) as gres:
        slurm.check_partition(slurm.SubmitOptions(partition="relpipe", gres="gpu:1"))
    assert str(gres.value).startswith("no node of partition 'relpipe' has the GPU gres gpu:1")
    with pytest.raises(PipelineError, match=r"^partition 'nope' has no nodes \(or does not exist"):
        slurm.check_partition(slurm.SubmitOptions(partition="nope"))


def test_a_runner_can_stand_in_for_the_cluster() -> None:
    """The runner stays injectable (another transport, a login-node wrapper)."""
    asked: list[list[str]] = []

    def runner(argv: Sequence[str]) -> process.Completed:
        asked.append(list(argv))
        return process.Completed(argv=(), returncode=1, stdout=b"", stderr=b"sinfo: cannot\n")

    with pytest.raises(PipelineError, match=r"^sinfo failed: sinfo: cannot$"):
        slurm.check_partition(slurm.SubmitOptions(partition="relpipe"), runner)
    assert asked == [["sinfo", "--noheader", "--partition=relpipe", "--format=%G|%N"]]


def test_a_missing_client_is_one_line_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm client on it
    with pytest.raises(PipelineError) as info:
        slurm.check_partition(slurm.SubmitOptions(partition="relpipe"))
    assert str(info.value) == (
        "sinfo not found: install Slurm's client commands (Debian: slurm-client) "
        "or run on a login node"
    )
