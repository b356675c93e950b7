"""Oracle driver: InferenceX's own perf-changelog gate, many base -> head cases in one process.

Run with the oracle Python (tests/corpus.py), either on the 2026-08 tree (`utils/` and
`utils/matrix_logic` on sys.path) or, with `--e2e` first, on the 2026-10 tree
(`inferencex-e2e/` on sys.path, `infx.workflows.validate_perf_changelog`):

    python changelog_gate.py [--e2e] MASTER [MASTER ...] < cases.json > verdicts.json

Each case is {"base": b64, "head": b64, "pr": int|null, "all_evals": bool, "evals_only": bool,
"resolve": bool}. For each, it runs what InferenceX runs on a PR, imported from its tree:
the validator's strict checks (`parse_changelog` of base and head, `compare_entries`,
`validate_raw_change`, as the merge preparation applies them) and, on the 2026-08 tree, the
checks of `process_changelog.py` on the additions that do not need the sweep generator:
`ChangelogEntry`, append-only not mixed with regular entries nor with the eval modifiers, and
config keys resolved against the masters by `get_config_keys_from_master`. (The 2026-10 tree
lacks `infx.matrix.plan`, its successor: there the verdict is the validator's alone.)
Output: [[accepted, reason], ...].
Nothing of InferenceX is copied here; starting one process per case would cost ~1 s each.
"""

import base64
import importlib
import json
import sys

import yaml

E2E = sys.argv[1:2] == ["--e2e"]
validator = importlib.import_module(
    "infx.workflows.validate_perf_changelog" if E2E else "validate_perf_changelog"
)
_PARSED: dict = {}


def parse_changelog(raw: bytes, label: str) -> list:
    """InferenceX's parse_changelog, each distinct file parsed once (cases share their base;
    its pure-Python loader takes most of a second on the real file)."""
    if raw not in _PARSED:
        try:
            _PARSED[raw] = (validator.parse_changelog(raw, label), None)
        except Exception as exc:  # noqa: BLE001 - replayed below, for each case
            _PARSED[raw] = (None, exc)
    entries, error = _PARSED[raw]
    if error is not None:
        raise error
    return [dict(entry) for entry in entries]


def sweep_checks(case: dict, additions: list, master: dict) -> None:
    """process_changelog.py's checks of the additions (2026-08 tree only)."""
    from process_changelog import get_config_keys_from_master

    parsed = [validator.ChangelogEntry.model_validate(entry) for entry in additions]
    append_only = [entry.append_only for entry in parsed]
    if any(append_only) and not all(append_only):
        raise ValueError("append-only entries cannot share a sweep with regular entries")
    if any(append_only) and (case["all_evals"] or case["evals_only"]):
        raise ValueError("append-only sweeps cannot use all-evals or evals-only modifiers")
    if case["resolve"]:
        for entry in parsed:
            get_config_keys_from_master(entry.config_keys, master)


def verdict(case: dict, master: dict) -> list:
    base = base64.b64decode(case["base"])
    head = base64.b64decode(case["head"])
    try:
        base_entries = parse_changelog(base, "base perf-changelog.yaml")
        head_entries = parse_changelog(head, "head perf-changelog.yaml")
        additions, corrections = validator.compare_entries(base_entries, head_entries, case["pr"])
        validator.validate_raw_change(base, head, len(additions), corrections)
        if not E2E:
            sweep_checks(case, additions, master)
    except Exception as exc:  # noqa: BLE001 - any failure, a crash included, is a rejection in CI
        return [False, f"{type(exc).__name__}: {str(exc)[:300]}"]
    return [True, ""]


def main() -> None:
    # get_config_keys_from_master looks only at the masters' top-level keys; validating the
    # whole masters (load_config_files, ~4 s) has no bearing on a changelog verdict.
    master: dict = {}
    for path in sys.argv[1 + E2E :]:
        with open(path, "rb") as handle:
            master.update(yaml.load(handle, Loader=yaml.CSafeLoader))
    cases = json.load(sys.stdin)
    json.dump([verdict(case, master) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
