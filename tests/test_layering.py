"""DESIGN.md's one dependency rule, checked on the source: imports point down the layer list.

Every layer is shipped as `relpipe.<layer>`; the core (`relpipe.core`) serves every layer except
the engine payload, which runs inside foreign images and imports only the standard library,
torch, triton and numpy. Infrastructure has one home: no module outside the core and the
payload's own copy (`engine/files.py`) renames files into place, takes a file lock or defines a
YAML loader.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"core", "pipeline", "changelog", "images", "engine", "validate"}
# layer -> project layers it may import (besides itself)
ALLOWED = {
    "pipeline": {"core", "validate", "changelog", "images", "engine"},
    "validate": {"core", "changelog"},
    "changelog": {"core"},
    "images": {"core"},
    "engine": set(),
    "core": set(),
}
ENGINE_THIRD_PARTY = {"torch", "triton", "numpy"}
CORE_THIRD_PARTY = {"yaml"}  # imported lazily, by the strict loader only
# (module attribute call, what it makes) that only the core and engine/files.py may contain
INFRASTRUCTURE = {("os", "replace"): "an atomic write", ("fcntl", "flock"): "a file lock"}
INFRASTRUCTURE_HOMES = {"core/files.py", "core/yamlload.py", "engine/files.py"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _from_module(node: ast.ImportFrom, path: Path) -> str | None:
    """The absolute module of `from M import ...` in `path`: the package's own imports are
    relative (`from ..core import files` in pipeline/x.py is relpipe.core)."""
    if node.level == 0:
        return node.module
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _imports(path: Path) -> set[str]:
    """Top-level names imported; `relpipe.X` counts as the layer X."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (module := _from_module(node, path)):
            modules = [module]
            if module == "relpipe":
                modules = [f"relpipe.{alias.name}" for alias in node.names]
        for module in modules:
            parts = module.split(".")
            names.add(parts[1] if parts[0] == "relpipe" and len(parts) > 1 else parts[0])
    return names


def _modules(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


def test_imports_point_down_the_layer_list() -> None:
    bad = []
    for layer, allowed in ALLOWED.items():
        for path in _modules(layer):
            for name in _imports(path) & LAYERS - {layer} - allowed:
                bad.append(f"{path.relative_to(ROOT)} imports relpipe.{name}")
    assert bad == []


def test_no_module_imports_a_layer_by_its_bare_folder_name() -> None:
    bad = []
    for layer in LAYERS:
        for path in _modules(layer):
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                bad += [
                    f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in LAYERS
                ]
    assert bad == []


def test_the_package_imports_its_own_modules_relatively() -> None:
    """`from ..core import files`, not `from relpipe.core import files`: the source tree has no
    relpipe/ folder of its own (only links), so tools that read it see the arrows between the
    layers' folders only through relative imports. Installed, every name is still relpipe.*."""
    bad = []
    for layer in LAYERS:
        for path in _modules(layer):
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                else:
                    continue
                rel = path.relative_to(ROOT)
                bad += [f"{rel}:{node.lineno}: {n}" for n in names if n.split(".")[0] == "relpipe"]
    assert bad == []


def test_the_layering_reads_relative_imports() -> None:
    """The rules above see a relative import as the module it names (they cannot pass by
    ignoring it)."""
    assert {"changelog", "core", "engine", "images", "validate"} <= _imports(
        ROOT / "pipeline" / "containers.py"
    )
    assert "precision" in _validate_uses(ROOT / "validate" / "review" / "run.py")


def test_engine_imports_only_stdlib_torch_triton_numpy() -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in _modules("engine"):
        for name in _imports(path) - stdlib - ENGINE_THIRD_PARTY - {"engine", "__future__"}:
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_core_imports_only_stdlib_and_pyyaml() -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in _modules("core"):
        for name in _imports(path) - stdlib - CORE_THIRD_PARTY - {"core", "__future__"}:
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_infrastructure_has_one_home() -> None:
    bad = []
    for layer in LAYERS:
        for path in _modules(layer):
            rel = path.relative_to(ROOT).as_posix()
            if rel in INFRASTRUCTURE_HOMES:
                continue
            for node in ast.walk(_tree(path)):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and (node.value.id, node.attr) in INFRASTRUCTURE
                ):
                    what = INFRASTRUCTURE[(node.value.id, node.attr)]
                    bad.append(f"{rel}:{node.lineno}: {what}; use relpipe.core.files")
                if isinstance(node, ast.ClassDef) and any(
                    "Loader" in ast.unparse(base) for base in node.bases
                ):
                    bad.append(f"{rel}:{node.lineno}: a YAML loader; use relpipe.core.yamlload")
    assert bad == []


# Subsystems of `validate/`: each reads on its own. subsystem -> the validate modules it may use.
VALIDATE_SUBSYSTEMS = {
    "gate": {"errors"},
    "precision": {"errors"},
    "review": {"errors", "precision", "golden_al", "notes_check"},
}


def _validate_uses(path: Path) -> set[str]:
    """`relpipe.validate.X...` imports of a module, as the set of X."""
    used: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and (module := _from_module(node, path)):
            parts = module.split(".")
            if parts[:2] == ["relpipe", "validate"]:
                used |= {parts[2]} if len(parts) > 2 else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[:2] == ["relpipe", "validate"] and len(parts) > 2:
                    used.add(parts[2])
    return used


def test_validate_subsystems_use_only_their_allowed_neighbours() -> None:
    bad = []
    for subsystem, allowed in VALIDATE_SUBSYSTEMS.items():
        for path in sorted((ROOT / "validate" / subsystem).rglob("*.py")):
            for name in _validate_uses(path) - allowed - {subsystem}:
                bad.append(f"{path.relative_to(ROOT)} uses relpipe.validate.{name}")
    assert bad == []


def test_no_validate_module_outside_a_subsystem_uses_the_gate() -> None:
    """The hook runs on every commit; nothing else in validate/ leans on its internals."""
    bad = []
    for path in sorted((ROOT / "validate").rglob("*.py")):
        rel = path.relative_to(ROOT / "validate").parts
        if rel[0] != "gate" and "gate" in _validate_uses(path):
            bad.append(str(path.relative_to(ROOT)))
    assert bad == []


def test_programs_start_only_through_core_process() -> None:
    """One process helper (no shell, timeouts that kill, capped output, one-line errors). The
    engine payload keeps its own calls: it runs in foreign images, without relpipe.core."""
    bad = []
    for layer in LAYERS - {"engine"}:
        for path in _modules(layer):
            rel = path.relative_to(ROOT).as_posix()
            if rel != "core/process.py" and "subprocess" in _imports(path):
                bad.append(f"{rel} imports subprocess; use relpipe.core.process")
    assert bad == []


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name == "dataclass"


def _keyword_only(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and any(
        k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in decorator.keywords
    )


def test_records_of_four_or_more_fields_are_keyword_only() -> None:
    """A record with four or more fields is built by keyword (issue 21: four strings in a row
    are easy to swap unnoticed); a positional construction of one is a TypeError."""
    bad = []
    for layer in sorted(LAYERS):
        for path in _modules(layer):
            for node in ast.walk(_tree(path)):
                if not isinstance(node, ast.ClassDef):
                    continue
                decorators = [d for d in node.decorator_list if _is_dataclass(d)]
                fields = [
                    item
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and "ClassVar" not in ast.unparse(item)
                ]
                if decorators and len(fields) >= 4 and not _keyword_only(decorators[0]):
                    rel = path.relative_to(ROOT).as_posix()
                    bad.append(f"{rel}:{node.lineno} {node.name} ({len(fields)} fields)")
    assert bad == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(["relpipe", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """Every relpipe module `tree` imports, at its top or inside a function (a deferred import
    is still a dependency); `from P import M` names the submodule P.M when there is one. Imports
    only a type checker reads (`if TYPE_CHECKING:`) are not dependencies at run time."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (module := _from_module(node, path)):
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
        visit(node)

    visit(_tree(path))
    return found & known


def import_graph() -> dict[str, set[str]]:
    """relpipe module -> the relpipe modules it imports (every layer)."""
    paths = {_module_name(path): path for layer in LAYERS for path in _modules(layer)}
    known = set(paths)
    return {name: _imported_modules(path, known) - {name} for name, path in paths.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycle() -> None:
    """Modules import each other one way: a cycle (validate.gate.hook's `main` importing the
    command line that imports it) makes the import order decide what works."""
    assert import_cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_is_replaced_in_sys_modules() -> None:
    """Start-up speed comes from the shape of a module, not from changing the whole process: no
    product module assigns to or deletes from `sys.modules` (the gate once put a placeholder
    `inspect` there for every process that imported it)."""
    bad = []
    for layer in sorted(LAYERS):
        for path in _modules(layer):
            for node in ast.walk(_tree(path)):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign | ast.Delete):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    if node.func.attr in {"pop", "update", "setdefault", "__setitem__", "clear"}:
                        targets = [node.func.value]
                for target in targets:
                    text = ast.unparse(target)
                    if text == "sys.modules" or text.startswith("sys.modules["):
                        bad.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}: {text}")
    assert bad == []


# The benchmark repository has one adapter (changelog/repository/): no other module of relpipe
# spells one of its paths. A string constant naming one (docstrings and comments aside) belongs
# in an era's declaration. `images/family_fixtures.py` builds an engine's source tree (vLLM's own
# `benchmarks/`), not the benchmark repository.
ADAPTER = "changelog/repository/"
NOT_THE_BENCHMARK_REPOSITORY = {"images/family_fixtures.py"}
BENCHMARK_PATHS = re.compile(
    r"((?<![\w./-])(?:configs|benchmarks|runners)/|\.github/configs|perf-changelog\.yaml"
    r"|golden_al_distribution|inferencex-e2e|srt-slurm-recipes|-master\.yaml|runners\.yaml"
    r"|thresholds\.yaml|MODELS\.md|PR_REVIEW_CHECKLIST|infx/)"
)


def _docstrings(tree: ast.Module) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def test_no_benchmark_repository_path_outside_the_adapter() -> None:
    bad = []
    for layer in LAYERS - {"engine"}:
        for path in _modules(layer):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ADAPTER) or rel in NOT_THE_BENCHMARK_REPOSITORY:
                continue
            tree = _tree(path)
            docs = _docstrings(tree)
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docs
                    and (found := BENCHMARK_PATHS.search(node.value))
                ):
                    bad.append(f"{rel}:{node.lineno}: {found.group(1)!r}")
    assert bad == []


def test_the_path_rule_sees_a_literal() -> None:
    """The rule above can fail: a constant of each kind is caught, a docstring is not."""
    code = (
        '"""configs/ in prose."""\nX = "inferencex-e2e/configs"\nY = f"{X}/perf-changelog.yaml"\n'
    )
    tree = ast.parse(code)
    docs = _docstrings(tree)
    hits = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        if BENCHMARK_PATHS.search(n.value)
    ]
    assert hits == ["inferencex-e2e/configs", "/perf-changelog.yaml"]


# A function-local import is for an optional heavy dependency (the extras) or says why it waits.
HEAVY = {"torch", "triton", "numpy", "httpx", "docker", "requests", "matplotlib", "jinja2", "rich"}
HEAVY |= {"psycopg", "ruamel"}
DEFERRED = "# deferred:"


def _local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function of `path` that is neither of a heavy
    module nor carries a `# deferred: <reason>` comment (on its lines or the line above)."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            if all(name.split(".")[0] in HEAVY for name in names):
                continue
            around = lines[max(node.lineno - 2, 0) : node.end_lineno]
            if not any(DEFERRED in line for line in around):
                found.append((node.lineno, ", ".join(names)))
    return found


def test_imports_are_at_the_top_of_modules() -> None:
    """Imports go at the top of a module; inside a function only an optional heavy dependency
    or one that says why it waits (start-up of the commit hook, an extra it loads)."""
    bad = [
        f"{path.relative_to(ROOT).as_posix()}:{line}: {name}"
        for layer in sorted(LAYERS)
        for path in _modules(layer)
        for line, name in _local_imports(path)
    ]
    assert bad == []


def test_the_import_rule_sees_a_local_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n    import json\n    import torch\n"
        "    import yaml  # deferred: the hook's start-up\n"
        "    # deferred: the pipeline's extra\n    from relpipe.images import registry\n"
    )
    assert _local_imports(source) == [(2, "json")]
