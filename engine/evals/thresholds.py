"""Eval thresholds in InferenceX's `thresholds.yaml` shape, read without PyYAML.

    default:            # task -> minimum score
      gsm8k: 0.90
    models:             # model-prefix -> task -> minimum score (exact model-prefix match)
      glm5.1:
        gsm8k: 0.93

engine/ cannot import PyYAML (it runs inside foreign images), so this is a strict reader of
exactly that shape: block mappings indented by two spaces, plain keys, numbers in [0, 1], `#`
comments and blank lines. Anything else (tabs, flow style, anchors, quotes, duplicate keys, a
deeper level) is refused with file:line. A file whose first non-blank character is `{` is read
as JSON of the same shape instead.

The lookup is InferenceX's (`utils/evals/validate_scores.py` `resolve_threshold`): the config
key's exact `model-prefix` under `models`, else `default`. Not a prefix match: `glm5.2` does not
inherit `glm5`'s 0.94, it gets the default 0.90, as InferenceX's CI judges it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ..errors import EngineError
from ..files import read_capped

MAX_BYTES = 1 << 20
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?\Z")


@dataclass(frozen=True)
class Thresholds:
    default: dict[str, float] = field(default_factory=dict)
    models: dict[str, dict[str, float]] = field(default_factory=dict)

    def lookup(self, task: str, model_prefix: str) -> tuple[float, str]:
        """(threshold, where it came from) for `task` and a model-prefix; EngineError if none
        applies. The prefix must equal a `models` key (InferenceX's exact lookup)."""
        if task in self.models.get(model_prefix, {}):
            return self.models[model_prefix][task], f"models.{model_prefix}.{task}"
        if task in self.default:
            return self.default[task], f"default.{task}"
        raise EngineError(
            f"no threshold for task {task!r} (model-prefix {model_prefix!r}): add default.{task}"
        )


def _fail(path: str, line: int, what: str) -> EngineError:
    return EngineError(
        f"{path}:{line}: {what} (thresholds use the InferenceX thresholds.yaml shape)"
    )


def _score(path: str, line: int, text: str) -> float:
    if not _NUMBER.match(text):
        raise _fail(path, line, f"threshold {text!r} is not a plain number")
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise _fail(path, line, f"threshold {value} is outside [0, 1]")
    return value


def parse_yaml(text: str, path: str = "<thresholds>") -> Thresholds:
    """Parse the strict YAML subset described in the module docstring."""
    default: dict[str, float] = {}
    models: dict[str, dict[str, float]] = {}
    section: str | None = None
    current: dict[str, float] | None = None
    seen_top: set[str] = set()
    for number, raw in enumerate(text.split("\n"), start=1):
        if "\t" in raw or "\r" in raw or "\x00" in raw:
            raise _fail(path, number, "tabs, carriage returns and NUL are not allowed")
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, sep, value = line.strip().partition(":")
        value = value.strip()
        if sep != ":" or not _KEY.match(key) or (value and not value[0].isdigit()):
            raise _fail(path, number, f"expected 'key:' or 'key: number', got {line.strip()!r}")
        if indent == 0:
            if key not in ("default", "models") or value:
                raise _fail(
                    path, number, f"top-level keys are 'default:' and 'models:', got {key!r}"
                )
            if key in seen_top:
                raise _fail(path, number, f"duplicate key {key!r}")
            seen_top.add(key)
            section, current = key, None
        elif indent == 2 and section == "default":
            if key in default:
                raise _fail(path, number, f"duplicate task {key!r}")
            default[key] = _score(path, number, value)
        elif indent == 2 and section == "models":
            if value or key in models:
                raise _fail(path, number, f"model {key!r} must be a new mapping of task: number")
            current = models[key] = {}
        elif indent == 4 and section == "models" and current is not None:
            if key in current:
                raise _fail(path, number, f"duplicate task {key!r}")
            current[key] = _score(path, number, value)
        else:
            raise _fail(path, number, "unexpected indentation")
    return Thresholds(default=default, models=models)


def parse_json(text: str, path: str = "<thresholds>") -> Thresholds:
    """The same shape as JSON."""
    try:
        data = json.loads(text, parse_constant=lambda c: math.nan)
    except json.JSONDecodeError as exc:
        raise _fail(path, exc.lineno, f"invalid JSON: {exc.msg}") from exc

    def scores(obj: object, where: str) -> dict[str, float]:
        if not isinstance(obj, dict):
            raise _fail(path, 1, f"{where} must be a mapping")
        out = {}
        for k, v in obj.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise _fail(path, 1, f"{where}.{k} must be a number in [0, 1]")
            out[str(k)] = float(v)
        return out

    if not isinstance(data, dict) or not set(data) <= {"default", "models"}:
        raise _fail(path, 1, "top level must be a mapping with 'default' and/or 'models'")
    raw_models = data.get("models", {})
    if not isinstance(raw_models, dict):
        raise _fail(path, 1, "models must be a mapping")
    return Thresholds(
        default=scores(data.get("default", {}), "default"),
        models={str(k): scores(v, f"models.{k}") for k, v in raw_models.items()},
    )


def load(path: str) -> Thresholds:
    """Read a thresholds file (YAML subset or JSON), capped at MAX_BYTES."""
    raw = read_capped(path, MAX_BYTES, "thresholds file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EngineError(f"thresholds file {path}: not UTF-8") from exc
    if text.lstrip().startswith("{"):
        return parse_json(text, path)
    return parse_yaml(text, path)
