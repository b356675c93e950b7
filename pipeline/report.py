"""Reports of a run: report.json (machines), report.md (paste into a PR), report.html (with plots).

All three are pure functions of the recorded run (inputs, stage outputs, verdict), so re-rendering
a record gives the same bytes: no clocks, no random ids. matplotlib's SVG output is made
deterministic by fixing its hash salt (element ids) and dropping its Date metadata.

Strings that came from outside (commit subjects, paths, facts, error messages) go through
`core.sanitize` for the format they land in: Markdown (markup escaped, no @mention or bare #N, no
control or bidi characters, lines capped) in report.md; report.html is rendered by jinja2 from
`report.html.j2` in `core.checkrender`'s environment (autoescape on, `core.sanitize` as its
finalize), so every value printed is cleaned and escaped whatever the template says. The checks
themselves (table, evidence, badges) are rendered by `core.checkrender`, as in `relpipe review`.
Plot labels are plain text (matplotlib's mathtext is off: a `$` in a point name is a dollar sign).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import checkrender, jsoncodec, sanitize
from ..core.checkrender import COLORS
from ..core.reference import split
from ..core.status import FAIL, NA, PASS, WARN
from ..validate.precision import PrecisionReport
from .comparison import HistoryOutput, Trend
from .outputs import EngineFacts, EvalOutput, Facts, PrecisionOutput
from .runrecord import atomic_write, digest_of, pretty_json, relpipe_version
from .verdict import Outcome, Verdict, eval_failures

REPORT_FILES = ("report.json", "report.md", "report.html")
RENDERER = 5  # bump when the report layout changes, so that kept reports are re-rendered
TEMPLATE = "report.html.j2"


@dataclass(frozen=True, kw_only=True)
class ReportData:
    run_id: str
    title: str
    inputs: Mapping[str, Any]
    outcome: Outcome
    verdict: Verdict


def md(text: object) -> str:
    """Untrusted text as one Markdown table cell or line (`core.sanitize.markdown`)."""
    return sanitize.markdown(text)


def code(text: object) -> str:
    """Untrusted text (a reference, a digest, a path) as a code span in a table cell."""
    return sanitize.markdown_code(text, table=True)


def to_json(data: ReportData) -> dict[str, Any]:
    o = data.outcome
    return {
        "schema": 1,
        "run": data.run_id,
        "title": data.title,
        "inputs": dict(data.inputs),
        "verdict": jsoncodec.to_json(data.verdict),
        "image": jsoncodec.to_json(o.image) if o.image else {},
        "baseline": jsoncodec.to_json(o.baseline) if o.baseline else None,
        "facts": jsoncodec.to_json(_facts(o)) if o.probe and o.probe.facts else {},
        "smoke": jsoncodec.to_json(o.smoke) if o.smoke else {},
        "evals": [jsoncodec.to_json(e) for e in o.evals],
        "precision": _precision_summary(o.precision),
        "config": jsoncodec.to_json(o.config) if o.config else None,
        "history": jsoncodec.to_json(o.history) if o.history else None,
    }


def _facts(o: Outcome) -> Facts:
    return (o.probe.facts if o.probe else None) or Facts()


def _report(p: PrecisionOutput | None) -> PrecisionReport | None:
    """The precision report when the diff ran (status ok), else None."""
    return p.report if p is not None and p.status == PASS else None


def _precision_summary(out: PrecisionOutput | None) -> dict[str, Any] | None:
    if out is None:
        return None
    p = jsoncodec.to_json(out)
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


def _image_rows(o: Outcome) -> list[tuple[str, str, bool]]:
    """(label, value as recorded, shown as code) of the image table, for either format."""
    facts = _facts(o)
    engine: EngineFacts = facts.engine
    rows = [
        ("image", o.image.ref if o.image else "?", True),
        ("digest", o.image.digest if o.image else "?", True),
    ]
    if o.baseline:
        rows += [
            ("baseline", o.baseline.ref, True),
            ("baseline digest", o.baseline.digest, True),
        ]
    rows += [
        ("engine", f"{engine.name} {engine.version} ({str(engine.commit)[:12]})", False),
        ("ROCm", str(facts.rocm), False),
        ("torch", str(facts.torch), False),
        ("triton", str(facts.triton), False),
        ("AITER", str(facts.aiter), False),
        ("LMCache", str(facts.lmcache), False),
    ]
    return rows


def render_markdown(data: ReportData) -> bytes:
    o, v = data.outcome, data.verdict
    out = [
        f"## relpipe: {md(data.title)}",
        "",
        f"**Verdict: {checkrender.badge(v.overall)}** (run `{data.run_id[:16]}`)",
        "",
        *checkrender.markdown_table(v.checks, checkrender.REPORT),
    ]
    out += ["", "### Image", "", "| | |", "|---|---|"]
    out += [f"| {k} | {code(val) if as_code else md(val)} |" for k, val, as_code in _image_rows(o)]
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
        if c.evidence:
            out += [*checkrender.markdown_evidence(c, checkrender.REPORT), ""]
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
        f"{len(p.commits)} engine commit(s) between {code(p.old[:12])} and {code(p.new[:12])}.",
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
            f"| {code(f.path)} | {md(f.category)} | {md(', '.join(s[:9] for s in f.commits))} |"
            for f in relevant
        ]
    if p.watch:
        out += ["", "| watched file | state |", "|---|---|"]
        out += [f"| {code(w.path)} | {md(w.state)} |" for w in p.watch]
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


@contextlib.contextmanager
def _plain_labels() -> Iterator[None]:
    """Text made while this holds is plain: no mathtext, so labels built from config values
    (a point name with `$`) are shown as given instead of parsed (and crashing)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        yield


def _label(text: object) -> str:
    return sanitize.clean(text, limit=80)  # no control character may reach the SVG (XML)


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
    with _plain_labels():
        return _svg(_evals_figure(Figure, suites, evals))


def _evals_figure(figure_cls: Any, suites: Sequence[str], evals: Sequence[EvalOutput]) -> Any:
    fig = figure_cls(figsize=(7, 2.6 * len(suites)))
    for i, suite in enumerate(suites, start=1):
        ax = fig.add_subplot(len(suites), 1, i)
        rows = [e for e in evals if e.suite == suite]
        xs = list(range(len(rows)))
        scores = [e.score or 0.0 for e in rows]
        colors = [COLORS[FAIL if eval_failures(e) else PASS] for e in rows]
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
        # Point names are long (scenario/parallelism/concurrency): slanted, they never overlap.
        ax.set_xticks(xs, [_label(e.point) for e in rows], fontsize=8, rotation=20, ha="right")
        ax.set_ylim(0, 1.05 * max(scores + [t for _, t in thresholds] + [1e-9]))
        ax.set_title(_label(f"{suite}: {rows[0].metric} per point"), fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def plot_precision(p: PrecisionReport | None) -> str | None:
    from matplotlib.figure import Figure

    if p is None:
        return None
    cats = _categories(p)
    if not cats:
        return None
    with _plain_labels():
        return _svg(_precision_figure(Figure, cats))


def _precision_figure(figure_cls: Any, cats: Sequence[tuple[str, dict[str, int]]]) -> Any:
    fig = figure_cls(figsize=(7, 0.45 * len(cats) + 1.2))
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(cats)))
    rel = [c["relevant"] for _, c in cats]
    cos = [c["cosmetic"] for _, c in cats]
    ax.barh(ys, rel, color=COLORS[WARN], label="relevant")
    ax.barh(ys, cos, left=rel, color=COLORS[NA], label="cosmetic")
    ax.set_yticks(ys, [_label(name) for name, _ in cats], fontsize=8)
    ax.set_xlabel("files changed")
    ax.set_title("precision diff: files by category", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def plot_history(h: HistoryOutput | None) -> str | None:
    """The key's history across images: one chart per metric, a line per point, its noise band
    shaded, the image under test marked."""
    from matplotlib.figure import Figure

    trends = [t for t in (h.trends if h is not None and h.status == PASS else ()) if t.values]
    if h is None or not trends:
        return None
    metrics = sorted({t.metric for t in trends})
    with _plain_labels():
        fig = Figure(figsize=(7, 2.8 * len(metrics)))
        for i, metric in enumerate(metrics, start=1):
            _history_axes(fig.add_subplot(len(metrics), 1, i), metric, trends, h.image)
        fig.tight_layout()
        return _svg(fig)


def _tick(ref: str) -> str:
    """An image on a chart's axis: its digest's hex, else its tag."""
    written = split(ref)
    if written.digest is not None:
        return written.digest.rpartition(":")[2]
    return ref if written.tag is None else written.tag


def _history_axes(ax: Any, metric: str, trends: Sequence[Trend], released: str) -> None:
    rows = [t for t in trends if t.metric == metric]
    images: list[str] = []
    for t in rows:
        images += [ref for ref in t.images if ref not in images]
    for t in rows:
        xs = [images.index(ref) for ref in t.images]
        line = ax.plot(xs, t.values, marker="o", markersize=3, label=_label(t.point))[0]
        if t.band is not None:
            low = [v * (1 - t.band) for v in t.values]
            high = [v * (1 + t.band) for v in t.values]
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    if released in images:
        ax.axvline(images.index(released), color="#cf222e", linestyle="--", linewidth=1)
        ax.annotate(
            "this image",
            (images.index(released), 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=8,
            color="#cf222e",
            ha="right",
            va="top",
        )  # fmt: skip - one call
    short = [_label(_tick(ref)[:19]) for ref in images]
    ax.set_xticks(range(len(images)), short, fontsize=7, rotation=20, ha="right")
    ax.set_title(_label(f"{metric} per image (noise band shaded)"), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)


# -- HTML -------------------------------------------------------------------------------------


def render_html(data: ReportData) -> bytes:
    """report.html from `report.html.j2`; the template gets plain values, never pre-escaped HTML."""
    o, v = data.outcome, data.verdict
    p = _report(o.precision)
    eval_svg = plot_evals(o.evals)
    prec_svg = plot_precision(p)
    hist_svg = plot_history(o.history)
    precision = None
    if p is not None:
        precision = {
            "old": p.old[:12],
            "new": p.new[:12],
            "files": [
                {
                    "path": f.path,
                    "category": f.category,
                    "verdict": f.verdict,
                    "commits": ", ".join(s[:9] for s in f.commits),
                }
                for f in p.files
                if f.verdict in ("relevant", "cosmetic")
            ],
            "commits": [
                {"sha": c.sha[:9], "pr": c.pr or "", "subject": c.subject} for c in p.commits
            ],
        }
    page = (
        checkrender.html_environment("relpipe.pipeline")
        .get_template(TEMPLATE)
        .render(
            css=checkrender.markup(checkrender.CSS),
            title=data.title,
            run_id=data.run_id[:16],
            verdict=v.overall,
            checks=v.checks,
            image=_image_rows(o),
            eval_svg=checkrender.markup(eval_svg) if eval_svg else None,
            evals=[
                [e.suite, e.point, e.metric, _fmt(e.score), _fmt(e.threshold), e.samples]
                for e in o.evals
            ],
            precision=precision,
            precision_svg=checkrender.markup(prec_svg) if prec_svg else None,
            history_svg=checkrender.markup(hist_svg) if hist_svg else None,
        )
    )
    return page.encode()


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else "-" if value is None else str(value)


def render_all(data: ReportData, folder: Path, force: bool = False) -> dict[str, Path]:
    """Write the three reports into `folder` (atomically); returns name -> path.

    Rendering is a pure function of `data`, so when `report.key` says the files on disk were
    rendered from the same data they are kept (a cache hit does not pay for matplotlib);
    `force` renders anyway (`relpipe report`, which proves the bytes are reproducible).
    """

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
