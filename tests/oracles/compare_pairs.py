"""Oracle driver: how InferenceX's `utils/compare_results.py` pairs a result row with its baseline.

    python compare_pairs.py < rows.json

Reads a JSON list of rows; prints, per row, `{"left_out": ..., "key": ...}`: whether
compare_results.py leaves the row out (`scenario_type: agentic-coding`), and its baseline lookup
key: `build_config_params(row)` plus ISL, OSL and concurrency, as `main()` builds `query_params`.
Rows without ISL/OSL (AgentX aggregates, eval rows) are keyed with ISL = OSL = 0, eval rows with
the model name as the model prefix. compare_results.py
imports psycopg2 and tabulate at the top for its database and its table; neither is used by the
key, so stand-ins are registered before the import. Nothing of InferenceX is copied here.
"""

import json
import sys
import types

for name in ("psycopg2", "tabulate"):
    stub = types.ModuleType(name)
    stub.tabulate = None  # type: ignore[attr-defined]
    sys.modules[name] = stub

from compare_results import build_config_params  # noqa: E402


def key(row):
    left_out = row.get("scenario_type") == "agentic-coding"
    row = {"isl": 0, "osl": 0, **row}
    if "task" in row:
        row["infmax_model_prefix"] = row["model"].rsplit("/", 1)[-1]
    params = build_config_params(row)
    params.update(isl=int(row["isl"]), osl=int(row["osl"]), conc=int(row["conc"]))
    return {"left_out": left_out, "key": params}


def main():
    rows = json.load(sys.stdin)
    json.dump([key(r) for r in rows], sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
