"""The engine's records of four or more fields are keyword-only: two ints or two tensors in a row
swap unnoticed. Checked here, beside the engine tests (whose conftest sets Triton's mode before the
kernels are imported), rather than in tests/pipeline/test_outputs.py."""

from __future__ import annotations

import pytest
from support import assert_keyword_only

from relpipe.engine.decode import Generation
from relpipe.engine.evals.parity import DtypeParity
from relpipe.engine.kernels.launch import Launch
from relpipe.engine.model import ModelConfig, Weights
from relpipe.engine.serve import Request

KEYWORD_ONLY = (Generation, DtypeParity, Launch, ModelConfig, Weights, Request)


@pytest.mark.parametrize("record", KEYWORD_ONLY, ids=lambda r: r.__name__)
def test_engine_records_are_keyword_only(record: type) -> None:
    assert_keyword_only(record)
