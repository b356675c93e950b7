"""The review's inputs, gathered once: the repository version, the keys in scope and the change.

Checks are functions of a `Review` returning a `core.check.Judgement` (declared with their ids
and titles in `run.CHECKS`); they read files only through `review.source` (capped, symlink-safe)
and share parsed files through `source.memo`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...core.check import Evidence
from .scope import FileUse, KeyScope, Masters
from .source import Source


@dataclass(frozen=True, kw_only=True)
class Options:
    signoff: str | None = None  # sign-off comment text (--signoff)
    signoff_path: str = "sign-off"
    body: str | None = None  # PR body text (--body)
    body_path: str = "PR body"
    results: Path | None = None  # benchmark result files (--results)
    facts: Path | None = None  # release facts JSON for the notes check (--facts)
    pr: int | None = None  # the PR number, for docs/waiver/<PR>.md
    new_hardware: tuple[str, ...] = ("mi455x", "vr200", "rubin")
    established_hardware: tuple[str, ...] = (
        "h100",
        "h200",
        "b200",
        "b300",
        "gb200",
        "gb300",
        "mi300x",
        "mi325x",
        "mi355x",
    )
    review_date: str | None = None  # YYYY-MM-DD; default today (UTC)
    # --config-key/--all-keys audit everything; a change is judged on what it changes
    audit: bool = False


@dataclass(frozen=True, kw_only=True)
class Change:
    """A change under review: base and head labels, changed paths, changed lines per path."""

    base: str
    head: str
    paths: tuple[str, ...]
    lines: dict[str, frozenset[int]] = field(default_factory=dict)  # head line numbers


@dataclass(frozen=True, kw_only=True)
class Review:
    source: Source
    masters: Masters
    scopes: tuple[KeyScope, ...]
    change: Change | None = None
    base_source: Source | None = None
    options: Options = Options()

    def uses(self) -> Iterator[tuple[KeyScope, FileUse]]:
        for scope in self.scopes:
            for use in scope.files:
                yield scope, use

    def problems(self) -> list[Evidence]:
        """Files the review could not read (huge, binary, symlink out of the tree, ...)."""
        return [Evidence(p.path, p.reason) for p in self.source.problems.values()]

    def unresolved(self) -> list[Evidence]:
        rows = [u for scope in self.scopes for u in scope.unresolved]
        return [*rows, *self.problems()]


def plural(n: int, word: str) -> str:
    """`1 file`, `2 files`: counts in a check's reason."""
    return f"{n} {word}{'' if n == 1 else 's'}"
