"""Run INSIDE `relpipe doctor`'s isolated Python: the benchmark repository's own code on its data.

Not imported by relpipe: `relpipe doctor` runs this file with an interpreter that has the
repository's dependencies (pydantic, PyYAML) and reads its JSON answer. It imports only the
standard library and the repository's modules (found from the paths it is given):

    python doctor_probe.py < request.json > answer.json

request: {"project": DIR, "validator": FILE, "masters": [FILE], "runners": FILE,
          "cases": [{"base": b64, "head": b64, "pr": int|null}]}
answer:  {"verdicts": [[accepted, reason]], "fields": [alias], "fields_error": str|null,
          "masters_error": str|null, "masters_skipped": str|null, "masters_absent": bool,
          "points": {key: n}|null, "points_error": str|null}

masters_skipped: the matrix validation could not be imported (not compared); masters_absent:
the repository has no `srt_recipe_references` check (nothing to compare).

Each case is judged as InferenceX's PR gate does: `parse_changelog` of base and head,
`compare_entries`, `validate_raw_change` (any exception is a rejection, as in its CI).
"""

import base64
import importlib
import importlib.util
import json
import os
import sys
import typing
from types import ModuleType
from typing import Any


def _load_validator(path: str) -> ModuleType:
    """The repository's validator, imported by its name from its folder (on sys.path, as
    its own CI imports it), so the import system registers it for the models it defines."""
    name = os.path.splitext(os.path.basename(path))[0]
    module = importlib.import_module(name)
    if os.path.realpath(module.__file__ or "") != os.path.realpath(path):
        raise ImportError(f"{name} resolved to {module.__file__}, not {path}")
    return module


def _verdicts(validator: Any, cases: list[dict[str, Any]]) -> list[list[Any]]:
    parsed: dict[bytes, tuple[Any, Exception | None]] = {}

    def parse(raw: bytes, label: str) -> list[dict[str, Any]]:
        if raw not in parsed:
            try:
                parsed[raw] = (validator.parse_changelog(raw, label), None)
            except Exception as exc:  # noqa: BLE001 - replayed per case
                parsed[raw] = (None, exc)
        entries, error = parsed[raw]
        if error is not None:
            raise error
        return [dict(e) for e in entries]

    out = []
    for case in cases:
        base, head = base64.b64decode(case["base"]), base64.b64decode(case["head"])
        try:
            additions, corrections = validator.compare_entries(
                parse(base, "base"), parse(head, "head"), case["pr"]
            )
            validator.validate_raw_change(base, head, len(additions), corrections)
        except Exception as exc:  # noqa: BLE001 - any failure is a rejection in CI
            out.append([False, f"{type(exc).__name__}: {str(exc)[:300]}"])
            continue
        out.append([True, ""])
    return out


def _matrix_module() -> Any:
    for name in ("infx.matrix.validation", "validation"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("no matrix validation module (infx.matrix.validation, validation)")


def _model_fields(module: Any) -> list[str]:
    """Every field name (alias) of the master-config models, following nested models."""
    base = module.BaseModel
    seen: set[Any] = set()
    names: set[str] = set()
    todo: list[Any] = [
        cls
        for name, cls in vars(module).items()
        if name.endswith("MasterConfigEntry") and isinstance(cls, type)
    ]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for name, info in cls.model_fields.items():
            names.add(info.alias or name.replace("_", "-"))
            stack = [info.annotation]
            while stack:
                ann = stack.pop()
                if isinstance(ann, type) and issubclass(ann, base):
                    todo.append(ann)
                stack.extend(typing.get_args(ann))
    return sorted(names)


def _points(masters: list[str], runners: str) -> dict[str, int]:
    import argparse  # deferred: only for the repository's sweep generator, when it is present

    # deferred: the repository's own module, importable once main() put its folder on sys.path
    from generate_sweep_configs import generate_test_config_sweep  # type: ignore[import-not-found]

    module = _matrix_module()
    configs = module.load_config_files(masters)
    runner_data = module.load_runner_file(runners)
    out = {}
    for key in configs:
        args = argparse.Namespace(
            config_keys=[key], conc=None, seq_lens=None, scenario_type=None, runner_node_filter=None
        )
        entries = generate_test_config_sweep(args, configs, runner_data)
        out[key] = sum(len(e["conc"]) if isinstance(e["conc"], list) else 1 for e in entries)
    return out


def _attempt(fn: Any, *args: Any) -> tuple[Any, str | None]:
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - reported, never fatal
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def main() -> None:
    request = json.load(sys.stdin)
    project, validator_path = request["project"], request["validator"]
    here = os.path.dirname(validator_path)
    sys.path[:0] = [project, here, os.path.join(here, "matrix_logic")]
    os.chdir(project)
    validator = _load_validator(validator_path)
    answer: dict[str, Any] = {"verdicts": _verdicts(validator, request["cases"])}
    module, error = _attempt(_matrix_module)
    fields, fields_error = (None, error) if module is None else _attempt(_model_fields, module)
    answer.update(fields=fields or [], fields_error=fields_error)
    answer.update(masters_error=None, masters_skipped=error, masters_absent=False)
    if module is not None and hasattr(module, "srt_recipe_references"):
        import yaml  # deferred: the repository's environment has PyYAML; only this check reads it

        merged: dict[str, Any] = {}
        for path in request["masters"]:
            with open(path, "rb") as handle:
                merged.update(yaml.safe_load(handle) or {})
        _, answer["masters_error"] = _attempt(module.srt_recipe_references, merged)
    elif module is not None:
        answer["masters_absent"] = True
    answer["points"], answer["points_error"] = _attempt(
        _points, request["masters"], request["runners"]
    )
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
