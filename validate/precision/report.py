"""The precision report: what the diff found (`PrecisionReport`, its files, watch and upstream
results), as JSON (`core.jsoncodec`, what run records store) and as Markdown for a PR.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core import jsoncodec, sanitize
from ...core.commit import Commit

VERDICTS = ("relevant", "cosmetic", "not-relevant")


# --- the report ---------------------------------------------------------------------------------


def commit_json(commit: Commit) -> dict[str, Any]:
    """A commit as the report writes it: what `git log` gave (not the body, nor the notes'
    upstream repo), with `merge` (derived from `parents`) before `files`. Read back by
    `core.jsoncodec`, which ignores `merge` and the report's `precision`."""
    out = jsoncodec.fields_to_json(commit, exclude=("files", "body", "repo"))
    return {**out, "merge": commit.merge, "files": list(commit.files)}


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """One changed file and what it means for precision."""

    path: str
    old_path: str | None
    status: str  # added modified deleted renamed copied type-changed
    category: str | None  # the rule that fired (or, when none fired, the first that matched)
    categories: tuple[str, ...]  # every rule that fired
    verdict: str  # relevant | cosmetic | not-relevant
    # The commits responsible for the verdict, newest first: for a relevant content-gated file,
    # those whose own change to it fires a rule; otherwise every commit in `touched_by`.
    commits: tuple[str, ...]
    touched_by: tuple[str, ...] = ()  # every commit that touched the file (under either name)
    reason: str
    binary: bool

    @classmethod
    def from_json(cls, data: object, *, where: str) -> FileChange:
        # Reports written before `touched_by` existed named every touching commit in `commits`.
        if isinstance(data, Mapping) and "touched_by" not in data:
            data = {**data, "touched_by": data.get("commits", ())}
        return jsoncodec.fields_from_json(cls, data, where=where)


@dataclass(frozen=True, kw_only=True)
class WatchResult:
    """Evidence for one watched file: unchanged | cosmetic | changed | missing."""

    label: str
    path: str
    state: str
    files: tuple[str, ...]  # changed files it matched (empty when unchanged)
    commits: tuple[str, ...]
    note: str


@dataclass(frozen=True, kw_only=True)
class UpstreamResult:
    """One upstream check: is the commit/PR in NEW, and is that what was asked."""

    kind: str
    ref: str
    why: str
    found: bool
    commit: str | None
    ok: bool


@dataclass(frozen=True, kw_only=True)
class PrecisionReport:
    """Everything `relpipe diff` knows about one pair; `to_json()` is the machine contract."""

    repo: str
    rules: str
    project: str | None
    scope: str | None
    old_ref: str
    new_ref: str
    old: str
    new: str
    ancestor: bool
    shallow: bool
    commits: tuple[Commit, ...]
    files: tuple[FileChange, ...]
    watch: tuple[WatchResult, ...]
    upstream: tuple[UpstreamResult, ...]

    def summary(self) -> dict[str, Any]:
        by_category: dict[str, dict[str, int]] = {}
        counts = dict.fromkeys(VERDICTS, 0)
        for f in self.files:
            counts[f.verdict] += 1
            if f.category:
                row = by_category.setdefault(f.category, dict.fromkeys(VERDICTS, 0))
                row[f.verdict] += 1
        return {
            "relevant": counts["relevant"],
            "cosmetic": counts["cosmetic"],
            "not-relevant": counts["not-relevant"],
            "files": len(self.files),
            "commits": len(self.commits),
            "by_category": dict(sorted(by_category.items())),
            "relevant_commits": list(self.relevant_commits()),
            "upstream_ok": all(u.ok for u in self.upstream),
        }

    def relevant_commits(self) -> tuple[str, ...]:
        """Commits responsible for a precision-relevant file (see `FileChange.commits`), in
        report order: a commit that only touched other lines of a content-gated file is not."""
        hit = {sha for f in self.files if f.verdict == "relevant" for sha in f.commits}
        return tuple(c.sha for c in self.commits if c.sha in hit)

    def commit_categories(self, sha: str) -> tuple[str, ...]:
        return self._categories_by_commit.get(sha, ())

    @functools.cached_property
    def _categories_by_commit(self) -> dict[str, tuple[str, ...]]:
        """The categories of the relevant files each commit is responsible for (one pass)."""
        found: dict[str, set[str]] = {}
        for f in self.files:
            if f.verdict == "relevant" and f.category:
                for sha in f.commits:
                    found.setdefault(sha, set()).add(f.category)
        return {sha: tuple(sorted(cats)) for sha, cats in found.items()}

    def to_json(self) -> dict[str, Any]:
        """The `relpipe diff --json` document: the fields, a schema number, each commit's
        precision categories and the summary (derived: `from_json` recomputes them)."""
        out = {"schema": 1, **jsoncodec.fields_to_json(self)}
        out["commits"] = [
            {**commit_json(c), "precision": list(self.commit_categories(c.sha))}
            for c in self.commits
        ]
        tail = {key: out.pop(key) for key in ("watch", "upstream")}
        return {**out, "summary": self.summary(), **tail}


# --- Markdown -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Untrusted text as one Markdown table cell (`core.sanitize.markdown`, uncapped)."""
    return sanitize.markdown(text, limit=None)


def _code(text: str) -> str:
    """A path or sha as inline code in a table cell (`|` escaped, as GFM tables need)."""
    return sanitize.markdown_code(text, limit=None, table=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(sha: str) -> str:
    return sha[:9]


def _pr_cell(report: PrecisionReport, pr: int | None) -> str:
    if pr is None:
        return ""
    label = _cell(f"{report.project}#{pr}" if report.project else f"#{pr}")
    return f"[{label}](https://github.com/{report.project}/pull/{pr})" if report.project else label


def _commit_cells(report: PrecisionReport, shas: Sequence[str]) -> str:
    by_sha = {c.sha: c for c in report.commits}
    cells = []
    for sha in shas:
        commit = by_sha.get(sha)
        pr = _pr_cell(report, commit.pr if commit else None)
        cells.append(f"{_code(_short(sha))}" + (f" ({pr})" if pr else ""))
    return ", ".join(cells)


def _file_commit_cells(report: PrecisionReport, f: FileChange) -> str:
    """A file's responsible commits, then (for a content-gated file) the ones that only touched
    other lines of it, so that nothing the log says is hidden."""
    others = [sha for sha in f.touched_by if sha not in f.commits]
    cells = _commit_cells(report, f.commits)
    return cells + (f"; also touched by {_commit_cells(report, others)}" if others else "")


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table (under `title` unless it is empty) and a blank line; nothing without rows.
    A column name ending in `:` is right-aligned (counts)."""
    if not rows:
        return []

    def row(cells: Iterable[object]) -> str:
        return "| " + " | ".join(str(cell) for cell in cells) + " |"

    align = "|" + "|".join("---:" if c.endswith(":") else "---" for c in columns) + "|"
    return [
        *([title, ""] if title else []),
        row(c.rstrip(":") for c in columns),
        align,
        *(row(r) for r in rows),
        "",
    ]


def render_markdown(report: PrecisionReport) -> str:
    """Tables a reviewer pastes into a PR: summary by category, relevant files, commits, watch."""
    s = report.summary()
    where = _cell(report.project or report.repo)
    lines = _md_head(report, s, where)
    lines += _table(
        "",
        ["category", "relevant:", "cosmetic:", "not relevant:"],
        [
            [_cell(category), row["relevant"], row["cosmetic"], row["not-relevant"]]
            for category, row in s["by_category"].items()
        ],
    )
    lines += _md_files(report)
    lines += _md_commits(report)
    lines += _md_watch(report)
    return "\n".join(lines)


def _md_head(report: PrecisionReport, s: dict[str, Any], where: str) -> list[str]:
    return [
        f"### Engine diff {_code(_short(report.old))} → {_code(_short(report.new))} ({where})",
        "",
        f"{_count(s['commits'], 'commit')}, {_count(s['files'], 'file')} changed"
        + (
            ""
            if report.ancestor
            else "; OLD is not an ancestor of NEW (commits only in OLD are marked *old*)"
        )
        + (
            "; the repository is a shallow clone, history may be incomplete"
            if report.shallow
            else ""
        )
        + f". Precision: **{s['relevant']} relevant**, {s['cosmetic']} cosmetic, "
        f"{s['not-relevant']} not relevant (rules: {_cell(report.rules)}).",
        "",
    ]


def _md_files(report: PrecisionReport) -> list[str]:
    # Not-relevant files are listed too when a rule matched their path (a content gate or scope
    # cleared them): that is the evidence a reviewer would otherwise argue by hand.
    return _table(
        "#### Precision files",
        ["file", "change", "category", "verdict", "commits", "why"],
        [
            [
                _code(f.path) + (f" (from {_code(f.old_path)})" if f.old_path else ""),
                f.status,
                _cell(f.category or ""),
                f.verdict,
                _file_commit_cells(report, f),
                _cell(f.reason),
            ]
            for f in report.files
            if f.verdict != "not-relevant" or f.category
        ],
    )


def _md_commits(report: PrecisionReport) -> list[str]:
    return _table(
        "#### Commits",
        ["commit", "PR", "type", "subject", "precision"],
        [
            [
                _code(_short(c.sha)) + (" *old*" if c.side == "old" else ""),
                _pr_cell(report, c.pr),
                _cell(c.type or "") + (" (merge)" if c.merge else ""),
                _cell(c.subject),
                _cell(", ".join(report.commit_categories(c.sha))),
            ]
            for c in report.commits
        ],
    )


def _md_watch(report: PrecisionReport) -> list[str]:
    """The watch list and the upstream checks."""
    lines = _table(
        "#### Watch list (evidence of what did not change)",
        ["watched", "state", "changed in", "note"],
        [
            [
                _code(w.label) if w.label == w.path else _cell(w.label),
                f"**{w.state}**",
                _commit_cells(report, w.commits),
                _cell(w.note),
            ]
            for w in report.watch
        ],
    )
    lines += _table(
        "#### Upstream watch",
        ["check", "ref", "found", "result", "why"],
        [
            [
                u.kind,
                _cell(u.ref),
                _code(_short(u.commit)) if u.commit else "no",
                "ok" if u.ok else "**FAIL**",
                _cell(u.why),
            ]
            for u in report.upstream
        ],
    )
    return lines
