"""The master-config fields relpipe reads, per level, in every schema InferenceX has used.

The union of the 2026-08 validator (`utils/matrix_logic/validation.py`) and the 2026-10 one
(`infx/matrix/validation.py`: `srt-recipe-dir`, relative or full-path `srt-recipe` rows,
`eval-srt-recipe`, `pp`/`pcp-size`/`dcp-size`, `worker` and `num-nodes`, `hardware`, `power`).
A field not listed is a new rule relpipe would silently ignore, so `unknown_fields` reports it
with its file and line (and `relpipe doctor` compares this table with the repository's own
models). The runners file's levels are listed too (`labels:`, 2026-10's `clusters:`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

TOP = frozenset(
    {
        "image",
        "model",
        "model-prefix",
        "precision",
        "framework",
        "runner",
        "multinode",
        "disagg",
        "router",
        "kv-p2p-transfer",
        "srt-recipe-dir",
        "scenarios",
    }
)
SCENARIOS = frozenset({"fixed-seq-len", "agentic-coding"})
ARM = frozenset({"isl", "osl", "require-power", "search-space", "dram-utilization"})
# A worker's or a single-node item's parallelism (2026-10 added pp, dcp-size, pcp-size).
PARALLELISM = frozenset({"tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn"})
WORKER = PARALLELISM | {
    "num-worker",
    "hardware",
    "additional-settings",
    "batch-size",
    "max-num-tokens",
}
ITEM = PARALLELISM | {
    "spec-decoding",
    "srt-recipe",
    "eval-srt-recipe",
    "power",
    "worker",
    "prefill",
    "decode",
    "num-nodes",
    "kv-offloading",
    "kv-offload-backend",
    "router",
    "kv-p2p-transfer",
    "conc-start",
    "conc-end",
    "conc-list",
    "additional-settings",
}
COMPONENT = frozenset({"name", "version"})
RUNNERS_TOP = frozenset({"labels", "clusters"})
# Every name relpipe knows at any level (what `relpipe doctor` compares with the repository's
# own models' field aliases).
KNOWN = TOP | SCENARIOS | ARM | WORKER | ITEM | COMPONENT
_CHILDREN = ("worker", "prefill", "decode")  # WORKER-level mappings of a search-space item


# Before `scenarios` (InferenceX until about 2026-04, `eras/2026-01-15`, `eras/2026-03-30`): a
# top-level `seq-len-configs` list held the fixed-seq-len arms, in the same shape.
SEQ_LEN_CONFIGS = "seq-len-configs"


def scenarios_of(cfg: Mapping[str, Any]) -> Any:
    """A key's `scenarios` mapping; in the older schema, its `seq-len-configs` arms as the
    fixed-seq-len scenario (what InferenceX's generator of that time swept)."""
    scenarios = cfg.get("scenarios")
    if scenarios is None and isinstance(cfg.get(SEQ_LEN_CONFIGS), list):
        return {"fixed-seq-len": cfg[SEQ_LEN_CONFIGS]}
    return scenarios


def _walk(cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(dotted place, field) of every mapping key of one config key's block."""
    for name in cfg:
        yield "", str(name)
    scenarios = scenarios_of(cfg)
    if not isinstance(scenarios, Mapping):
        return
    for scenario, arms in scenarios.items():
        yield "scenarios", str(scenario)
        for arm in arms if isinstance(arms, list) else []:
            if not isinstance(arm, Mapping):
                continue
            yield from ((f"scenarios.{scenario}", str(k)) for k in arm)
            space = arm.get("search-space")
            for item in space if isinstance(space, list) else []:
                if not isinstance(item, Mapping):
                    continue
                yield from ((f"{scenario}.search-space", str(k)) for k in item)
                for child in _CHILDREN:
                    if isinstance(item.get(child), Mapping):
                        yield from ((f"search-space.{child}", str(k)) for k in item[child])


def _allowed(place: str) -> frozenset[str]:
    if place == "":
        return TOP
    if place == "scenarios":
        return SCENARIOS
    if place.startswith("scenarios."):
        return ARM
    if place.startswith("search-space."):
        return WORKER
    return ITEM


def unknown_fields(key: str, cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(place, field) of each field of `cfg` that no schema relpipe knows has at that place."""
    return [(place, name) for place, name in _walk(cfg) if name not in _allowed(place)]


def line_of(lines: list[str], start: int, field: str) -> int:
    """The first line at or after `start` (1-based) that writes `field:` (for error messages)."""
    pattern = re.compile(r"(?:^|[\s{,-])" + re.escape(field) + r"\s*:")
    for n in range(max(start, 1), len(lines) + 1):
        if pattern.search(lines[n - 1]):
            return n
    return start


def line_with(lines: list[str], start: int, text: str) -> int:
    """The first line at or after `start` (1-based) that contains `text` (a value's line)."""
    for n in range(max(start, 1), len(lines) + 1):
        if text in lines[n - 1]:
            return n
    return start
