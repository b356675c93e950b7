"""The points plan: the benchmark points a config key generates, exactly as InferenceX does.

One plan serves the notes' points count, verdict C10 and qualification. It follows InferenceX's
sweep generator (`utils/matrix_logic/generate_sweep_configs.py`, the `test-config` path that
`process_changelog.py` runs for a changelog entry, `--no-evals`, no filters):

* every `fixed-seq-len` entry (one per isl/osl pair: 1k1k and 8k1k are separate arms) and every
  `agentic-coding` entry, every `search-space` item of it, every concurrency of that item;
* concurrencies are `conc-list` as written (a repeated value is a repeated run, not merged), or
  `conc-start` doubling up to and including `conc-end` (the last step is clamped: 4..48 gives
  4, 8, 16, 32, 48);
* single-node items are identified by tp, pp, dcp-size, pcp-size, ep, dp-attn and
  spec-decoding (agentic ones also by kv-offloading and its backend); multinode items
  (`multinode: true`) by their prefill and decode workers (parallelism defaults filled in) and
  spec-decoding. A multinode fixed-seq-len item runs all its concurrencies in one allocation:
  that is still one point per concurrency here, as each one yields a result.

A point is a `PlannedPoint`: the generator's identifying fields (`fields`, named as the
generator's matrix entries name them, so a test compares them with the generator's own output)
and a readable unique `name`, e.g. `fixed-seq-len/8k1k/tp8-ep8-dpa/conc64`. Config text is
untrusted: malformed search spaces are ChangelogErrors naming the key, never tracebacks.

`matrix_rows` gives the same points as the generator's whole rows (image, model, runner,
`max-model-len`, the agentic DRAM offload budget from runners.yaml, component metadata, ...;
everything but `exp-name`), optionally for some scenarios only (`--scenario-type`): what
process_changelog.py compares between a base and a head for an append-only entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ...core import jsonload
from ..errors import ChangelogError
from .schema import scenarios_of

SCENARIOS = ("fixed-seq-len", "agentic-coding")
# Short names InferenceX gives sequence-length pairs (`seq_len_stoi`); others are `isl_osl`.
_SEQ_NAMES = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}
# Worker parallelism defaults the generator fills in (`with_worker_parallelism_defaults`).
_WORKER_DEFAULTS = {"pp": 1, "dcp-size": 1, "pcp-size": 1}
_MAX_POINTS_PER_ITEM = 4096  # a hostile conc-start/conc-end or list cannot explode the plan


@dataclass(frozen=True, kw_only=True)
class PlannedPoint:
    """One benchmark point of a config key."""

    key: str
    scenario: str  # fixed-seq-len | agentic-coding
    name: str  # unique within the key, e.g. "agentic-coding/tp8-mtp/conc4"
    concurrency: int
    # The generator's identifying fields of the point, JSON-normalised (nested workers as dicts).
    fields: Mapping[str, Any]

    def identity(self) -> str:
        """A canonical string of `fields` (for multiset comparison with the generator)."""
        return json.dumps(self.fields, sort_keys=True, separators=(",", ":"))


def _int(value: object, what: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ChangelogError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def concurrencies(arm: Mapping[str, Any], where: str) -> list[int]:
    """The concurrencies of one search-space item, in the generator's order.

    `conc-list` as written, else `conc-start` doubling, the last step clamped to `conc-end`.
    Exactly one of the two forms, as InferenceX's config validator requires.
    """
    values = arm.get("conc-list")
    if values is not None:
        if "conc-start" in arm or "conc-end" in arm:
            raise ChangelogError(f"{where}: give conc-list or conc-start/conc-end, not both")
        if not isinstance(values, list) or not values:
            raise ChangelogError(f"{where}: conc-list must be a non-empty list of integers")
        if len(values) > _MAX_POINTS_PER_ITEM:
            raise ChangelogError(f"{where}: conc-list has over {_MAX_POINTS_PER_ITEM} values")
        return [_int(v, f"{where}: conc-list value") for v in values]
    start = _int(arm.get("conc-start"), f"{where}: conc-start (or give conc-list)")
    end = _int(arm.get("conc-end"), f"{where}: conc-end")
    if start > end:
        raise ChangelogError(f"{where}: conc-start {start} is above conc-end {end}")
    out, conc = [], start
    while True:  # InferenceX: double, clamp the last step to conc-end, stop at conc-end
        out.append(conc)
        if conc == end or len(out) >= _MAX_POINTS_PER_ITEM:
            return out
        conc = min(conc * 2, end)


def _worker(arm: Mapping[str, Any], role: str, where: str) -> dict[str, Any]:
    worker = arm.get(role)
    if not isinstance(worker, dict):
        raise ChangelogError(f"{where}: a multinode item needs a `{role}` mapping")
    _int(worker.get("num-worker"), f"{where}: {role}.num-worker", minimum=0)  # 0: no decode pool
    _int(worker.get("tp"), f"{where}: {role}.tp")
    return _plain({**worker, **{k: worker.get(k, v) for k, v in _WORKER_DEFAULTS.items()}})


def _plain(value: Any) -> Any:
    """JSON-normalised copy (what the generator's JSON output holds)."""
    return jsonload.loads(json.dumps(value, default=str))


def _seq_name(isl: int, osl: int) -> str:
    return _SEQ_NAMES.get((isl, osl), f"{isl}_{osl}")


def _single_label(f: Mapping[str, Any]) -> str:
    label = f"tp{f['tp']}"
    label += "".join(
        f"-{short}{f[name]}"
        for name, short in (("pp", "pp"), ("dcp-size", "dcp"), ("pcp-size", "pcp"))
        if f[name] != 1
    )
    label += f"-ep{f['ep']}" if f["ep"] != 1 else ""
    label += "-dpa" if f["dp-attn"] else ""
    return label


def _worker_tag(worker: Mapping[str, Any], role: str) -> str:
    # The generator's own multinode tag: p<workers>x<tp>[ep<ep>][dpa]
    tag = f"{role}{worker['num-worker']}x{worker['tp']}"
    tag += f"ep{worker['ep']}" if worker.get("ep", 1) != 1 else ""
    return tag + ("dpa" if worker.get("dp-attn") else "")


def _offload_label(f: Mapping[str, Any]) -> str:
    backend = f.get("kv-offload-backend")
    name = backend.get("name") if isinstance(backend, dict) else backend
    return f"kv{f['kv-offloading']}" + (f"-{name}" if name else "")


def _walk(
    key: str, cfg: Mapping[str, Any], scenarios: Iterable[str] = SCENARIOS
) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any], dict[str, Any], str, str]]:
    """(scenario, scenario entry, search-space item, fields, label, name prefix) of each item
    of the given scenarios, in the generator's order; untrusted shapes are ChangelogErrors."""
    where = f"config key {key}"
    if not isinstance(cfg, Mapping):
        raise ChangelogError(f"{where}: must be a mapping")
    by_scenario = scenarios_of(cfg)
    if not isinstance(by_scenario, dict):
        raise ChangelogError(f"{where}: scenarios must be a mapping")
    multinode = cfg.get("multinode", False) is True
    unknown = [str(s) for s in by_scenario if s not in SCENARIOS]
    if unknown:  # InferenceX's config validator forbids them; its generator would skip them
        raise ChangelogError(
            f"{where}: unknown scenario {unknown[0]!r}; use {' or '.join(SCENARIOS)}"
        )
    for scenario in (s for s in SCENARIOS if s in scenarios):
        entries = by_scenario.get(scenario) or []
        if not isinstance(entries, list):
            raise ChangelogError(f"{where}: scenario {scenario} must be a list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("search-space"), list):
                raise ChangelogError(f"{where}: {scenario} entries need a search-space list")
            base: dict[str, Any] = {"scenario-type": scenario}
            prefix = scenario
            if scenario == "fixed-seq-len":
                isl = _int(entry.get("isl"), f"{where}: {scenario} isl")
                osl = _int(entry.get("osl"), f"{where}: {scenario} osl")
                base |= {"isl": isl, "osl": osl}
                prefix += f"/{_seq_name(isl, osl)}"
            for arm in entry["search-space"]:
                if not isinstance(arm, dict):
                    raise ChangelogError(f"{where}: {scenario} search-space items must be mappings")
                fields, label = _arm_fields(arm, scenario, multinode, f"{where}: {prefix}")
                yield scenario, entry, arm, base | fields, label, prefix


def plan_key(key: str, cfg: Mapping[str, Any]) -> tuple[PlannedPoint, ...]:
    """Every point InferenceX's generator produces for one config key, in its order."""
    out: list[PlannedPoint] = []
    used: dict[str, int] = {}
    for scenario, _entry, arm, fields, label, prefix in _walk(key, cfg):
        for conc in concurrencies(arm, f"config key {key}: {prefix} {label}"):
            name = f"{prefix}/{label}/conc{conc}"
            used[name] = used.get(name, 0) + 1
            if used[name] > 1:  # a repeated run keeps its own, stable name
                name += f"#{used[name]}"
            out.append(
                PlannedPoint(
                    key=key,
                    scenario=scenario,
                    name=name,
                    concurrency=conc,
                    fields={**fields, "conc": conc},
                )
            )
    return tuple(out)


def _arm_fields(
    arm: Mapping[str, Any], scenario: str, multinode: bool, where: str
) -> tuple[dict[str, Any], str]:
    spec = arm.get("spec-decoding", "none")
    fields: dict[str, Any] = {"spec-decoding": _plain(spec)}
    if multinode:
        prefill, decode = _worker(arm, "prefill", where), _worker(arm, "decode", where)
        fields |= {"prefill": prefill, "decode": decode}
        label = f"{_worker_tag(prefill, 'p')}-{_worker_tag(decode, 'd')}"
    else:
        fields |= {
            "tp": _int(arm.get("tp"), f"{where}: tp"),
            "pp": _int(arm.get("pp", 1), f"{where}: pp"),
            "dcp-size": _int(arm.get("dcp-size", 1), f"{where}: dcp-size"),
            "pcp-size": _int(arm.get("pcp-size", 1), f"{where}: pcp-size"),
            "ep": _int(arm["ep"], f"{where}: ep") if arm.get("ep") is not None else 1,
            "dp-attn": _plain(arm["dp-attn"]) if arm.get("dp-attn") is not None else False,
        }
        label = _single_label(fields)
    if scenario == "agentic-coding":
        # InferenceX requires it on single-node items (its validator rejects a config without
        # it); a draft config without it plans as "none", the multinode default.
        offload = arm.get("kv-offloading", "none")
        if not isinstance(offload, str):
            raise ChangelogError(f"{where}: kv-offloading must be a string (none, dram, ...)")
        fields["kv-offloading"] = offload
        if arm.get("kv-offload-backend") is not None:
            fields["kv-offload-backend"] = _plain(arm["kv-offload-backend"])
        label += f"-{_offload_label(fields)}" if offload != "none" else ""
    if spec != "none":
        label += f"-{spec}"
    return fields, label


# Top-level config fields every generated row carries, and the component metadata an item may
# set or inherit from its config (`component_metadata`).
_ROW_CONFIG_FIELDS = ("image", "model", "model-prefix", "precision", "framework", "runner")
_COMPONENT_FIELDS = ("router", "kv-p2p-transfer")
_AGENTIC_DURATION_S = 3600  # DEFAULT_AGENTIC_DURATION_SECONDS
_MAX_DRAM_MIB = 2_861_022  # MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB


def matrix_rows(
    key: str,
    cfg: Mapping[str, Any],
    *,
    scenarios: Iterable[str] = SCENARIOS,
    runners: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The rows the generator's `test-config --no-evals [--scenario-type ...]` emits for one
    key, one per point (`conc` an int), with every field but `exp-name`: what
    process_changelog.py compares between a base and a head for an append-only entry.

    `runners` (configs/runners.yaml) is needed only for agentic `kv-offloading: dram` items,
    whose `total-cpu-dram-gb` comes from the runner's hardware."""
    where = f"config key {key}"
    try:
        common = {name: _plain(cfg[name]) for name in _ROW_CONFIG_FIELDS}
    except KeyError as exc:
        raise ChangelogError(f"{where}: missing `{exc.args[0]}`") from None
    multinode = cfg.get("multinode", False) is True
    disagg = _plain(cfg.get("disagg", False))
    rows: list[dict[str, Any]] = []
    for scenario, entry, arm, fields, label, prefix in _walk(key, cfg, scenarios):
        row = {**common, **fields}
        if scenario == "fixed-seq-len":
            del row["scenario-type"]  # the generator's fixed-seq-len rows do not name it
            row |= {"max-model-len": row["isl"] + row["osl"] + 256, "disagg": disagg}
            row["run-eval"] = False
        else:
            row["total-cpu-dram-gb"] = _dram_gb(entry, arm, cfg, runners, f"{where}: {prefix}")
            row["duration"] = _AGENTIC_DURATION_S
            if multinode:
                row["disagg"] = disagg
        for name in _COMPONENT_FIELDS:
            value = arm.get(name, cfg.get(name))
            if value is not None:
                row[name] = _plain(value)
        for conc in concurrencies(arm, f"{where}: {prefix} {label}"):
            rows.append({**row, "conc": conc})
    return rows


def _dram_gb(
    section: Mapping[str, Any],
    arm: Mapping[str, Any],
    cfg: Mapping[str, Any],
    runners: Mapping[str, Any] | None,
    where: str,
) -> int:
    """`agentic_dram_offload_gb`: the node's capped DRAM scaled by utilization and GPU share."""
    if arm.get("kv-offloading", "none") != "dram":
        return 0

    runner = cfg.get("runner")
    hardware = runners.get("hardware") if isinstance(runners, Mapping) else None
    node = hardware.get(runner) if isinstance(hardware, Mapping) else None
    if not isinstance(node, Mapping):
        raise ChangelogError(f"{where}: runner {runner!r} has no hardware in the runners file")
    available = _int(node.get("available-cpu-dram-mib"), f"{where}: available-cpu-dram-mib")
    per_node = _int(node.get("gpus-per-node"), f"{where}: gpus-per-node")
    try:
        utilization = Decimal(str(section["dram-utilization"]))
    except (KeyError, InvalidOperation):
        raise ChangelogError(f"{where}: kv-offloading dram needs a dram-utilization") from None
    if isinstance(arm.get("prefill"), Mapping):  # multinode: the prefill worker's share
        worker = arm["prefill"]
        gpus = worker["tp"] * worker.get("pp", 1) * worker.get("pcp-size", 1)
        if gpus > per_node:
            if gpus % per_node:
                raise ChangelogError(f"{where}: prefill spans nodes unevenly")
            gpus = per_node
        elif per_node % gpus:
            raise ChangelogError(f"{where}: prefill does not divide gpus-per-node")
    else:
        gpus = arm["tp"] * arm.get("pp", 1) * arm.get("pcp-size", 1)
        if gpus > per_node:
            raise ChangelogError(f"{where}: needs {gpus} GPUs, over gpus-per-node {per_node}")
    share = Decimal(min(available, _MAX_DRAM_MIB)) * 1024 * 1024 * utilization * gpus / per_node
    return int(share / 1_000_000_000)


def plan_configs(
    configs: Mapping[str, Mapping[str, Any]], keys: Iterable[str] | None = None
) -> dict[str, tuple[PlannedPoint, ...]]:
    """Points of the given keys (default: all) of loaded master configs; unknown keys are errors."""
    wanted = list(configs) if keys is None else list(keys)
    missing = [k for k in wanted if k not in configs]
    if missing:
        raise ChangelogError(f"config keys not in the master configs: {', '.join(missing)}")
    return {k: plan_key(k, configs[k]) for k in wanted}


def count(key: str, cfg: Mapping[str, Any]) -> int:
    """How many points a config key generates."""
    return len(plan_key(key, cfg))
