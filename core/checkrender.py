"""How checks read: one terminal line each, Markdown, HTML and JSON, for every command.

The verdict's reports (`pipeline.report`) and `relpipe review` render `core.check.Check` records
with these functions only. Their Markdown differs in style, not in code: the report lists checks
by id (`REPORT`); the review comment, pasted into a PR, numbers its rows, names each check by id,
caps evidence tables and shows file:line evidence as code (`REVIEW`).

Every value from outside (a reason, an evidence row) goes through `core.sanitize` for the format
it lands in. The HTML comes from `checks.html.j2` (macros a page template imports) in a jinja2
environment whose finalize cleans every printed value; jinja2 is the optional `report` extra, so
it is imported only when HTML is rendered (the commit hook renders Markdown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import sanitize
from .check import Check, Evidence
from .errors import require
from .status import FAIL, NA, PASS, WARN, Status, overall

ICONS: Mapping[str, str] = {PASS: "✅", WARN: "⚠️", FAIL: "❌", NA: "➖"}
COLORS: Mapping[str, str] = {PASS: "#1a7f37", WARN: "#9a6700", FAIL: "#cf222e", NA: "#6e7781"}
TERMINAL_LIMIT = 1000  # characters of a reason on a terminal line
_FILE_LINE = re.compile(r"[\w./@+-]+(?::\d+)?")  # no nested quantifier: linear on any text


def status_of(checks: Sequence[Check]) -> Status:
    """FAIL if any check failed, else WARN if any warned, else PASS."""
    return overall(c.status for c in checks)


# -- text ----------------------------------------------------------------------------------------


def text_line(check: Check) -> str:
    """`C3   PASS  smoke decode: reason`: reasons quote commit subjects and image facts, so no
    escape sequence reaches the terminal."""
    reason = sanitize.terminal(check.reason, limit=TERMINAL_LIMIT)
    return f"{check.id:<4} {check.status:<4}  {check.title}: {reason}"


# -- JSON ----------------------------------------------------------------------------------------


def document(checks: Sequence[Check], **context: Any) -> dict[str, Any]:
    """The checks as one JSON document: the overall status first, then `context`, then checks."""
    return {"overall": status_of(checks).value, **context, "checks": [c.to_json() for c in checks]}


# -- Markdown ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MarkdownStyle:
    """How a Markdown document lays its checks out (see the module docstring)."""

    numbered: bool  # rows numbered from 0, the id shown as code beside the title
    reason_limit: int | None  # characters of a reason in the summary table
    evidence_header: str  # the evidence table's header row
    cell_limit: int | None  # characters of an evidence cell
    evidence_cap: int | None  # rows shown per check (JSON keeps every row)
    code_locations: bool  # `path:line` evidence as a code span
    count_in_summary: bool  # a <details> summary names the row count, not the title and status


REPORT = MarkdownStyle(
    numbered=False,
    reason_limit=sanitize.LINE_LIMIT,
    evidence_header="| | |",
    cell_limit=sanitize.LINE_LIMIT,
    evidence_cap=None,
    code_locations=False,
    count_in_summary=False,
)
REVIEW = MarkdownStyle(
    numbered=True,
    reason_limit=None,
    evidence_header="| where | what |",
    cell_limit=None,
    evidence_cap=40,
    code_locations=True,
    count_in_summary=True,
)


def badge(status: Status) -> str:
    """`✅ PASS`: a status as Markdown."""
    return f"{ICONS[status]} {status}"


def markdown_table(checks: Sequence[Check], style: MarkdownStyle) -> list[str]:
    """The summary table: one row per check (its status and one-line reason)."""
    lines = ["| # | check | status | reason |", "|---|---|---|---|"]
    for n, c in enumerate(checks):
        reason = sanitize.markdown(c.reason, limit=style.reason_limit)
        if style.numbered:
            label = f"{n} | {_code(c.id)} {_cell(c.title)}"
        else:
            label = f"{c.id} | {_cell(c.title)}"
        lines.append(f"| {label} | {badge(c.status)} | {reason} |")
    return lines


def markdown_evidence(check: Check, style: MarkdownStyle) -> list[str]:
    """One check's evidence as a collapsed table (empty when it has none)."""
    if not check.evidence:
        return []
    if style.count_in_summary:
        summary = f"{_cell(check.id)}: {len(check.evidence)} evidence row(s)"
    else:
        summary = f"{check.id} {_cell(check.title)}: {check.status}"
    shown = check.evidence[: style.evidence_cap]
    lines = [f"<details><summary>{summary}</summary>", "", style.evidence_header, "|---|---|"]
    lines += [f"| {_where(e, style)} | {_cell(e.what, style.cell_limit)} |" for e in shown]
    if len(check.evidence) > len(shown):
        rest = len(check.evidence) - len(shown)
        lines.append(f"| ... | {rest} more row(s) not shown here; `--json` lists them all |")
    return [*lines, "", "</details>"]


def _cell(text: object, limit: int | None = None) -> str:
    return sanitize.markdown(text, limit=limit)


def _code(text: object) -> str:
    return sanitize.markdown_code(text, limit=None, table=True)


def _where(e: Evidence, style: MarkdownStyle) -> str:
    if style.code_locations and _FILE_LINE.fullmatch(e.where):
        return _code(e.where)  # file:line stays a code span; a key or a count is escaped text
    return _cell(e.where, style.cell_limit)


# -- HTML ----------------------------------------------------------------------------------------

TEMPLATE = "checks.html.j2"  # macros: badge, table, check_table, evidence, page
# The style of every page that shows checks (the report's and the review's).
CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #d0d7de;padding:4px 8px;
text-align:left;vertical-align:top;font-size:14px}th{background:#f6f8fa}code{font-size:13px}
.s{font-weight:bold;color:#fff;padding:2px 8px;border-radius:4px}figure{margin:1em 0}"""


def _finalize(value: Any) -> Any:
    """Every value a template prints: cleaned by `core.sanitize` (autoescape then escapes it);
    Markup (macros' output, a caller's SVG plots) passes as is."""
    markup = require("markupsafe", "report")
    if isinstance(value, markup.Markup):
        return value
    return sanitize.html_text("" if value is None else value, limit=1000)


def html_environment(package: str) -> Any:
    """A jinja2 environment for `package`'s templates that can import `checks.html.j2`:
    autoescape on, every printed value through `core.sanitize`, undefined names an error."""
    jinja2 = require("jinja2", "report")  # optional extra: only HTML needs it
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader(package, "."), jinja2.PackageLoader("relpipe.core", ".")]
        ),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.globals["colors"] = COLORS  # the badges' colours, seen by imported macros too
    return env


def render_page(checks: Sequence[Check], *, title: str, intro: str) -> str:
    """A standalone HTML page of checks: the title, the overall status with `intro` (say what
    was checked), the checks' table and their evidence (`relpipe review --html`)."""
    page = html_environment("relpipe.core").get_template(TEMPLATE).module.page
    return str(page(title, intro, status_of(checks), checks, markup(CSS)))


def markup(text: str) -> Any:
    """`text` as HTML the template prints as is (our own output, such as an SVG plot)."""
    return require("markupsafe", "report").Markup(text)
