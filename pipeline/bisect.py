"""`relpipe bisect`: which nightly broke a config key, then which engine commits came with it.

1. GOOD and BAD are qualified first (`endpoints`): a BAD that passes or a GOOD that fails is
   refused in one line, because a search between them would name an image that is not the
   first bad one.
2. The nightly tags of the repository between GOOD and BAD (ordered as `relpipe nightly` orders
   them: by the timestamp in the tag) are searched by halves. A probe is a qualification of the
   tag with the key, judged bad when its verdict FAILs (C11/C12 compare it with the history, the
   other checks as always); the stage cache makes a probe that already ran free.
3. For the adjacent pair (last good, first bad): a qualification of the bad tag against the good
   one as baseline, whose precision diff (C5) lists the engine commits between them with the
   precision category of every file they touched.

Every verdict is journaled (`<state>/bisect/<id>.json`, written atomically), so an interrupted
bisect resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import jsonload
from ..core.files import write_atomic
from ..images.nightly import matching
from .errors import PipelineError

Judge = Callable[[str], bool]  # tag -> bad?


@dataclass(kw_only=True)
class Journal:
    """What a bisect has learned so far: tag -> bad, kept in one JSON file."""

    path: Path
    verdicts: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def open(cls, state: Path, key: str, good: str, bad: str) -> Journal:
        name = hashlib.sha256("\0".join((key, good, bad)).encode()).hexdigest()[:16]
        path = state / "bisect" / f"{name}.json"
        verdicts: dict[str, bool] = {}
        if path.is_file():
            try:
                data = jsonload.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                data = None
            if not isinstance(data, dict) or not all(isinstance(v, bool) for v in data.values()):
                raise PipelineError(f"{path} is not a bisect journal; remove it to start over")
            verdicts = dict(data)
        return cls(path=path, verdicts=verdicts)

    def record(self, tag: str, bad: bool) -> None:
        self.verdicts[tag] = bad
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self.verdicts, indent=2, sort_keys=True) + "\n")


def probe(
    tag: str,
    judge: Judge,
    journal: Journal,
    progress: Callable[[str], None],
    label: str,
) -> bool:
    """The verdict of `tag` (bad?), from the journal or by qualifying it (then journaled)."""
    if tag in journal.verdicts:
        bad = journal.verdicts[tag]
        progress(f"bisect: {label} {tag}: {_word(bad)} (journal)")
        return bad
    progress(f"bisect: {label} qualifying {tag} ...")
    bad = judge(tag)
    journal.record(tag, bad)
    progress(f"bisect: {label} {tag}: {_word(bad)}")
    return bad


def endpoints(
    tags: Sequence[str],
    judge: Judge,
    journal: Journal,
    progress: Callable[[str], None] = lambda line: None,
    name: Callable[[str], str] = str,
) -> None:
    """Qualify GOOD (the first tag) and BAD (the last) before searching between them; refuse in
    one line (exit 1) when GOOD fails or BAD passes."""
    good, bad = tags[0], tags[-1]
    if probe(good, judge, journal, progress, "GOOD:"):
        raise PipelineError(
            f"bisect refused: GOOD {name(good)} fails its qualification; give a GOOD that "
            "passes (see its report)",
            exit_code=1,
        )
    if not probe(bad, judge, journal, progress, "BAD:"):
        raise PipelineError(
            f"bisect refused: BAD {name(bad)} passes its qualification, so there is no first "
            "bad nightly between them; give a BAD that fails",
            exit_code=1,
        )


def plan(tags: Sequence[str], journal: Journal, name: Callable[[str], str] = str) -> list[str]:
    """What a bisect of `tags` will do, without qualifying anything (`--dry-run`)."""
    between = len(tags) - 2
    probes = between.bit_length()  # ceil(log2(between + 1)): halving a range of between + 1
    known = [t for t in tags if t in journal.verdicts]
    lines = [
        f"GOOD {name(tags[0])}, BAD {name(tags[-1])}: {between} nightly tag(s) between",
        "1. qualify GOOD and BAD (refused if GOOD fails or BAD passes)",
        f"2. search by halves: at most {probes} qualification(s) of "
        f"{', '.join(name(t) for t in tags[1:-1]) or 'none'}",
        "3. qualify the first bad nightly against the last good one: the engine commits between "
        "them with their precision categories",
    ]
    if known:
        lines.append(
            f"journal {journal.path}: "
            + ", ".join(f"{name(t)} {_word(journal.verdicts[t])}" for t in known)
        )
    return lines


def search(
    tags: Sequence[str],
    judge: Judge,
    journal: Journal,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[str, str]:
    """The adjacent (last good, first bad) pair of `tags` (oldest first; the first is known good,
    the last known bad), probing by halves and journaling every verdict."""
    if len(tags) < 2:
        raise PipelineError("bisect needs a good and a bad tag")
    lo, hi = 0, len(tags) - 1
    step = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        tag = tags[mid]
        step += 1
        left = (hi - lo - 1).bit_length()
        bad = probe(tag, judge, journal, progress, f"step {step} (~{left} left):")
        lo, hi = (lo, mid) if bad else (mid, hi)
    return tags[lo], tags[hi]


def _word(bad: bool) -> str:
    return "bad" if bad else "good"


def between(all_tags: Sequence[str], good: str, bad: str, pattern: str) -> list[str]:
    """GOOD, the nightlies strictly between it and BAD, and BAD, oldest first."""
    found = [t.tag for t in matching(all_tags, pattern)]
    for tag in (good, bad):
        if tag not in found:
            raise PipelineError(
                f"tag {tag!r} is not a nightly of this repository (pattern {pattern!r})"
            )
    lo, hi = found.index(good), found.index(bad)
    if lo >= hi:
        raise PipelineError(f"GOOD {good} must be older than BAD {bad}")
    return found[lo : hi + 1]


def commits_of(precision: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The engine commits of a precision diff with the categories of the files each touched."""
    if not precision or precision.get("status") != "ok":
        return []
    categories: dict[str, set[str]] = {}
    for f in precision.get("files") or []:
        for sha in f.get("commits") or []:
            if f.get("verdict") == "relevant":
                categories.setdefault(sha, set()).add(str(f.get("category") or "other"))
    return [
        {
            "sha": c.get("sha"),
            "subject": c.get("subject"),
            "pr": c.get("pr"),
            "categories": sorted(categories.get(str(c.get("sha")), set())) or ["not relevant"],
        }
        for c in precision.get("commits") or []
    ]
