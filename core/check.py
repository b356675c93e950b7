"""A check and its result: the one record every checklist returns (qualification C1..C12, review).

A check is declared once, with its id and title, on the function that decides it:

    CHECKS = Checklist[Outcome]()

    @CHECKS.declare("C1", "digest verified")
    def check_digest(o: Outcome) -> Judgement:
        return judged(PASS, "digest verified by re-hashing the manifest", rows)

The function returns a `Judgement` (status, one-line reason, evidence); calling the declared check
returns the `Check` record, which carries the id and title from the declaration. No title table
exists beside the declarations, so no check can lack its title. `core.checkrender` renders
checks as text, Markdown, HTML and JSON for every command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .status import Status

S = TypeVar("S")  # what a checklist's checks look at (a qualification outcome, a review)


@dataclass(frozen=True, order=True, slots=True)
class Evidence:
    """One fact a check was decided on: where (`path:line`, or a name) and what is there."""

    where: str
    what: str

    @classmethod
    def at(cls, path: str, line: int, what: str) -> Evidence:
        return cls(f"{path}:{line}" if line else path, what)

    def __iter__(self) -> Iterator[str]:
        # A row unpacks as `where, what`: renderers and readers of older tuple rows stay simple.
        return iter((self.where, self.what))


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """What a check function decided, before its declaration names it."""

    status: Status
    reason: str
    evidence: tuple[Evidence, ...] = ()


def judged(
    status: Status, reason: str, evidence: Iterable[Evidence | tuple[str, str]] = ()
) -> Judgement:
    """A Judgement with evidence rows (`Evidence` or `(where, what)` pairs) de-duplicated in
    first-seen order: every row is kept (JSON readers see them all; Markdown may cap them)."""
    rows = (e if isinstance(e, Evidence) else Evidence(*e) for e in evidence)
    return Judgement(status=status, reason=reason, evidence=tuple(dict.fromkeys(rows)))


@dataclass(frozen=True, kw_only=True)
class Check:
    """One check's result: its declared id and title, a status, a one-line reason, evidence."""

    id: str
    title: str
    status: Status
    reason: str
    evidence: tuple[Evidence, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON every report writes: evidence rows as `[where, what]` pairs."""
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "reason": self.reason,
            "evidence": [[e.where, e.what] for e in self.evidence],
        }


@dataclass(frozen=True, kw_only=True)
class Declared(Generic[S]):
    """A declared check: id, title, the function that judges a subject, and whether it is cheap
    and local enough to run in a commit hook (`relpipe review --fast`)."""

    id: str
    title: str
    judge: Callable[[S], Judgement] = field(repr=False)
    fast: bool = False

    def __call__(self, subject: S) -> Check:
        return self.result(self.judge(subject))

    def result(self, judgement: Judgement) -> Check:
        return Check(
            id=self.id,
            title=self.title,
            status=judgement.status,
            reason=judgement.reason,
            evidence=judgement.evidence,
        )


def declare(
    id: str, title: str, judge: Callable[[S], Judgement], *, fast: bool = False
) -> Declared[S]:
    """Check `id` titled `title`, judged by `judge` (a line of a checklist)."""
    return Declared(id=id, title=title, judge=judge, fast=fast)


class Checklist(Generic[S]):
    """The ordered checks of one kind; declaring a check with an id already present is an error."""

    def __init__(self, *checks: Declared[S]) -> None:
        self._checks: dict[str, Declared[S]] = {}
        for check in checks:
            self.add(check)

    def declare(
        self, id: str, title: str, *, fast: bool = False
    ) -> Callable[[Callable[[S], Judgement]], Declared[S]]:
        """Decorator: declare the function as check `id` (appended to this checklist)."""

        def add(judge: Callable[[S], Judgement]) -> Declared[S]:
            return self.add(declare(id, title, judge, fast=fast))

        return add

    def add(self, check: Declared[S]) -> Declared[S]:
        if check.id in self._checks:
            raise ValueError(f"check {check.id!r} is declared twice")
        self._checks[check.id] = check
        return check

    def remove(self, id: str) -> None:
        del self._checks[id]

    def __getitem__(self, id: str) -> Declared[S]:
        return self._checks[id]

    def __contains__(self, id: object) -> bool:
        return id in self._checks

    def __iter__(self) -> Iterator[Declared[S]]:
        return iter(tuple(self._checks.values()))

    def __len__(self) -> int:
        return len(self._checks)

    def ids(self) -> tuple[str, ...]:
        return tuple(self._checks)

    def run(self, subject: S) -> tuple[Check, ...]:
        return tuple(check(subject) for check in self)
