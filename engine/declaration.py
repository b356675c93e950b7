"""The payload's reader of the engine declarations (`engine/declarations/<name>.json`).

The declarations are data every layer reads (the host's typed reader is `relpipe.core.engines`;
docs/engine.md describes the format). This is the payload's own minimal copy of that reader: the
payload runs inside foreign images where only `relpipe/engine` is mounted, so it may import
neither the core nor PyYAML. It reads the parts the payload acts on (`probe`, `launch`) and
leaves the validation of the rest to the host. `RELPIPE_ENGINE_DECLARATIONS` adds folders, as
on the host.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from .errors import EngineError

DECLARATIONS_ENV = "RELPIPE_ENGINE_DECLARATIONS"
BUILTIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "declarations")
MAX_DECLARATION = 256 * 1024


def folders() -> tuple[str, ...]:
    extra = os.environ.get(DECLARATIONS_ENV, "")
    return (BUILTIN_DIR, *(p for p in extra.split(os.pathsep) if p))


@cache
def _load(where: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for folder in where:
        try:
            files = sorted(f for f in os.listdir(folder) if f.endswith(".json"))
        except OSError as exc:
            raise EngineError(f"{DECLARATIONS_ENV}: {folder}: {exc.strerror}") from None
        for file in files:
            path = os.path.join(folder, file)
            try:
                with open(path, "rb") as fh:
                    data = fh.read(MAX_DECLARATION + 1)
                doc = json.loads(data[:MAX_DECLARATION].decode("utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise EngineError(f"engine declaration {path}: unreadable ({exc})") from None
            name = doc.get("name") if isinstance(doc, dict) else None
            if not isinstance(name, str) or name != file[: -len(".json")] or name in found:
                raise EngineError(f"engine declaration {path}: a missing or repeated name")
            found[name] = doc
    return found


def names() -> tuple[str, ...]:
    """The declared engines, built-in first (in file-name order)."""
    return tuple(_load(folders()))


def load(name: str) -> dict[str, Any]:
    """The declaration of `name` as parsed JSON; EngineError naming the declared engines."""
    found = _load(folders())
    if name not in found:
        raise EngineError(f"unknown engine {name!r} (declared: {', '.join(found)})")
    return found[name]


def section(name: str, key: str) -> dict[str, Any]:
    """One object-valued section (`probe`, `launch`) of `name`'s declaration."""
    value = load(name).get(key)
    if not isinstance(value, dict):
        raise EngineError(f"engine declaration {name}: {key} must be an object")
    return value
