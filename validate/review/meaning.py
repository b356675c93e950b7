"""Whether an edit changes what a benchmark runs: a comment-only or whitespace-only edit of a
launch script, a recipe or a master block does not, so it needs no changelog entry
(`changelog-required`); a real change of a command, flag, environment variable or value does.

- shell scripts: the syntax tree as bash reads it (tree-sitter-bash, `review.bash.parse_tree`)
  without its comments: the same tokens in the same order is the same script (whitespace inside
  a quoted string is a token's text, so it counts; indentation and blank lines do not);
- YAML (recipes, master blocks): the strict loader's values, so comments, indentation style and
  quoting that gives the same value are the same;
- anything else, or a text either side that cannot be read: a change (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import tree_sitter

from ...changelog.configs.load import load_yaml
from ...changelog.errors import ChangelogError
from .bash import parse_tree

_SHELL = (".sh", ".bash")
_YAML = (".yaml", ".yml")


def same_meaning(path: str, before: str | None, after: str | None) -> bool:
    """True when `before` and `after` of `path` differ only in comments or whitespace."""
    if before is None or after is None:
        return False
    if before == after:
        return True
    if path.endswith(_SHELL):
        first, second = _tokens(before), _tokens(after)
        return first is not None and first == second
    if path.endswith(_YAML):
        return same_yaml(before, after, path)
    return False


def same_yaml(before: str, after: str, path: str) -> bool:
    """Both texts load (strictly) to equal values."""
    try:
        return _load(before, path) == _load(after, path)
    except ChangelogError:
        return False


def _load(text: str, path: str) -> Any:
    return load_yaml(text, path)


def _tokens(text: str) -> list[tuple[str, bytes]] | None:
    """The leaves of the script's syntax tree but its comments, or None when it is not read
    whole (an error region, or over the parser's budget)."""
    tree = parse_tree(text)
    if tree is None or tree.root_node.has_error:
        return None
    return list(_leaves(tree.root_node))


def _leaves(root: tree_sitter.Node) -> Iterator[tuple[str, bytes]]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0:
            yield node.type, node.text or b""
            continue
        stack.extend(reversed(node.children))
