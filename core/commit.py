"""A commit as read from git: the one record the precision diff, its git I/O and the notes share.

`validate.precision.gitio` fills it from `git log` (every field it reads), the precision report
writes and reads it back, and `changelog.notes` holds the part a release note quotes (sha, subject,
PR, upstream repository). Fields a source does not read keep their empty defaults; each writer
serialises only the fields its own format has (the field order is the precision report's). A
commit relpipe *writes* (a fixture repository's history) is a different thing:
`images.fixture_repo.CommitSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Commit:
    """One commit. side: 'new' (only in NEW) or 'old' (only in OLD) of `git log OLD...NEW`."""

    sha: str
    parents: tuple[str, ...] = ()
    side: str = "new"
    author: str = ""
    date: str = ""  # author date, ISO 8601
    subject: str
    type: str | None = None  # the subject's normalised kind (fix, feat, ...); None: not read
    scope: str | None = None  # the subject's scope (`fix(moe): ...` -> moe)
    pr: int | None = None  # the pull request it came from (a squash `(#N)` or merge subject)
    files: tuple[str, ...] = ()  # the paths it touched (merges list none: their branches do)
    body: str = ""
    repo: str | None = None  # the upstream repository `pr` belongs to (`ROCm/ATOM`), when known

    @property
    def merge(self) -> bool:
        return len(self.parents) > 1
