"""The `Entry` record: the one declaration of a perf-changelog entry's fields.

Each field's kind, YAML spelling (the attribute's, with `-`), whether it is required (it has no
default), its allowed values, which of its rules InferenceX leaves to house style, and its place
in a written entry are declared here, on the field; `FIELDS` is that table, from which the
schema (schema.py), the renderer (render.py) and both whole-entry grammars (grammar.py) are built.
"""

from __future__ import annotations

from ...core.record import Record
from .fields import CHOICES, COUNT, FLAG, KEYS, TEXTS, URL, Field, declared
from .fields import spec as _spec

_EXCLUSIVE = ("evals-only", "all-evals", "eval-min-prefill-ep")


class Entry(Record):
    """One perf-changelog entry, validated by `validate_entry`; flags default to absent/false."""

    # Attributes in the constructor's order (required first); the number after the kind is the
    # field's place in a written entry (the real corpus's order: scenario-type comes second).
    # An empty key: ChangelogEntry accepts it; the config-key resolution rejects it.
    config_keys: tuple[str, ...] = _spec(
        KEYS, 0, hint="list the master-config keys, one `- key` per line", lenient=("blank-item",)
    )
    description: tuple[str, ...] = _spec(
        TEXTS, 2, hint='write each description line as `- "text"`', lenient=("blank-item",)
    )
    pr_link: str = _spec(
        URL, 3, hint="write `pr-link: <repo-url>/pull/<N>`", lenient=("blank", "spaces")
    )
    scenario_type: tuple[str, ...] | None = _spec(
        CHOICES,
        1,
        allowed=("fixed-seq-len", "agentic-coding"),
        hint="write `scenario-type:` then `- fixed-seq-len`",
        lenient=("duplicate",),
        default=None,
    )
    evals_only: bool = _spec(FLAG, 4, default=False)
    all_evals: bool = _spec(FLAG, 5, default=False)
    append_only: bool = _spec(FLAG, 6, excludes=_EXCLUSIVE, default=False)
    eval_min_prefill_ep: int | None = _spec(COUNT, 7, default=None)
    # InferenceX 2026-10 (infx/); its 2026-08 model forbids it, and so does the hook for a
    # repository in a 2026-08 layout (validate/gate/hook.py).
    no_evals: bool = _spec(FLAG, 8, excludes=_EXCLUSIVE, default=False)


FIELDS: tuple[Field, ...] = declared(Entry)
BY_KEY = {f.key: f for f in FIELDS}
KEY_ORDER = tuple(f.key for f in FIELDS)
REQUIRED_KEYS = tuple(f.key for f in FIELDS if f.required)
FLAG_KEYS = tuple(f.key for f in FIELDS if f.kind == FLAG)
SCENARIO_TYPES = BY_KEY["scenario-type"].allowed
ENTRY_START = f"- {FIELDS[0].key}:"

__all__ = ["BY_KEY", "ENTRY_START", "FIELDS", "FLAG_KEYS", "KEY_ORDER", "REQUIRED_KEYS", "Entry"]
