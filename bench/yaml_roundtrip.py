"""Why configs are edited by character span, not by a YAML round-trip library: the measurement.

    pip install ruamel.yaml && python bench/yaml_roundtrip.py [AMD_MASTER_YAML]

On the real InferenceX `configs/amd-master.yaml` (default: in $RELPIPE_CORPUS, else in
../shared/data/inferencex, as tests/corpus.py) this prints, for ruamel.yaml's round-trip mode
with quotes preserved:
the lines a load + dump with no change rewrites, and the lines an image bump of each ATOM key
rewrites; then the same bump through `changelog.configs.pin.edit_image`. The guarantee relpipe
keeps is the last line: exactly one line per bump (one `-`, one `+`). Not a `bench_*` module:
`nox -s bench` does not install ruamel.yaml, which relpipe no longer depends on (docs/images.md).
"""

from __future__ import annotations

import difflib
import io
import os
import sys
import time
from pathlib import Path

import yaml

from relpipe.changelog.configs.pin import edit_image

NEW = "rocm/atom-dev:nightly_202610070333"


def _default() -> Path:
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "inferencex"
    return Path(os.environ.get("RELPIPE_CORPUS", data)) / "amd-master.yaml"


def changed(a: str, b: str) -> int:
    """Lines removed plus lines added between two texts."""
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), n=0, lineterm="")
    return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def main(argv: list[str]) -> int:
    from ruamel.yaml import YAML

    text = Path(argv[0] if argv else _default()).read_text(encoding="utf-8")
    keys = [
        k
        for k, v in yaml.safe_load(text).items()
        if isinstance(v, dict) and "atom" in str(v.get("image", ""))
    ]
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096

    def dump(data: object) -> str:
        out = io.StringIO()
        rt.dump(data, out)
        return out.getvalue()

    t0 = time.perf_counter()
    noop = dump(rt.load(text))
    seconds = time.perf_counter() - t0
    print(
        f"ruamel.yaml round trip, no change: {changed(text, noop)} lines rewritten "
        f"({seconds:.2f} s)"
    )
    for key in keys:
        data = rt.load(text)
        data[key]["image"] = NEW
        ours, _ = edit_image(text, key, NEW)
        print(
            f"{key}: ruamel.yaml {changed(text, dump(data))} lines, span edit {changed(text, ours)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
