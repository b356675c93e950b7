"""Run every bench/bench_*.py (or those named on the command line) and print their reports.

Each bench module exposes `main() -> list[str]`: Markdown lines with its measurements, the
reference measured in the same run, and the ratio against the DESIGN.md target. A bench that
misses its target prints MISS, and the whole run exits 1 (targets are claims, so they are checked).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    missed = 0
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"\n## {name}\n", flush=True)
        t0 = time.perf_counter()
        lines = module.main()
        for line in lines:
            print(line)
            missed += "MISS" in line
        print(f"\n({name}: {time.perf_counter() - t0:.1f}s)", flush=True)
    print(f"\nbench: {'all targets met' if not missed else f'{missed} target(s) missed'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main(sys.argv[1:]))
