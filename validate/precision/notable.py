"""Which upstream commits a release names as notable: those whose change can matter to the
released model, judged by the precision categories of the files they touched.

A commit is left out when every file it touched is a recipe of another model (a file under a
`recipes/` folder names its model: `recipes/atom_sglang/MiniMax-M3.md` is minimaxm3's; ATOM's
rules file Markdown recipes as docs, so the folder decides) or is in a category that never
reaches the engine's code path (tests, docs, CI, coding-agent configuration). A recipe of the
released model keeps its commit. A commit whose files the diff does not know (a merge, a report
without files) stays in: nothing is dropped unjudged. A model named differently in a recipe
than in the config key (`dsv4` and `DeepSeek-V4`) is not matched: its recipe counts as another
model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from ...core.commit import Commit
from . import keypath
from .report import FileChange

QUIET = frozenset({"tests", "docs", "ci", "agents"})  # never on the engine's code path
RECIPES = "recipes"


def _norm(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def _quiet(change: FileChange, model: str | None) -> bool:
    path = PurePosixPath(change.path)
    if change.category == RECIPES or RECIPES in path.parts[:-1]:
        return not model or model not in _norm(path.stem)
    return change.category in QUIET


def notable(
    commits: Sequence[Commit], files: Sequence[FileChange], config_key: str | None
) -> tuple[Commit, ...]:
    """`commits` without those that touched only quiet files for `config_key`'s model."""
    model = _norm(keypath.key_config(config_key).model) if config_key else None
    touched: dict[str, list[FileChange]] = {}
    for change in files:
        for sha in change.touched_by or change.commits:
            touched.setdefault(sha, []).append(change)
    return tuple(
        c
        for c in commits
        if not touched.get(c.sha) or not all(_quiet(f, model) for f in touched[c.sha])
    )
