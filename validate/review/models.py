"""deprecated: no deprecated model, scenario or model-scenario pair, per MODELS.md.

Read from MODELS.md as written: the model support matrix (`Prefix`, `Active scenarios`,
`Deprecated scenarios`: an active cell starting with "None" is a retired model; a deprecated
scenario that is not also active is deprecated for that model; "all **bf16** recipes" is a
precision; "<scenario> non-X arm" deprecates that scenario's non-spec-decode arm), and the
Scenarios table ("**Deprecated for all models**"). While MODELS.md says the non-spec-decode
arms are "not yet enacted" (they still run), such an arm is a WARN citing both lines, not a FAIL.
Scenario words map to master configs as:
Agentic coding = `agentic-coding`, Single-turn AkBk = `fixed-seq-len` with isl A*1024, osl B*1024.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

import re2

from ...changelog.configs.schema import scenarios_of
from ...core.check import Evidence, Judgement, judged
from ...core.status import FAIL, NA, PASS, WARN
from .context import Review, plural
from .rx import rx
from .scope import KeyScope

_SEQ = re2.compile(r"(?i)single-turn\s+(\d+)k(\d+)k")


@dataclass(kw_only=True)
class Policy:
    retired: dict[str, int] = field(default_factory=dict)  # prefix -> MODELS.md line
    scenarios: dict[str, list[tuple[str, int]]] = field(
        default_factory=dict
    )  # prefix -> [(s, line)]
    nonspec: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    precisions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    everywhere: list[tuple[str, int]] = field(default_factory=list)  # deprecated for all models
    # "**Status: not yet enacted.** Every non-spec-decode agentic arm above still runs."
    arms_pending: int = 0  # its line, 0 when MODELS.md has no such note
    # Deprecation Notice: (prefix, scenario or precision, last day YYYY-MM-DD, line)
    dated: list[tuple[str, str, str, int]] = field(default_factory=list)


_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}  # fmt: skip - one table
_DAY_HEADING = re2.compile(r"#{2,4}\s+(?:\w+,\s+)?([A-Za-z]+)\s+(\d{1,2}),\s+(\d{4})\s*$")
_LAST_DAY = re2.compile(
    r"last day for the \*\*([^*]{1,80})\*\* scenario on [^(]{0,200}\(`([^`]{1,40})`\)"
)


def _heading_date(line: str) -> str | None:
    m = _DAY_HEADING.match(line[:200])
    if not m or m.group(1).lower() not in _MONTHS:
        return None
    return f"{m.group(3)}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"


def _dated(policy: Policy, row: dict[str, str], day: str, n: int) -> None:
    """A row of a dated Deprecation Notice table: `Model (`prefix`) | Deprecated | Remains`."""
    for prefix in rx(r"`([^`]+)`").findall(row.get("model", "")):
        cell = row.get("deprecated", "")
        for name in _scenario_names(cell):
            policy.dated.append((prefix, name, day, n))
        bf = rx(r"(?i)all \**(\w+)\** recipes").search(cell)
        if bf:
            policy.dated.append((prefix, bf.group(1).lower(), day, n))


def _outside_parens(cell: str) -> list[str]:
    """`cell` split at the commas outside parentheses, in one pass."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(cell):
        depth += (ch == "(") - (ch == ")" and depth > 0)
        if ch == "," and depth == 0:
            parts.append(cell[start:i])
            start = i + 1
    return parts + [cell[start:]]


def _scenario_names(cell: str) -> list[str]:
    out = [f"fixed-seq-len/{int(a) * 1024}/{int(b) * 1024}" for a, b in _SEQ.findall(cell)]
    if rx(r"(?i)agentic coding").search(cell):
        out.append("agentic-coding")
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(text: str) -> Policy:
    policy = Policy()
    header: list[str] = []
    day: str | None = None  # the date heading of the Deprecation Notice section being read
    for n, line in enumerate(text.splitlines(), start=1):
        if rx(r"(?i)not yet enacted").search(line) and rx(r"(?i)non-spec").search(line):
            policy.arms_pending = policy.arms_pending or n
        if line.startswith("#"):
            day = _heading_date(line)
        last = _LAST_DAY.search(line[:2000]) if day else None
        if last and day:
            for name in _scenario_names(last.group(1)):
                policy.dated.append((last.group(2), name, day, n))
        if not line.startswith("|"):
            header = []
            continue
        cells = _cells(line)
        if not header:
            header = [c.lower() for c in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        row = dict(zip(header, cells, strict=False))
        if day and "model" in row and "deprecated" in row and "remains" in row:
            _dated(policy, row, day, n)
        if "prefix" in row and "active scenarios" in row:
            prefixes = rx(r"`([^`]+)`").findall(row["prefix"])
            active, old = row["active scenarios"], row.get("deprecated scenarios", "")
            for prefix in prefixes:
                if active.lower().startswith("none"):
                    policy.retired[prefix] = n
                live = set(_scenario_names(rx(r"\([^)]*\)").sub("", active)))
                for part in _outside_parens(old):
                    arm = rx(r"(?i)non-\S+ arm").search(part)
                    for name in _scenario_names(part):
                        if arm:
                            policy.nonspec.setdefault(prefix, []).append((name, n))
                        elif name not in live:
                            policy.scenarios.setdefault(prefix, []).append((name, n))
                    bf = rx(r"(?i)all \**(\w+)\** recipes").search(part)
                    if bf:
                        policy.precisions.setdefault(prefix, []).append((bf.group(1).lower(), n))
        elif "scenario" in row and "status" in row:
            if "deprecated for all models" in row["status"].lower():
                policy.everywhere += [(s, n) for s in _scenario_names(row["scenario"])]
    return policy


def arms(scope: KeyScope) -> list[tuple[str, bool]]:
    """(scenario name, has a non-spec-decode item) per arm of the key."""
    out = []
    scenarios = scenarios_of(scope.config) or {}
    for kind, entries in scenarios.items() if isinstance(scenarios, Mapping) else []:
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, Mapping):
                continue
            name = str(kind)
            if kind == "fixed-seq-len":
                name = f"fixed-seq-len/{entry.get('isl')}/{entry.get('osl')}"
            items = [i for i in entry.get("search-space") or [] if isinstance(i, Mapping)]
            plain = any(str(i.get("spec-decoding", "none")) == "none" for i in items)
            out.append((name, plain))
    return out


def _today() -> str:

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


def check_deprecated(review: Review) -> Judgement:
    if not review.scopes:
        return judged(NA, "no config key in scope")
    models_md = review.source.era.models
    text = review.source.text(models_md)
    if text is None:
        return judged(NA, f"{models_md} is not in the repository")
    policy = parse(text)
    rows: list[Evidence] = []
    pending: list[Evidence] = []
    upcoming: list[Evidence] = []  # dated retirements whose last day has not passed
    for scope in review.scopes:
        prefix = str(scope.config.get("model-prefix", ""))
        precision = str(scope.config.get("precision", "")).lower()
        at = Evidence.at(scope.master, scope.line, scope.key)
        if prefix in policy.retired:
            rows += [at, Evidence.at(models_md, policy.retired[prefix], f"{prefix} is retired")]
            continue
        for name, line in policy.precisions.get(prefix, []):
            if name == precision:
                rows += [at, Evidence.at(models_md, line, f"{prefix} {precision} is deprecated")]
        today = review.options.review_date or _today()
        for who, name, last_day, line in policy.dated:
            hit = who == prefix and (name == precision or any(name == a for a, _ in arms(scope)))
            if hit and last_day < today:
                rows += [at, Evidence.at(models_md, line, f"{prefix} {name} ended {last_day}")]
            elif hit:
                upcoming += [
                    at,
                    Evidence.at(models_md, line, f"{prefix} {name} runs until {last_day}"),
                ]
        for arm, plain in arms(scope):
            for name, line in [*policy.everywhere, *policy.scenarios.get(prefix, [])]:
                if name == arm:
                    rows += [at, Evidence.at(models_md, line, f"{prefix} {arm} is deprecated")]
            for name, line in policy.nonspec.get(prefix, []):
                if name == arm and plain:
                    found = [at, Evidence.at(models_md, line, f"{prefix} {arm} non-spec arm")]
                    # models_md.md says these arms still run until the retirement is enacted.
                    (pending if policy.arms_pending else rows).extend(found)
    if rows:
        first = rows[0].what
        n = len({r.what for r in rows if r.where.startswith(review.source.era.masters)})
        return judged(
            FAIL,
            f"deprecated per {models_md}: {first} ({rows[1].what})"
            + (f" (+{n - 1} more keys)" if n > 1 else ""),
            [*rows, *upcoming, *pending],
        )
    if upcoming:
        why = f"{upcoming[0].what} is deprecated after its last day ({upcoming[1].what})"
        return judged(WARN, why, [*upcoming, *pending])
    if pending:
        note = Evidence.at(models_md, policy.arms_pending, "non-spec arms: not yet enacted")
        n = len({r.what for r in pending if r.where.startswith(review.source.era.masters)})
        return judged(
            WARN,
            f"{plural(n, 'key')} with a non-spec-decode arm that {models_md} deprecates but says "
            f"still runs (not yet enacted): {pending[0].what}",
            [*pending, note],
        )
    return judged(
        PASS,
        f"{plural(len(review.scopes), 'key')} use active models and scenarios per {models_md}",
    )
