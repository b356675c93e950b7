"""InferenceX's sweep artifacts as history samples: raw `benchmark_serving` results, the `agg_` rows
`utils/process_result.py` computes from them, AgentX aggregates and eval rows.

A point is identified the way `utils/compare_results.py` pairs a row with its baseline
(`build_config_params` plus ISL, OSL and concurrency): the series is the config key
(`<model prefix>-<precision>-<hardware>-<framework>`), the point carries the rest. AgentX rows
(`scenario_type: agentic-coding`, which compare_results.py leaves out) add the KV offloading to
the point. Eval rows carry no image; their eval run (the lm-eval results path) stands in for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from ...core import instant
from ...core.status import Status
from .records import (
    ACCEPTANCE,
    ACCURACY,
    AMBIGUOUS,
    FAILED,
    HIGHER,
    LOWER,
    OK,
    PERF,
    Image,
    Sample,
    finite,
    image_from_ref,
)

SOURCE = "inferencex"
# compare_results.py METRIC_DEFS: (key, higher is better)
AGG_METRICS = (
    ("tput_per_gpu", True),
    ("median_ttft", False),
    ("p90_ttft", False),
    ("p99_ttft", False),
    ("p99.9_ttft", False),
    ("median_intvty", True),
    ("p90_intvty", True),
    ("p99_intvty", True),
    ("p99.9_intvty", True),
    ("median_e2el", False),
    ("p90_e2el", False),
    ("p99_e2el", False),
    ("p99.9_e2el", False),
)
# AgentX: (metric, path in the aggregate, higher is better)
AGENTIC_METRICS = (
    ("tput_per_gpu", ("request_metrics", "throughput", "per_gpu", "total_tput_tps"), True),
    ("output_tput_per_gpu", ("request_metrics", "throughput", "per_gpu", "output_tput_tps"), True),
    ("median_ttft", ("request_metrics", "latency", "ttft", "p50"), False),
    ("p90_ttft", ("request_metrics", "latency", "ttft", "p90"), False),
    ("median_tpot", ("request_metrics", "latency", "tpot", "p50"), False),
    ("median_e2el", ("request_metrics", "latency", "e2el", "p50"), False),
    ("median_intvty", ("request_metrics", "latency", "intvty", "p50"), True),
)
_HW_SUFFIX = re.compile(r"-(multinode|trt|disagg)$")


def kind_of(row: Mapping[str, Any]) -> str | None:
    """Which artifact `row` is: raw, agg, agentic, eval, acceptance; None for none of them."""
    if row.get("scenario_type") == "agentic-coding" and "request_metrics" in row:
        return "agentic"
    if "tput_per_gpu" in row and "infmax_model_prefix" in row:
        return "agg"
    if "max_concurrency" in row and "completed" in row and "total_token_throughput" in row:
        return "raw"
    if "task" in row and "score" in row and "hw" in row:
        return "eval"
    if "accepted_per_position" in row and "num_drafts" in row:
        return "acceptance"
    return None


def compute_agg(raw: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The agg row `utils/process_result.py` writes for a single-node raw result.

    `meta` holds what process_result.py reads from its environment (hw, image, framework,
    precision, spec_decoding, disagg, infmax_model_prefix, isl, osl, tp, ep, dp_attention).
    ValueError when the raw result cannot be aggregated (no completed request: process_result.py
    would divide by zero)."""
    if not raw.get("completed"):
        raise ValueError(f"completed: {raw.get('completed')!r}; the point failed")
    gpus = int(meta["tp"]) * int(meta.get("pp", 1)) * int(meta.get("pcp_size", 1))
    total, out = float(raw["total_token_throughput"]), float(raw["output_throughput"])
    row: dict[str, Any] = {
        "hw": meta["hw"],
        "conc": int(raw["max_concurrency"]),
        "image": meta["image"],
        "model": raw["model_id"],
        "infmax_model_prefix": meta["infmax_model_prefix"],
        "framework": meta["framework"],
        "precision": meta["precision"],
        "spec_decoding": meta["spec_decoding"],
        "disagg": str(meta["disagg"]).lower() == "true",
        "isl": int(meta["isl"]),
        "osl": int(meta["osl"]),
        "is_multinode": False,
        "tp": int(meta["tp"]),
        "ep": int(meta["ep"]),
        "dp_attention": meta["dp_attention"],
        "tput_per_gpu": total / gpus,
        "output_tput_per_gpu": out / gpus,
        "input_tput_per_gpu": (total - out) / gpus,
    }
    for key, value in raw.items():
        if key.endswith("ms"):
            row[key.replace("_ms", "")] = float(value) / 1000.0
        if "tpot" in key:
            row[key.replace("_ms", "").replace("tpot", "intvty")] = 1000.0 / float(value)
    return row


def config_key(row: Mapping[str, Any]) -> str:
    hw = _HW_SUFFIX.split(str(row["hw"]))[0].lower()
    parts = (row["infmax_model_prefix"], row["precision"], hw, row["framework"])
    return "-".join(str(p).lower() for p in parts)


def point_of(row: Mapping[str, Any]) -> str:
    """compare_results.py's pairing fields beyond the config key, as one readable string."""
    spec = str(row.get("spec_decoding", "none")).lower()
    disagg = str(row.get("disagg", False)).lower() == "true"
    if row.get("is_multinode"):
        par = (
            f"prefill tp{int(row['prefill_tp'])}/ep{int(row['prefill_ep'])}/"
            f"dpa-{_bool(row['prefill_dp_attention'])} decode tp{int(row['decode_tp'])}/"
            f"ep{int(row['decode_ep'])}/dpa-{_bool(row['decode_dp_attention'])}"
        )
    else:
        par = f"tp{int(row['tp'])}/ep{int(row['ep'])}/dpa-{_bool(row['dp_attention'])}"
    isl_osl = f"{int(row['isl'])}/{int(row['osl'])} " if "isl" in row else ""
    kv = f" kv-{row['kv_offloading']}" if row.get("scenario_type") == "agentic-coding" else ""
    return f"{isl_osl}{par} spec-{spec} disagg-{str(disagg).lower()} c={int(row['conc'])}{kv}"


def _bool(value: object) -> str:
    return "true" if value is True or str(value).lower() == "true" else "false"


def samples(row: Mapping[str, Any], *, source: str, run: str, seq: int) -> Iterator[Sample]:
    """The samples of one agg, agentic or eval row (raw rows go through `compute_agg` first)."""
    what = kind_of(row)
    if what == "eval":
        yield from _eval(row, source=source, seq=seq)
        return
    named = str(row["image"]).strip() if isinstance(row.get("image"), str) else ""
    image, why = image_from_ref(named)
    if not named:
        why = "the artifact names no image: its results cannot be attributed"
    status = OK if image is not None else AMBIGUOUS
    image = image or Image(ref=named or "unknown")
    common = {"series": config_key(row), "point": point_of(row), "image": image, "run": run}
    if what == "agentic":
        failed = not row.get("num_requests_successful")
        for metric, path, higher in AGENTIC_METRICS:
            value = _dig(row, path)
            yield _perf(common, metric, value, higher, status, why, failed, source, seq)
    else:
        for metric, higher in AGG_METRICS:
            value = row.get(metric)
            failed = value == 0
            yield _perf(common, metric, value, higher, status, why, failed, source, seq)


def _perf(
    common: Mapping[str, Any],
    metric: str,
    value: object,
    higher: bool,
    status: Status,
    why: str,
    failed: bool,
    source: str,
    seq: int,
) -> Sample:
    number = finite(value)
    if failed:
        status, why = FAILED, "no successful request: the point failed"
    elif number is None:
        status, why = AMBIGUOUS, f"{metric} is missing or not a number in float range"
    return Sample(
        **common,
        metric=metric,
        kind=PERF,
        better=HIGHER if higher else LOWER,
        unit=unit_of(metric),
        seq=seq,
        status=status,
        value=number,
        note=why,
        source=source,
    )


def unit_of(metric: str) -> str:
    """The unit of an InferenceX metric (process_result.py: latencies in seconds, throughput in
    tokens per second per GPU, interactivity in tokens per second per user)."""
    if "intvty" in metric:
        return "tok/s/user"
    if "tput" in metric:
        return "tok/s/gpu"
    return "s" if "ttft" in metric or "e2el" in metric or "tpot" in metric else ""


def _eval(row: Mapping[str, Any], *, source: str, seq: int) -> Iterator[Sample]:
    model = str(row["model"]).rsplit("/", 1)[-1].lower()
    meta = {**row, "infmax_model_prefix": model}
    series = config_key(meta)
    point = f"{str(row['task']).lower()} {point_of(meta)}"
    run_id = str(row.get("source") or row.get("timestamp") or "")
    image = Image(ref=f"eval-run:{run_id.rsplit('/', 1)[0]}")
    when = stamp(row.get("timestamp")) or seq
    score: Any = row.get("score")
    se: Any = row.get("score_se")
    ok = finite(score) is not None
    status, note = OK, "no image recorded; identified by its eval run"
    if not ok:
        status, note = AMBIGUOUS, "score is not a number"
    elif score == 0:
        status, note = FAILED, "score 0.0: the eval failed (recorded as 0)"
    elif not 0 < float(score) <= 1:
        status, note = AMBIGUOUS, f"score {score} outside (0, 1]: percent or fraction?"
    yield Sample(
        series=series,
        point=point,
        metric=str(row.get("score_name") or "score"),
        kind=ACCURACY,
        better=HIGHER,
        unit="fraction",
        image=image,
        run=run_id,
        seq=when,
        status=status,
        value=float(score) if ok else None,
        se=finite(se) if status == OK else None,
        note=note,
        source=source,
    )


def acceptance_samples(
    row: Mapping[str, Any], *, source: str, run: str, series: str
) -> Iterator[Sample]:
    """Measured acceptance per draft position (`synthetic_acceptance_rates.json`)."""
    drafts = row.get("num_drafts")
    accepted = row.get("accepted_per_position")
    if not isinstance(drafts, int) or drafts <= 0 or not isinstance(accepted, dict):
        return
    for position, count in sorted(accepted.items()):
        ok = isinstance(count, int) and 0 <= count <= drafts
        yield Sample(
            series=series,
            point=f"draft position {position}",
            metric="acceptance_rate",
            kind=ACCEPTANCE,
            better=HIGHER,
            unit="fraction",
            image=Image(ref=f"run:{run}"),
            run=run,
            seq=0,
            status=OK if ok else AMBIGUOUS,
            value=count / drafts if ok else None,
            note="" if ok else f"accepted {count!r} of {drafts} drafts is not a count",
            source=source,
        )


def _dig(row: Mapping[str, Any], path: tuple[str, ...]) -> object:
    node: object = row
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def stamp(text: object) -> int | None:
    """Milliseconds since the epoch from an ISO time or InferenceX's `YYYYMMDD-HHMMSS`."""
    if not isinstance(text, str):
        return None
    when = instant.parse_or_none(text)  # RFC 3339: the one parser of instants
    if when is not None:
        return instant.milliseconds(when)
    try:  # InferenceX's own run-id spelling, UTC
        return int(datetime.strptime(text, "%Y%m%d-%H%M%S").replace(tzinfo=UTC).timestamp() * 1000)
    except ValueError:
        return None
