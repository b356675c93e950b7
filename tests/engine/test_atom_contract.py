"""The ATOM op binding against ATOM's real sources (a clone of its history, read with `ast`).

`engine/adapters/atom.py: ATOM_OPS` names, for each op slot of the mono path, the module of ATOM
that holds the kernel and the positional parameters ATOM's own layer passes. Here those facts are
read from ATOM's code: the name is imported into that module from aiter, and ATOM's layer calls
it with exactly those arguments (`rmsnorm2d_fwd(x, weight, eps)`, `silu_and_mul(out, x)`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from relpipe.engine.adapters.atom import ATOM_OPS, OpBinding


def _module(repo: Path, module: str) -> ast.Module:
    return ast.parse((repo / (module.replace(".", "/") + ".py")).read_text())


def _imported_from_aiter(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "aiter"
        for alias in node.names
    }


def _calls(tree: ast.Module, name: str) -> list[list[str]]:
    """Positional argument sources of every call `name(...)` in the module."""
    return [
        [ast.unparse(a) for a in node.args]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


@pytest.mark.parametrize("binding", ATOM_OPS, ids=lambda b: b.name)
def test_binding_matches_atoms_own_call(atom_repo: Path, binding: OpBinding) -> None:
    tree = _module(atom_repo, binding.module)
    assert binding.attr in _imported_from_aiter(tree), f"{binding.module} lost {binding.attr}"
    calls = _calls(tree, binding.attr)
    assert list(binding.params) in calls, f"ATOM calls {binding.attr} as {calls}"


def test_atoms_layer_modules_are_where_the_docs_say(atom_repo: Path) -> None:
    """RMSNorm(dim, eps) and SiluAndMul() are the layers those kernels serve."""
    layernorm = _module(atom_repo, "atom.model_ops.layernorm")
    activation = _module(atom_repo, "atom.model_ops.activation")
    classes = {
        n.name: n for t in (layernorm, activation) for n in t.body if isinstance(n, ast.ClassDef)
    }
    init = next(f for f in classes["RMSNorm"].body if getattr(f, "name", "") == "__init__")
    assert [a.arg for a in init.args.args[:3]] == ["self", "dim", "eps"]
    forward = next(f for f in classes["SiluAndMul"].body if getattr(f, "name", "") == "forward")
    assert ["out", "x"] in _calls(ast.Module(body=[forward], type_ignores=[]), "silu_and_mul")


def test_the_names_relpipe_used_to_bind_do_not_exist(atom_repo: Path) -> None:
    """The old binding (`layernorm.rms_norm`, functional `silu_and_mul(x)`) is not ATOM's API."""
    layernorm = _module(atom_repo, "atom.model_ops.layernorm")
    defined = {n.name for n in layernorm.body if isinstance(n, ast.FunctionDef)}
    assert "rms_norm" not in defined and "rms_norm" not in _imported_from_aiter(layernorm)
    activation = _module(atom_repo, "atom.model_ops.activation")
    assert all(len(args) == 2 for args in _calls(activation, "silu_and_mul"))
