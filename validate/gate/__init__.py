"""The perf-changelog gate: the `validate_perf_changelog` commit hook and what only it uses.

A commit hook's cost is mostly its start-up, so importing this package defers one import the
hook never needs: the standard library's `inspect`, which `dataclasses` imports at its top (about
a tenth of the hook's start-up, with `ast`, `dis` and `tokenize`) and uses only to write a
signature into a record class that has no docstring (every record on the hook's path has one).
Until something reads an attribute of it, `inspect` is a placeholder module; the first read loads
the real one, so nothing else can tell the difference (tests/validate/test_gate_startup.py).
tests/validate/test_perf_changelog.py holds the hook's append path to loading neither `inspect`
nor pathlib, typing, json or PyYAML.
"""

import sys
import types


class _Deferred(types.ModuleType):
    """A module that stands in `sys.modules` until one of its attributes is read."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        # The real module's spec, found without loading it: the import system reads it on every
        # `import inspect` (is it still initialising?), and find_spec gives it to its callers.
        from importlib.machinery import PathFinder

        self.__spec__ = PathFinder.find_spec(name)
        self.__loader__ = getattr(self.__spec__, "loader", None)

    def __getattr__(self, name: str) -> object:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]  # the import below then loads the real module
        real = __import__(self.__name__)  # (or finds it, loaded by an earlier read)
        self.__dict__.update(real.__dict__)  # whoever holds this placeholder now sees the real
        return getattr(real, name)


if "inspect" not in sys.modules:
    sys.modules["inspect"] = _Deferred("inspect")
