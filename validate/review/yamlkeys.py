"""Duplicate mapping keys in the YAML files a review reads (the `yaml-keys` check).

PyYAML keeps the last of two equal keys silently, so a recipe with `max-num-seqs` twice runs the
second and a reader sees the first. Masters are loaded strictly (a duplicate is an error that
used to stop the review with exit 2); here every duplicate, in a master, a recipe of a key in
scope or the changelog, is a FAIL with its file and line, and so is a config key defined in two
master files (InferenceX's `load_config_files` raises "Duplicate configuration keys found" on
that merge), with both files' lines. Masters the review loaded are not scanned again: the strict
loader already refused two equal keys at any depth in them. Found from PyYAML's event stream in
one pass (no construction, so anchors and aliases cost nothing), for scalar keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from ...core.check import Evidence, Judgement, judged
from ...core.status import FAIL, NA, PASS, WARN
from .context import Review, plural
from .scope import master_paths


@dataclass(frozen=True, kw_only=True)
class Duplicate:
    line: int
    key: str
    first: int  # the line of the key's first definition


@dataclass
class _Level:
    mapping: bool
    expect_key: bool = True
    seen: dict[str, int] | None = None


def duplicates(text: str) -> tuple[list[Duplicate], str | None]:
    """Every repeated scalar key of every mapping, or why the text is not YAML."""

    found: list[Duplicate] = []
    stack: list[_Level] = []
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def value_done() -> None:
        if stack and stack[-1].mapping:
            stack[-1].expect_key = not stack[-1].expect_key

    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if stack and stack[-1].mapping and stack[-1].expect_key:
                    stack[-1].expect_key = False  # a complex key: not compared
                stack.append(_Level(isinstance(event, yaml.MappingStartEvent), seen={}))
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                stack.pop()
                value_done()
            elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                top = stack[-1] if stack else None
                if top is not None and top.mapping and top.expect_key and top.seen is not None:
                    key = str(getattr(event, "value", "*alias"))
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    if key in top.seen and key != "<<":
                        found.append(Duplicate(line=line, key=key, first=top.seen[key]))
                    top.seen.setdefault(key, line)
                value_done()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return found, f"not YAML at line {mark.line + 1 if mark else '?'}"
    return found, None


def _files(review: Review) -> list[str]:

    paths = list(master_paths(review.source))
    paths += [u.path for _, u in review.uses() if u.path.endswith((".yaml", ".yml"))]
    if review.change is not None:
        paths += [p for p in review.change.paths if p.endswith((".yaml", ".yml"))]
    if review.source.exists(review.source.era.changelog):
        paths.append(review.source.era.changelog)
    return list(dict.fromkeys(paths))


def check_yaml_keys(review: Review) -> Judgement:
    rows: list[Evidence] = []
    fails = 0
    files = _files(review)
    for path in files:
        if path in review.masters.lines:
            continue  # loaded strictly (core.yamlload): no two equal keys at any depth
        text = review.source.text(path)
        if text is None:
            continue
        found, why = duplicates(text)
        changed = review.change.lines.get(path, frozenset()) if review.change else None
        for d in found:
            ours = changed is None or review.options.audit or d.line in changed
            note = "" if ours else "pre-existing: "
            fails += ours
            what = f"{note}duplicate key `{d.key}` (first at line {d.first})"
            rows.append(Evidence.at(path, d.line, what))
        if why:
            rows.append(Evidence(path, why))
    for key, (path1, line1), (path2, line2) in review.masters.across:
        lines = review.change.lines if review.change else None
        ours = (
            lines is None
            or review.options.audit
            or line1 in lines.get(path1, frozenset())
            or line2 in lines.get(path2, frozenset())
        )
        fails += ours
        note = "" if ours else "pre-existing: "
        what = f"{note}duplicate config key `{key}`, also at {path1}:{line1} (two master files)"
        rows.append(Evidence.at(path2, line2, what))
    if not files:
        return judged(NA, "no YAML file to read")
    if fails:
        first = next(r for r in rows if "duplicate" in r.what and "pre-existing" not in r.what)
        return judged(FAIL, f"{first.where}: {first.what}", rows)
    if rows:
        return judged(WARN, f"{plural(len(rows), 'finding')} to review", rows)
    return judged(PASS, f"no duplicate key in {plural(len(files), 'YAML file')}")


def check_master_fields(review: Review) -> Judgement:
    """Master fields relpipe does not know: the repository's own validator is the authority on
    its schema, so each is a WARN at its line (relpipe does not judge what it means; `relpipe
    doctor` lists it as drift), never a stop."""
    if not review.masters.lines:
        return judged(NA, "no master config read")
    rows = review.masters.unknown
    if rows:
        return judged(
            WARN,
            f"{rows[0].where}: {rows[0].what}; relpipe does not know its meaning (run `relpipe "
            "doctor`, or list it in .relpipe.toml [tool.relpipe] extra-fields)",
            rows,
        )
    return judged(PASS, f"every field of {plural(len(review.masters.configs), 'key')} is known")
