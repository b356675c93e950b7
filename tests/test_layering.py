"""DESIGN.md's one dependency rule, checked on the source: imports point down the layer list."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"pipeline", "changelog", "images", "engine", "validate"}
# package -> project packages it may import (besides itself)
ALLOWED = {
    "pipeline": {"validate", "changelog", "images", "engine"},
    "validate": {"changelog"},
    "changelog": set(),
    "images": set(),
    "engine": set(),
}
ENGINE_THIRD_PARTY = {"torch", "triton", "numpy"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_imports_point_down_the_layer_list() -> None:
    bad = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in _imports(path) & PACKAGES - {package} - allowed:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_engine_imports_only_stdlib_torch_triton_numpy() -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        for name in _imports(path) - stdlib - ENGINE_THIRD_PARTY - {"engine", "__future__"}:
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []
