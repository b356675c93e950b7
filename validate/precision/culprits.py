"""Culprit candidates of a regression: the engine commits between the last good and the first bad
run, each with its precision categories scoped to the series' model, most likely first.

The commits and their files come from one precision diff of the pair (`classify.diff`: one git
log, one batched read); which files lie on the model's path from `keypath`. A commit that changed
precision-relevant code on the model's path ranks above one whose relevant changes lie elsewhere
(another model, another engine's plugin), which ranks above one that changed nothing relevant;
within a rank, more on-path files first, then newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...core.commit import Commit
from ..errors import ValidateError
from . import keypath
from .classify import diff
from .report import FileChange, PrecisionReport


@dataclass(frozen=True, kw_only=True)
class Culprit:
    sha: str
    subject: str
    pr: int | None
    on_path: tuple[str, ...]  # precision categories of its relevant changes on the model's path
    elsewhere: tuple[str, ...]  # categories of its relevant changes off the path
    files: tuple[str, ...]  # its relevant files on the path


@dataclass(frozen=True, kw_only=True)
class Suspects:
    """The commits between two runs of a series, ranked; `reason` says why there are none."""

    series: str
    model: str
    good: str
    bad: str
    culprits: tuple[Culprit, ...] = ()
    reason: str = ""


class Finder:
    """Culprits of many regressions in one engine repository: each commit pair is diffed once and
    each (commit, model) path resolved once, however many series and points share them."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._reports: dict[tuple[str, str], PrecisionReport | str] = {}
        self._paths: dict[tuple[str, keypath.KeyConfig], keypath.KeyPath | str] = {}

    def find(self, good: str | None, bad: str | None, *, series: str) -> Suspects:
        """The ranked commits of `good..bad` for `series` (its model, draft and path)."""
        key = keypath.key_config(series)

        def suspects(reason: str = "", found: Sequence[Culprit] = ()) -> Suspects:
            return Suspects(
                series=series,
                model=key.model,
                good=good or "",
                bad=bad or "",
                culprits=tuple(found),
                reason=reason,
            )

        if not good or not bad:
            return suspects("an engine commit of one of the two runs is not recorded")
        if good == bad:
            return suspects("same engine commit: the image changed, not the engine")
        report = self._report(good, bad)
        if isinstance(report, str):
            return suspects(report)
        path = self._path(bad, key)
        if isinstance(path, str):
            return suspects(path)
        commits = [c for c in report.commits if c.side == "new"]
        return suspects(found=rank(commits, report.files, path))

    def _report(self, good: str, bad: str) -> PrecisionReport | str:
        if (good, bad) not in self._reports:
            try:
                self._reports[(good, bad)] = diff(self.repo, good, bad, scope="atom")
            except ValidateError as exc:
                self._reports[(good, bad)] = str(exc).splitlines()[0][:200]
        return self._reports[(good, bad)]

    def _path(self, bad: str, key: keypath.KeyConfig) -> keypath.KeyPath | str:
        if (bad, key) not in self._paths:
            try:
                self._paths[(bad, key)] = keypath.resolve(self.repo, bad, key)
            except ValidateError as exc:
                self._paths[(bad, key)] = str(exc).splitlines()[0][:200]
        return self._paths[(bad, key)]


def find(repo: Path, good: str | None, bad: str | None, *, series: str) -> Suspects:
    """The ranked commits of `good..bad` in the engine repository `repo` for `series`."""
    return Finder(repo).find(good, bad, series=series)


def rank(
    commits: list[Commit], files: tuple[FileChange, ...], path: keypath.KeyPath
) -> list[Culprit]:
    out = []
    for order, commit in enumerate(commits):
        mine = [f for f in files if f.verdict == "relevant" and commit.sha in f.commits]
        on, off = path.split(f.path for f in mine)
        culprit = Culprit(
            sha=commit.sha,
            subject=commit.subject,
            pr=commit.pr,
            on_path=_categories(mine, set(on)),
            elsewhere=_categories(mine, set(off)),
            files=tuple(on),
        )
        out.append((-len(on), -len(off), order, culprit))
    return [c for *_, c in sorted(out, key=lambda row: row[:3])]


def _categories(files: list[FileChange], paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted({f.category or "relevant" for f in files if f.path in paths}))
