"""The gate package defers `inspect` (validate/gate/__init__.py): whatever reads the placeholder
gets the real module, so nothing but the hook's start-up can tell the difference."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import importlib.util, sys
import relpipe.validate.gate
assert type(sys.modules["inspect"]).__name__ == "_Deferred", "not deferred"
import inspect
held = inspect  # a module that imported it before its first use keeps this object
spec = importlib.util.find_spec("inspect")  # the real spec, without loading the module
assert spec is not None and spec.origin.endswith("inspect.py"), spec
assert type(sys.modules["inspect"]).__name__ == "_Deferred", "loaded by find_spec"
held.isclass(int)  # the first use loads it
real = sys.modules["inspect"]
assert type(real).__name__ == "module"
# A feature test on the placeholder after the load (hasattr of a missing name) finds nothing and
# leaves the one real module in place.
assert not hasattr(held, "no_such_function") and sys.modules["inspect"] is real
def f(a, *, b=1): ...
print(held.signature(f), held.isfunction(f), held.__name__, held.getmodule(f).__name__)
"""


def test_the_deferred_inspect_is_the_real_one_at_first_use() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(a,", "*,", "b=1)", "True", "inspect", "__main__"]


def test_an_interpreter_that_loaded_inspect_keeps_it() -> None:
    probe = (
        "import inspect, sys\nimport relpipe.validate.gate\n"
        "print(sys.modules['inspect'] is inspect)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr
