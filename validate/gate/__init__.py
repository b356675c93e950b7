"""The perf-changelog gate: the `validate_perf_changelog` commit hook and what only it uses.

A commit hook's cost is mostly its start-up, so the modules on its path import only the
standard library and PyYAML, and declare their records with `core.record.Record` instead of
dataclasses (whose `inspect` import alone was about a tenth of the hook's start-up).
tests/validate/test_gate_startup.py holds which modules the usual commit may load.
"""
