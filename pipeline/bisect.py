"""`relpipe bisect`: which nightly broke a config key, then which engine commits came with it.

1. The nightly tags of the repository between GOOD and BAD (ordered as `relpipe nightly` orders
   them: by the timestamp in the tag) are searched by halves. A probe is a qualification of the
   tag with the key, judged bad when its verdict FAILs (C11/C12 compare it with the history, the
   other checks as always); the stage cache makes a probe that already ran free.
2. For the adjacent pair (last good, first bad): a qualification of the bad tag against the good
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

from relpipe.core import jsonload
from relpipe.core.files import write_atomic
from relpipe.pipeline.errors import PipelineError

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
        if tag in journal.verdicts:
            bad = journal.verdicts[tag]
            progress(f"bisect: step {step} (~{left} left): {tag}: {_word(bad)} (journal)")
        else:
            progress(f"bisect: step {step} (~{left} left): qualifying {tag} ...")
            bad = judge(tag)
            journal.record(tag, bad)
            progress(f"bisect: step {step}: {tag}: {_word(bad)}")
        lo, hi = (lo, mid) if bad else (mid, hi)
    return tags[lo], tags[hi]


def _word(bad: bool) -> str:
    return "bad" if bad else "good"


def between(all_tags: Sequence[str], good: str, bad: str, pattern: str) -> list[str]:
    """GOOD, the nightlies strictly between it and BAD, and BAD, oldest first."""
    from relpipe.images.nightly import matching

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
