"""The bounded-number policy (`core.numbers`, issue 34.3): a number from outside that is not finite
or is over 2**53 in magnitude is refused with one line by every reader, never a traceback.

The loaders are held to it by property tests (every literal in range parses as `json.loads` parses
it, every literal out of range is refused, in JSON and YAML), and each reader the attack run
crashed with exit 3 gets drawn out-of-range literals in the real files it reads: `history ingest`
of a real ATOM dashboard (a value of 10**400, a date of 10**20), of a real InferenceX `agg_` file
(`conc`/`tp`/`isl` of 1e400) and of real eval rows (`score_se` of 10**400), `notes render` of the
example facts (no `inf` written into notes), `review --results`. `relpipe report` on a run
record: tests/pipeline/test_cli_contract.py.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import empty_checkout, run_cli

from relpipe.core import jsonload, numbers
from relpipe.core.errors import RelpipeError
from relpipe.core.yamlload import load_yaml

LIMIT = numbers.LIMIT
IN_RANGE = st.integers(-LIMIT, LIMIT).map(str) | st.floats(-LIMIT, LIMIT).map(repr)
_HUGE_INT = st.integers(LIMIT + 1, 10**600).flatmap(lambda n: st.sampled_from([str(n), f"-{n}"]))
OUT_OF_RANGE = st.one_of(
    _HUGE_INT,
    st.integers(309, 9999).map(lambda e: f"1e{e}"),  # inf to `float`
    st.floats(2.0 * LIMIT, 1e308).map(repr),  # finite, over the bound
    st.sampled_from(["1" + "0" * 400, "-1e400", "NaN", "Infinity", "-Infinity", "9" * 5000]),
)


@settings(max_examples=200, deadline=None)
@given(IN_RANGE)
def test_a_number_in_range_parses_as_json_parses_it(literal: str) -> None:
    text = f'{{"v": [{literal}]}}'
    assert jsonload.loads(text) == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(OUT_OF_RANGE)
def test_a_number_out_of_range_is_one_refusal_line(literal: str) -> None:
    with pytest.raises(jsonload.JSONLimitError) as info:
        jsonload.loads(f'{{"v": [1, {literal}]}}')
    message = str(info.value)
    assert "\n" not in message and len(message) < 200
    assert "out of range" in message or "not a number" in message


@settings(max_examples=100, deadline=None)
@given(
    _HUGE_INT
    | st.integers(309, 9999).map(lambda e: f"1.0e+{e}")
    | st.sampled_from([".inf", "-.inf", ".nan", ".NaN"])
)
def test_yaml_numbers_out_of_range_are_one_line(literal: str) -> None:
    with pytest.raises(RelpipeError) as info:
        load_yaml(f"key:\n  conc: [4, {literal}]\n", "master config")
    assert str(info.value).startswith("master config") and "\n" not in str(info.value)


# --- the readers the attack run crashed --------------------------------------------------------

DASHBOARD = "atom-dashboards/vllm-benchmark-dashboard.js"
AGG = (
    "inferencex/agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_"
    "MI355-gbt350-odcdh5-wbb3.json"
)
EVALS = "inferencex/InferenceX-app/packages/db/data/supplemental-evals.json"
NOTES = Path(str(resources.files("relpipe.changelog.notes").joinpath("example.json")))
# reader -> (file, field whose first number is replaced)
TARGETS = {
    "ingest: dashboard value": (DASHBOARD, "value"),
    "ingest: dashboard date": (DASHBOARD, "date"),
    "ingest: agg conc": (AGG, "conc"),
    "ingest: agg tp": (AGG, "tp"),
    "ingest: agg isl": (AGG, "isl"),
    "ingest: eval score_se": (EVALS, "score_se"),
    "notes render: score": ("", "score"),
    "review --results: tput_per_gpu": (AGG, "tput_per_gpu"),
}


@pytest.fixture(scope="module")
def empty_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return empty_checkout(tmp_path_factory.mktemp("ix"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.sampled_from(sorted(TARGETS)), literal=OUT_OF_RANGE)
def test_each_reader_refuses_a_number_out_of_range_in_one_line(
    target: str, literal: str, empty_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    name, field = TARGETS[target]
    source = NOTES if not name else corpus.results_dir() / name
    text = source.read_text(encoding="utf-8")
    hostile = re.sub(rf'"{field}": ?[-0-9.eE+]+', f'"{field}": {literal}', text, count=1)
    assert hostile != text, target
    folder = tmp_path_factory.mktemp("n")
    path = folder / ("agg_x.json" if name == AGG else Path(source).name)
    path.write_text(hostile, encoding="utf-8")
    if target.startswith("ingest"):
        code, out, err = run_cli(
            "history", "ingest", "--history", str(folder / "h.sqlite"), str(path)
        )
        assert code == 1 and f"{path}: not ingested: " in err, err
    elif target.startswith("notes"):
        code, out, err = run_cli("notes", "render", str(path))
        assert code == 2 and "inf" not in out.lower() and "nan" not in out.lower()
    else:
        args = ("review", "--repo", str(empty_repo), "--check", "pareto", "--results", str(folder))
        code, out, err = run_cli(*args, "--json")
        (check,) = json.loads(out)["checks"]
        assert code == 1 and check["status"] == "FAIL" and "agg_x.json refused" in check["reason"]
        err = check["reason"]
    assert "unexpected error" not in err and "Traceback" not in err
    assert "out of range" in err or "not a number" in err, err
