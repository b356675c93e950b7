"""Oracle driver: InferenceX's own sweep generator, once for a whole master, entries per key.

Run with the oracle Python (tests/corpus.py) and `utils/matrix_logic` on sys.path:

    python sweep_points.py RUNNERS MASTER [MASTER ...]

It imports `generate_sweep_configs` from the InferenceX tree and calls its `test-config` path
(what `process_changelog.py` runs for a changelog entry: `--no-evals`, no filters) for each key
on its own, so every generated matrix entry is attributed to its key. Output: JSON
{key: [matrix entry, ...]} on stdout. Nothing of InferenceX is copied here.
"""

import argparse
import json
import sys

from generate_sweep_configs import generate_test_config_sweep
from validation import load_config_files, load_runner_file


def main() -> None:
    runners, masters = sys.argv[1], sys.argv[2:]
    configs = load_config_files(masters)
    runner_data = load_runner_file(runners)
    out = {}
    for key in configs:
        args = argparse.Namespace(
            config_keys=[key],
            conc=None,
            seq_lens=None,
            scenario_type=None,
            runner_node_filter=None,
        )
        out[key] = generate_test_config_sweep(args, configs, runner_data)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
