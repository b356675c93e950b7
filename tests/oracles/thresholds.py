"""Oracle driver: InferenceX's own threshold lookup (`utils/evals/validate_scores.py`).

    python thresholds.py THRESHOLDS_YAML TASK PREFIX [PREFIX ...]

Prints JSON {prefix: min_score} as `resolve_threshold(load_config(...), prefix, task, 0.85)`
returns it (0.85 is validate_scores' `--min-score` default). Imported from the InferenceX tree;
nothing of it is copied here.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "utils", "evals"))  # run from the tree's root

from validate_scores import load_config, resolve_threshold  # noqa: E402


def main() -> None:
    path, task, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
    config = load_config(path)
    out = {p: resolve_threshold(config, p, task, 0.85)[0] for p in prefixes}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
