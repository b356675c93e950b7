"""What a commit subject says: its PR number and its normalised type and scope.

Upstream subjects mix styles: conventional (`fix(moe): ...`, `feat!: ...`), bracketed (`[Fix] ...`,
`[feat](docker): ...`, `[ROCm][Perf] ...`), GitHub merges (`Merge pull request #12 from ...`) and
squash suffixes (`... (#2479)`). This module turns them into one vocabulary; it owns no git I/O
(`gitio` fills the `core.commit.Commit` record with what a subject says).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Spellings seen upstream -> the normalised type. Anything else is "other".
TYPES: dict[str, str] = {
    "fix": "fix",
    "fixes": "fix",
    "fixed": "fix",
    "bugfix": "fix",
    "bug": "fix",
    "hotfix": "fix",
    "feat": "feat",
    "feature": "feat",
    "features": "feat",
    "new": "feat",
    "add": "feat",
    "perf": "perf",
    "performance": "perf",
    "opt": "perf",
    "optim": "perf",
    "optimize": "perf",
    "refactor": "refactor",
    "refactoring": "refactor",
    "cleanup": "refactor",
    "docs": "docs",
    "doc": "docs",
    "documentation": "docs",
    "test": "test",
    "tests": "test",
    "testing": "test",
    "ut": "test",
    "ci": "ci",
    "build": "build",
    "docker": "build",
    "deps": "build",
    "chore": "chore",
    "misc": "chore",
    "style": "style",
    "lint": "style",
    "revert": "revert",
    "wip": "wip",
}

_PR_SUFFIX = re.compile(r"\(#(\d{1,7})\)")
_PR_MERGE = re.compile(r"^Merge pull request #(\d{1,7})\b")
_CONVENTIONAL = re.compile(r"^([A-Za-z]+)(?:\(([^()\n]{1,60})\))?!?:\s*")
_BRACKETS = re.compile(r"^(?:\[([^\[\]\n]{1,40})\]\s*)+")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,40})\]")
_BRACKET_SCOPE = re.compile(r"^\(([^()\n]{1,60})\)\s*:?\s*")


@dataclass(frozen=True)
class Subject:
    """What a subject line says about its commit."""

    type: str
    scope: str | None
    pr: int | None


def _normal(word: str) -> str | None:
    return TYPES.get(word.strip().lower())


def parse_subject(subject: str) -> Subject:
    """Type, scope and PR number of a commit subject (pure; never fails)."""
    text = subject.strip()
    pr = None
    merge = _PR_MERGE.match(text)
    if merge:
        return Subject("merge", None, int(merge.group(1)))
    suffixes = _PR_SUFFIX.findall(text)
    if suffixes:
        # Squash merges append the PR last; earlier ones are usually cherry-picked references.
        pr = int(suffixes[-1])
    if text.startswith(("Merge branch", "Merge remote-tracking branch", "Merge tag")):
        return Subject("merge", None, pr)
    if text.startswith('Revert "'):
        return Subject("revert", None, pr)
    conventional = _CONVENTIONAL.match(text)
    if conventional and _normal(conventional.group(1)):
        return Subject(_normal(conventional.group(1)) or "other", conventional.group(2), pr)
    brackets = _BRACKETS.match(text)
    if brackets:
        labels = _BRACKET.findall(brackets.group(0))
        kinds = [k for k in (_normal(label) for label in labels) if k]
        others = [label for label in labels if not _normal(label)]
        rest = _BRACKET_SCOPE.match(text[brackets.end() :])
        scope = rest.group(1) if rest else (others[0] if others else None)
        if kinds:
            return Subject(kinds[0], scope, pr)
        return Subject("other", scope, pr)
    return Subject("other", None, pr)
