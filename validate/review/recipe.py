"""srt-slurm recipes as they run: the effective settings of `CONFIG_FILE=recipes/X[:selector]`.

How the real recipes inherit (benchmarks/multi_node/srt-slurm-recipes/): a file is either one
recipe, or a `base:` block plus `override_<name>:` / `zip_override_<name>:` blocks. The master
config names a block with a selector: `file.yaml:override_x` deep-merges that block over `base`;
`file.yaml:zip_override_x[i]` does the same with every list in the block replaced by its i-th
element (the zipped axis). YAML merge keys (`<<: *anchor`) inherit inside a file. Every
effective leaf keeps the file and line it came from, so an inherited setting is reported at the
line of the `base` block that set it.

Untrusted input: anchors are followed by reference (no expansion of alias bombs), nesting
deeper than MAX_DEPTH or more than MAX_NODES visited is a `RecipeError` (a WARN in the checks).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2
import yaml

from ..errors import ValidateError

MAX_DEPTH = 48
MAX_NODES = 50_000  # the largest real recipe has a few thousand
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SELECTOR = re2.compile(r"^((?:zip_)?override_[A-Za-z0-9_.-]+)(?:\[(\d+)\])?$")


class RecipeError(ValidateError):
    """A recipe that cannot be resolved (bad YAML, bad selector, hostile nesting)."""


@dataclass(frozen=True)
class Leaf:
    """One effective setting: dotted path, scalar value as written, and where it was written."""

    path: str
    value: str
    line: int


@dataclass(frozen=True)
class Recipe:
    file: str
    selector: str | None
    leaves: tuple[Leaf, ...]

    def items(self) -> Iterator[Leaf]:
        return iter(self.leaves)


# A located tree: dict[str, Located] | list[Located] | (value, line)
Located = Any


def compose(text: str, what: str) -> Any:

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise RecipeError(f"{what}{where}: invalid YAML; not resolved") from None
    except RecursionError:
        raise RecipeError(f"{what}: nesting too deep; not resolved") from None


class _Budget:
    def __init__(self, what: str) -> None:
        self.what = what
        self.nodes = 0

    def tick(self, depth: int) -> None:
        self.nodes += 1
        if depth > MAX_DEPTH:
            raise RecipeError(f"{self.what}: nesting deeper than {MAX_DEPTH} levels; not resolved")
        if self.nodes > MAX_NODES:
            raise RecipeError(f"{self.what}: more than {MAX_NODES} YAML nodes; not resolved")


def locate(node: Any, budget: _Budget, depth: int = 0) -> Located:
    """A composed YAML node as a located tree (mappings with merge keys applied)."""

    budget.tick(depth)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Located] = {}
        merged: dict[str, Located] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for src in sources:
                    sub = locate(src, budget, depth + 1)
                    if isinstance(sub, dict):
                        for k, v in sub.items():
                            merged.setdefault(k, v)
                continue
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            out[key] = locate(value_node, budget, depth + 1)
        return {**merged, **out}
    if isinstance(node, yaml.SequenceNode):
        return [locate(item, budget, depth + 1) for item in node.value]
    if isinstance(node, yaml.ScalarNode):
        return (str(node.value), node.start_mark.line + 1)
    return ("", 0)


def _merge(base: Located, over: Located, depth: int = 0) -> Located:
    if depth > MAX_DEPTH:
        raise RecipeError(f"override nesting deeper than {MAX_DEPTH} levels")
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = _merge(base[key], value, depth + 1) if key in base else value
        return out
    return over


def _zip(block: Located, index: int, depth: int = 0) -> Located:
    """The i-th element of every list in an override block (scalars stay as they are)."""
    if depth > MAX_DEPTH:
        raise RecipeError(f"override nesting deeper than {MAX_DEPTH} levels")
    if isinstance(block, dict):
        return {k: _zip(v, index, depth + 1) for k, v in block.items()}
    if isinstance(block, list):
        if index >= len(block):
            raise RecipeError(f"zip index [{index}] is past a list of {len(block)} values")
        return block[index]
    return block


def flatten(tree: Located, prefix: str = "") -> Iterator[Leaf]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from flatten(value, f"{prefix}[{i}]")
    else:
        value, line = tree
        yield Leaf(prefix, value, line)


def located(text: str, file: str) -> dict[str, Located]:
    """The whole file as a located tree (parse once, select many times)."""
    what = f"recipe {file}"
    root = compose(text, what)
    tree = locate(root, _Budget(what)) if root is not None else {}
    if not isinstance(tree, dict):
        raise RecipeError(f"{what}: not a mapping; not resolved")
    return tree


def effective(tree: dict[str, Located], file: str, selector: str | None) -> Recipe:
    """The effective recipe of `file` (its located tree) under `selector` (module docstring)."""
    what = f"recipe {file}" + (f":{selector}" if selector else "")
    if selector is None:
        chosen = tree["base"] if "base" in tree and len(tree) >= 1 else tree
        return Recipe(file, None, tuple(flatten(chosen)))
    m = _SELECTOR.match(selector)
    if not m or m.group(1) not in tree:
        raise RecipeError(f"{what}: selector names no block of the file")
    block = tree[m.group(1)]
    if m.group(1).startswith("zip_"):
        if m.group(2) is None:
            raise RecipeError(f"{what}: a zip_override selector needs an index [i]")
        block = _zip(block, int(m.group(2)))
    base = tree.get("base", {})
    return Recipe(file, selector, tuple(flatten(_merge(base, block))))
