"""The notes catalog (`catalog.yaml`): glossary terms, verbatim names, display names, check names
and the EN/ZH phrase templates. Loaded once; the renderer and `validate.notes_check` both read it,
so what is written and what is checked come from one file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from ..errors import ChangelogError

LANGS = ("en", "zh")


@dataclass(frozen=True, kw_only=True)
class Catalog:
    glossary: tuple[tuple[str, str], ...]  # (English term, Chinese term)
    verbatim: tuple[str, ...]
    names: tuple[tuple[str, str], ...]  # identifier -> display name
    checks: tuple[tuple[str, str, str], ...]  # (id, en, zh)
    phrases: tuple[tuple[str, str, str], ...]  # (id, en, zh)

    def phrase(self, phrase_id: str, lang: str) -> str:
        for pid, en, zh in self.phrases:
            if pid == phrase_id:
                return en if lang == "en" else zh
        raise ChangelogError(f"notes catalog has no phrase {phrase_id!r}; reinstall relpipe")

    def check_name(self, check_id: str, lang: str) -> str:
        for cid, en, zh in self.checks:
            if cid == check_id:
                return en if lang == "en" else zh
        return check_id

    def display(self, name: str) -> str:
        return dict(self.names).get(name.lower(), name)


def _pairs(data: Any, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ChangelogError(
            f"notes catalog: {what} must map strings to strings; reinstall relpipe"
        )
    return tuple(data.items())


def _bilingual(data: Any, what: str) -> tuple[tuple[str, str, str], ...]:
    if not isinstance(data, dict):
        raise ChangelogError(f"notes catalog: {what} must be a mapping; reinstall relpipe")
    out = []
    for key, value in data.items():
        if not (
            isinstance(value, dict) and all(isinstance(value.get(lang), str) for lang in LANGS)
        ):
            raise ChangelogError(
                f"notes catalog: {what}.{key} needs en and zh strings; reinstall relpipe"
            )
        out.append((str(key), value["en"], value["zh"]))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def catalog() -> Catalog:
    text = (
        resources.files("relpipe.changelog.notes")
        .joinpath("catalog.yaml")
        .read_text(encoding="utf-8")
    )
    data = yaml.safe_load(text)
    verbatim = data.get("verbatim")
    if not isinstance(verbatim, list) or not all(isinstance(v, str) for v in verbatim):
        raise ChangelogError("notes catalog: verbatim must be a list of strings; reinstall relpipe")
    return Catalog(
        glossary=_pairs(data.get("glossary"), "glossary"),
        verbatim=tuple(verbatim),
        names=_pairs(data.get("names"), "names"),
        checks=_bilingual(data.get("checks"), "checks"),
        phrases=_bilingual(data.get("phrases"), "phrases"),
    )
