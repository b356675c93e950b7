"""Engine-patch waivers: `docs/waiver/<PR_NUMBER>.md`, and whether one is filled out.

docs/PR_REVIEW_CHECKLIST.md: the only exception to "does not patch the inference engine" is "a
patch covered by a filled-out waiver at docs/waiver/<PR_NUMBER>.md — named after the PR that
introduces the patch ..., stating what is patched, why the unmodified upstream image cannot run
this benchmark, the upstream PR/issue link, and the removal plan". A waiver covers the files it
names (path or file name, as docs/waiver/2508.md names its script and entrypoint).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import re2

from .rx import rx
from .source import Source

FIELDS: tuple[tuple[str, Any], ...] = (
    ("what is patched", re2.compile(r"(?i)what\s+(?:is|gets)\s+patched")),
    (
        "why the unmodified upstream image cannot run this benchmark",
        re2.compile(r"(?i)why\b[^\n]*(?:unmodified|upstream image|cannot run|can't run)"),
    ),
    (
        "upstream PR/issue link",
        re2.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:pull|issues)/\d+"),
    ),
    ("removal plan", re2.compile(r"(?i)removal\s+plan")),
)


def _word(name: str) -> str:
    """`name` not inside a longer file name (RE2 has no lookaround)."""
    return rf"(?:^|[^\w.-]){re2.escape(name)}(?:[^\w.-]|$)"


@dataclass(frozen=True, kw_only=True)
class Waiver:
    path: str
    number: int
    text: str
    missing: tuple[str, ...]

    def covers(self, path: str) -> bool:
        return (
            path in self.text or rx(_word(posixpath.basename(path))).search(self.text) is not None
        )


def load_waivers(source: Source) -> list[Waiver]:
    folder = source.era.waivers
    memo = source.memo.get(("waivers", folder))
    if isinstance(memo, list):
        return memo
    out: list[Waiver] = []
    for path in source.files(folder, (".md",)):
        m = rx(re2.escape(folder) + r"/(\d+)\.md").fullmatch(path)
        text = source.text(path)
        if not m or text is None:
            continue
        missing = tuple(name for name, pattern in FIELDS if not pattern.search(text))
        out.append(Waiver(path=path, number=int(m.group(1)), text=text, missing=missing))
    source.memo[("waivers", folder)] = out
    return out
