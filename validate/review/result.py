"""What a review check returns: a status, a one-line reason and file:line evidence.

The same shape as qualification's checks (`relpipe.pipeline.verdict.Check`); this layer cannot
import the pipeline, so the command converts. Statuses are the same four words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_EVIDENCE = 40  # rows per check in the Markdown comment (JSON keeps every row)


@dataclass(frozen=True, order=True)
class Evidence:
    """One fact: where (`path:line`, or a name) and what was found there."""

    where: str
    what: str

    @classmethod
    def at(cls, path: str, line: int, what: str) -> Evidence:
        return cls(f"{path}:{line}" if line else path, what)


@dataclass(frozen=True, kw_only=True)
class Result:
    id: str
    status: str
    reason: str
    evidence: tuple[Evidence, ...] = ()


def result(cid: str, status: str, reason: str, evidence: Iterable[Evidence] = ()) -> Result:
    """A Result with evidence de-duplicated in first-seen order (all of it: a reader of
    `--json` sees every row; only the Markdown comment shows the first MAX_EVIDENCE)."""
    return Result(id=cid, status=status, reason=reason, evidence=tuple(dict.fromkeys(evidence)))


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
