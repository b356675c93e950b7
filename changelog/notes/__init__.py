"""Bilingual (English + Simplified Chinese) release notes from a release facts record.

Public surface: `ReleaseFacts` (`release.json`), `load_facts(path)`, `render(facts, lang)`,
`render_title(facts)`, `description_lines(facts)`, and the catalog (glossary) via `catalog()`.
"""

from __future__ import annotations

from .facts import ReleaseFacts
from .facts import load as load_facts
from .glossary import catalog
from .render import (
    LANG_CHOICES,
    ZH_HEADING,
    description_lines,
    render,
    render_title,
)

__all__ = [
    "LANG_CHOICES",
    "ZH_HEADING",
    "ReleaseFacts",
    "catalog",
    "description_lines",
    "load_facts",
    "render",
    "render_title",
]
