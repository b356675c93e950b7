"""Oracle driver: InferenceX's own `process_changelog.py`, many cases in one process.

Run with the oracle Python (tests/corpus.py) and `utils/` + `utils/matrix_logic` on sys.path:

    python process_changelog_cases.py < cases.json > verdicts.json

Each case is {"cwd": a checkout of the case's head, "argv": process_changelog.py's arguments}.
For each, it runs `process_changelog.main()` as InferenceX's CI does (cwd at the checkout, git
for the diff and the base's generation inputs), except that its `python3
utils/matrix_logic/generate_sweep_configs.py ...` subprocesses run `generate_sweep_configs.main()`
in this process with the same arguments, cwd and captured stdout, and a failure becomes the
CalledProcessError a failing subprocess gives. That saves three Python start-ups with pydantic
per case; a generator script whose bytes differ from the imported one (a base with another
generator) still runs as a real subprocess. Loading the masters and the runner file (with their
pydantic validation) is memoized by the files' bytes, a pure function of them: cases share a
base. Output: [[accepted, last error line], ...].
Nothing of InferenceX is copied here.
"""

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import generate_sweep_configs
import process_changelog

_REAL_RUN = subprocess.run
_GENERATOR = Path(generate_sweep_configs.__file__).read_bytes()


def _run(cmd, *args, **kwargs):
    """subprocess.run, with the sweep generator run in-process when it is the same code."""
    if (
        isinstance(cmd, list)
        and len(cmd) > 2
        and cmd[0] == "python3"
        and cmd[1].endswith("generate_sweep_configs.py")
        and Path(cmd[1]).read_bytes() == _GENERATOR
    ):
        out, argv = io.StringIO(), sys.argv
        sys.argv = [cmd[1], *cmd[2:]]
        try:
            with contextlib.redirect_stdout(out):
                generate_sweep_configs.main()
        except SystemExit as exc:
            if exc.code:
                raise subprocess.CalledProcessError(2, cmd, out.getvalue(), str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a crashing subprocess, as CI sees it
            raise subprocess.CalledProcessError(1, cmd, out.getvalue(), repr(exc)) from None
        finally:
            sys.argv = argv
        return subprocess.CompletedProcess(cmd, 0, out.getvalue(), "")
    return _REAL_RUN(cmd, *args, **kwargs)


def _memoized(load):
    """`load(paths, ...)` memoized by the bytes of the files it reads (a deep copy each time:
    callers own their dicts); a failure is replayed as it was."""
    memo: dict = {}

    def wrapper(paths, *args, **kwargs):
        names = [paths] if isinstance(paths, str) else list(paths)
        try:
            key = (tuple(Path(n).read_bytes() for n in names), args, tuple(kwargs.items()))
        except OSError:
            return load(paths, *args, **kwargs)  # its own "does not exist" error
        if key not in memo:
            try:
                memo[key] = (load(paths, *args, **kwargs), None)
            except Exception as exc:  # noqa: BLE001 - replayed below
                memo[key] = (None, exc)
        value, error = memo[key]
        if error is not None:
            raise error
        return copy.deepcopy(value)

    return wrapper


def verdict(case: dict) -> list:
    os.chdir(case["cwd"])
    sys.argv = ["process_changelog.py", *case["argv"]]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            process_changelog.main()
    except subprocess.CalledProcessError as exc:
        return [False, f"CalledProcessError: {str(exc.stderr).strip()[-300:]}"]
    except Exception as exc:  # noqa: BLE001 - any failure, a crash included, is a rejection
        detail = traceback.format_exception_only(exc)[-1].strip()
        return [False, detail[:400]]
    return [True, ""]


def main() -> None:
    subprocess.run = _run  # process_changelog.py calls `subprocess.run` through the module
    configs = _memoized(generate_sweep_configs.load_config_files)
    process_changelog.load_config_files = configs
    generate_sweep_configs.load_config_files = configs
    generate_sweep_configs.load_runner_file = _memoized(generate_sweep_configs.load_runner_file)
    cases = json.load(sys.stdin)
    json.dump([verdict(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
