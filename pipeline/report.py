"""Reports of a run: report.json (machines), report.md (paste into a PR), report.html (with plots).

All three are pure functions of the recorded run (inputs, stage outputs, verdict), so re-rendering
a record gives the same bytes: no clocks, no random ids. matplotlib's SVG output is made
deterministic by fixing its hash salt (element ids) and dropping its Date metadata.

Strings that came from outside (commit subjects, paths, facts, error messages) are escaped for the
format they land in: Markdown metacharacters in report.md, HTML in report.html.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relpipe.pipeline.outputs import EngineFacts, EvalOutput, Facts, PrecisionOutput
from relpipe.pipeline.record import pretty_json
from relpipe.pipeline.verdict import FAIL, NA, PASS, WARN, Outcome, Verdict, eval_failures
from relpipe.validate.precision import PrecisionReport

REPORT_FILES = ("report.json", "report.md", "report.html")
RENDERER = 3  # bump when the report layout changes, so that kept reports are re-rendered
# What can start markup inside a table cell: code, emphasis, links, HTML, the cell separator.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
_COLORS = {PASS: "#1a7f37", WARN: "#9a6700", FAIL: "#cf222e", NA: "#6e7781"}
_ICONS = {PASS: "✅", WARN: "⚠️", FAIL: "❌", NA: "➖"}


@dataclass(frozen=True)
class ReportData:
    run_id: str
    title: str
    inputs: Mapping[str, Any]
    outcome: Outcome
    verdict: Verdict


def md(text: object) -> str:
    """Escape untrusted text for one Markdown table cell or line."""
    flat = " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", flat)


def to_json(data: ReportData) -> dict[str, Any]:
    o = data.outcome
    return {
        "schema": 1,
        "run": data.run_id,
        "title": data.title,
        "inputs": dict(data.inputs),
        "verdict": data.verdict.to_json(),
        "image": o.image.to_json() if o.image else {},
        "baseline": o.baseline.to_json() if o.baseline else None,
        "facts": _facts(o).to_json() if o.probe and o.probe.facts else {},
        "smoke": o.smoke.to_json() if o.smoke else {},
        "evals": [e.to_json() for e in o.evals],
        "precision": _precision_summary(o.precision),
        "config": o.config.to_json() if o.config else None,
    }


def _facts(o: Outcome) -> Facts:
    return (o.probe.facts if o.probe else None) or Facts()


def _report(p: PrecisionOutput | None) -> PrecisionReport | None:
    """The precision report when the diff ran (status ok), else None."""
    return p.report if p is not None and p.status == "ok" else None


def _precision_summary(out: PrecisionOutput | None) -> dict[str, Any] | None:
    if out is None:
        return None
    p = out.to_json()
    return {
        k: p.get(k)
        for k in (
            "status",
            "reason",
            "old",
            "new",
            "summary",
            "commits",
            "files",
            "watch",
            "upstream",
        )
        if k in p
    }


def render_json(data: ReportData) -> bytes:
    return pretty_json(to_json(data))


# -- Markdown ---------------------------------------------------------------------------------


def _image_rows(o: Outcome) -> list[tuple[str, str]]:
    facts = _facts(o)
    engine: EngineFacts = facts.engine
    rows = [
        ("image", f"`{o.image.ref if o.image else '?'}`"),
        ("digest", f"`{o.image.digest if o.image else '?'}`"),
    ]
    if o.baseline:
        rows += [
            ("baseline", f"`{o.baseline.ref}`"),
            ("baseline digest", f"`{o.baseline.digest}`"),
        ]
    rows += [
        ("engine", md(f"{engine.name} {engine.version} ({str(engine.commit)[:12]})")),
        ("ROCm", md(facts.rocm)),
        ("torch", md(facts.torch)),
        ("triton", md(facts.triton)),
        ("AITER", md(facts.aiter)),
        ("LMCache", md(facts.lmcache)),
    ]
    return rows


def render_markdown(data: ReportData) -> bytes:
    o, v = data.outcome, data.verdict
    out = [
        f"## relpipe: {md(data.title)}",
        "",
        f"**Verdict: {_ICONS[v.overall]} {v.overall}** (run `{data.run_id[:16]}`)",
        "",
        "| # | check | status | reason |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {c.id} | {c.title} | {_ICONS[c.status]} {c.status} | {md(c.reason)} |" for c in v.checks
    ]
    out += ["", "### Image", "", "| | |", "|---|---|"]
    out += [f"| {k} | {val} |" for k, val in _image_rows(o)]
    if o.evals:
        out += [
            "",
            "### Evals",
            "",
            "| suite | point | metric | score | threshold | samples | result |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in o.evals:
            result = FAIL if eval_failures(e) else PASS
            out.append(
                f"| {md(e.suite)} | {md(e.point)} | {md(e.metric)} | "
                f"{_num(e.score)} | {_num(e.threshold)} | {e.samples} | {result} |"
            )
    out += _precision_markdown(_report(o.precision))
    out += ["", "### Evidence", ""]
    for c in v.checks:
        if not c.evidence:
            continue
        out += [
            f"<details><summary>{c.id} {c.title}: {c.status}</summary>",
            "",
            "| | |",
            "|---|---|",
        ]
        out += [f"| {md(k)} | {md(val)} |" for k, val in c.evidence]
        out += ["", "</details>", ""]
    return ("\n".join(out).rstrip() + "\n").encode()


def _num(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return md(value) if value is not None else "-"


def _precision_markdown(p: PrecisionReport | None) -> list[str]:
    if p is None:
        return []
    out = [
        "",
        "### Precision diff",
        "",
        f"{len(p.commits)} engine commit(s) between `{md(p.old[:12])}` and `{md(p.new[:12])}`.",
        "",
        "| category | relevant | cosmetic |",
        "|---|---|---|",
    ]
    for cat, counts in _categories(p):
        out.append(f"| {md(cat)} | {counts['relevant']} | {counts['cosmetic']} |")
    relevant = [f for f in p.files if f.verdict == "relevant"]
    if relevant:
        out += ["", "| file | category | commits |", "|---|---|---|"]
        out += [
            f"| `{md(f.path)}` | {md(f.category)} | "
            f"{md(', '.join(s[:9] for s in f.commits))} |"
            for f in relevant
        ]
    if p.watch:
        out += ["", "| watched file | state |", "|---|---|"]
        out += [f"| `{md(w.path)}` | {md(w.state)} |" for w in p.watch]
    return out


def _categories(p: PrecisionReport) -> list[tuple[str, dict[str, int]]]:
    counts: dict[str, dict[str, int]] = {}
    for f in p.files:
        if f.verdict not in ("relevant", "cosmetic"):
            continue
        row = counts.setdefault(f.category or "other", {"relevant": 0, "cosmetic": 0})
        row[f.verdict] += 1
    return sorted(counts.items())


# -- plots ------------------------------------------------------------------------------------


def _svg(fig: Any) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "relpipe", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]


def plot_evals(evals: Sequence[EvalOutput]) -> str | None:
    """One panel per suite: score per point as bars, the threshold as a red tick per point."""
    from matplotlib.figure import Figure

    suites = sorted({e.suite for e in evals})
    if not suites:
        return None
    fig = Figure(figsize=(7, 2.6 * len(suites)))
    for i, suite in enumerate(suites, start=1):
        ax = fig.add_subplot(len(suites), 1, i)
        rows = [e for e in evals if e.suite == suite]
        xs = list(range(len(rows)))
        scores = [e.score or 0.0 for e in rows]
        colors = [_COLORS[FAIL if eval_failures(e) else PASS] for e in rows]
        ax.bar(xs, scores, color=colors, width=0.6, label="score")
        thresholds = [
            (x, e.threshold) for x, e in zip(xs, rows, strict=True) if e.threshold is not None
        ]
        if thresholds:
            ax.scatter(
                [x for x, _ in thresholds],
                [t for _, t in thresholds],
                marker="_",
                s=900,
                color="#cf222e",
                linewidths=2.5,
                label="threshold",
                zorder=3,
            )
        ax.set_xticks(xs, [str(e.point) for e in rows], fontsize=8)
        ax.set_ylim(0, 1.05 * max(scores + [t for _, t in thresholds] + [1e-9]))
        ax.set_title(f"{suite}: {rows[0].metric} per point", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return _svg(fig)


def plot_precision(p: PrecisionReport | None) -> str | None:
    from matplotlib.figure import Figure

    if p is None:
        return None
    cats = _categories(p)
    if not cats:
        return None
    fig = Figure(figsize=(7, 0.45 * len(cats) + 1.2))
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(cats)))
    rel = [c["relevant"] for _, c in cats]
    cos = [c["cosmetic"] for _, c in cats]
    ax.barh(ys, rel, color=_COLORS[WARN], label="relevant")
    ax.barh(ys, cos, left=rel, color=_COLORS[NA], label="cosmetic")
    ax.set_yticks(ys, [name for name, _ in cats], fontsize=8)
    ax.set_xlabel("files changed")
    ax.set_title("precision diff: files by category", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return _svg(fig)


# -- HTML -------------------------------------------------------------------------------------

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #d0d7de;padding:4px 8px;
text-align:left;vertical-align:top;font-size:14px}th{background:#f6f8fa}code{font-size:13px}
.s{font-weight:bold;color:#fff;padding:2px 8px;border-radius:4px}figure{margin:1em 0}"""


def _h(text: object) -> str:
    return html.escape(str(text), quote=True)


def _badge(status: str) -> str:
    return f'<span class="s" style="background:{_COLORS[status]}">{_h(status)}</span>'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_h(h)}</th>" for h in header) if any(header) else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' id="{cls}"' if cls else ""
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f"<table{attr}>{thead}<tbody>{body}</tbody></table>"


def render_html(data: ReportData) -> bytes:
    o, v = data.outcome, data.verdict
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>relpipe: {_h(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>relpipe: {_h(data.title)}</h1>",
        f'<p id="verdict">Verdict: {_badge(v.overall)} &nbsp;run <code>{_h(data.run_id[:16])}</code></p>',
        "<h2>Checks</h2>",
        _table(
            ["#", "check", "status", "reason"],
            [[_h(c.id), _h(c.title), _badge(c.status), _h(c.reason)] for c in v.checks],
            "checks",
        ),
        "<h2>Image</h2>",
        _table(
            ["", ""],
            [[_h(k), _h(val.replace("`", "").replace("\\", ""))] for k, val in _image_rows(o)],
        ),
    ]
    eval_svg = plot_evals(o.evals)
    if eval_svg:
        parts += [
            "<h2>Evals</h2>",
            f'<figure id="plot-evals">{eval_svg}</figure>',
            _table(
                ["suite", "point", "metric", "score", "threshold", "samples"],
                [
                    [
                        _h(e.suite),
                        _h(e.point),
                        _h(e.metric),
                        _h(_num(e.score)),
                        _h(_num(e.threshold)),
                        _h(e.samples),
                    ]
                    for e in o.evals
                ],
            ),
        ]
    p = _report(o.precision)
    prec_svg = plot_precision(p)
    if p is not None:
        parts += [
            "<h2>Precision diff</h2>",
            f"<p>{len(p.commits)} engine commit(s) between <code>{_h(p.old[:12])}</code>"
            f" and <code>{_h(p.new[:12])}</code>.</p>",
        ]
        if prec_svg:
            parts.append(f'<figure id="plot-precision">{prec_svg}</figure>')
        files = [f for f in p.files if f.verdict in ("relevant", "cosmetic")]
        if files:
            parts.append(
                _table(
                    ["file", "category", "verdict", "commits"],
                    [
                        [
                            f"<code>{_h(f.path)}</code>",
                            _h(f.category),
                            _h(f.verdict),
                            _h(", ".join(s[:9] for s in f.commits)),
                        ]
                        for f in files
                    ],
                )
            )
        if p.commits:
            parts.append(
                _table(
                    ["commit", "PR", "subject"],
                    [
                        [f"<code>{_h(c.sha[:9])}</code>", _h(c.pr or ""), _h(c.subject)]
                        for c in p.commits
                    ],
                )
            )
    parts.append("<h2>Evidence</h2>")
    for c in v.checks:
        if c.evidence:
            parts.append(
                f"<details><summary>{_h(c.id)} {_h(c.title)}: {_badge(c.status)}</summary>"
                + _table(["", ""], [[_h(k), _h(val)] for k, val in c.evidence])
                + "</details>"
            )
    parts.append("</body></html>")
    return ("\n".join(parts) + "\n").encode()


def render_all(data: ReportData, folder: Path, force: bool = False) -> dict[str, Path]:
    """Write the three reports into `folder` (atomically); returns name -> path.

    Rendering is a pure function of `data`, so when `report.key` says the files on disk were
    rendered from the same data they are kept (a cache hit does not pay for matplotlib);
    `force` renders anyway (`relpipe report`, which proves the bytes are reproducible).
    """
    from relpipe.pipeline.record import atomic_write, digest_of, relpipe_version

    key = digest_of({"report": to_json(data), "renderer": RENDERER, "relpipe": relpipe_version()})
    paths = {name: folder / name for name in REPORT_FILES}
    stamp = folder / "report.key"
    if (
        not force
        and stamp.is_file()
        and stamp.read_text().strip() == key
        and all(p.is_file() for p in paths.values())
    ):
        return paths
    rendered = {
        "report.json": render_json(data),
        "report.md": render_markdown(data),
        "report.html": render_html(data),
    }
    for name, blob in rendered.items():
        atomic_write(paths[name], blob)
    atomic_write(stamp, f"{key}\n".encode())
    return paths
