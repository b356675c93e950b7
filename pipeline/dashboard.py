"""The results store as a static HTML dashboard: one chart per series and metric (inline SVG), the
regressions with their culprits, the missing points per run. One self-contained file: no network,
no script or style from elsewhere, so a team can publish it as ATOM publishes its dashboards.

Each chart plots every point of the series (one line each) over its runs in time order; the x axis
marks each run's engine commit and each change of image; the shaded band is the noise band around
the level the verdict compares with (the median of the last runs); a finding is a ring at its run
(red: regression or failure, orange: unstable acceptance, green: improvement). A small inline
script only filters charts by name. Pure: the same inputs give the same bytes.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..changelog.results import regressions
from ..changelog.results.regressions import Chart, MissingRun, PointChange

WIDTH, HEIGHT = 900, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 70
MAX_TITLED = 2_000  # a chart with more points carries no tooltip per point (page size)
PALETTE = (
    "#1f77b4 #ff7f0e #2ca02c #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf #393b79 "
    "#637939 #8c6d31 #843c39 #7b4173 #3182bd #e6550d #31a354 #756bb1"
).split()
BAD_MARKS = (
    regressions.REGRESSION,
    regressions.FAILED_KIND,
    regressions.BELOW,
    regressions.UNSTABLE,
)
MARK = {
    regressions.REGRESSION: "bad",
    regressions.FAILED_KIND: "bad",
    regressions.BELOW: "bad",
    regressions.UNSTABLE: "unstable",
    regressions.IMPROVEMENT: "good",
}
CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:4px 0}
table{border-collapse:collapse;margin:8px 0;width:100%;table-layout:fixed}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;font-size:12px;
overflow-wrap:anywhere}th{background:#f4f4f4}
.chart{margin:18px 0;border-top:1px solid #eee;padding-top:8px}
.legend span{display:inline-block;margin-right:10px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:3px}
svg text{font:11px system-ui,sans-serif;fill:#444}
.pt{stroke:none}.ring{fill:none;stroke-width:2.5}.ring.bad{stroke:#d62728}
.ring.unstable{stroke:#ff9800}.ring.good{stroke:#2ca02c}
.band{opacity:.18;stroke:none}.imgline{stroke:#999;stroke-dasharray:4 3}
.kind-regression,.kind-failed,.kind-below-threshold{color:#b00}.kind-unstable-acceptance{color:#b60}
code{font-size:12px}#filter{width:320px;padding:4px}
"""
SCRIPT = """
(function(){var box=document.getElementById('filter');if(!box){return;}
box.addEventListener('input',function(){var q=box.value.toLowerCase();
var charts=document.querySelectorAll('section.chart');for(var i=0;i<charts.length;i++){
var name=(charts[i].getAttribute('data-series')+' '+charts[i].getAttribute('data-metric'))
.toLowerCase();charts[i].style.display=name.indexOf(q)>=0?'':'none';}});})();
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def render(
    *,
    title: str,
    charts: Sequence[Chart],
    findings: Sequence[PointChange],
    missing: Sequence[MissingRun],
    suspects: Mapping[int, Any],
) -> str:
    """The page. `suspects` maps `id(finding)` to its culprits (validate.precision.culprits)."""
    by_chart: dict[tuple[str, str], list[PointChange]] = {}
    for f in findings:
        by_chart.setdefault((f.series, f.metric), []).append(f)
    marked = {key for key, fs in by_chart.items() if any(f.kind in BAD_MARKS for f in fs)}
    bad = sum(f.kind in BAD_MARKS for f in findings)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='summary'>{len(charts)} charts, {bad} findings to look at "
        f"({len(marked)} charts). Filter: <input id='filter' placeholder='series or metric'></p>",
        "<h2>Charts with findings</h2>",
    ]

    def worst(c: Chart) -> tuple[int, bool]:  # collapses and regressions first, low scores last
        kinds = {f.kind for f in by_chart[(c.series, c.metric)]}
        return min(
            BAD_MARKS.index(k) for k in kinds if k in BAD_MARKS
        ), c.metric_kind != "acceptance"

    first = sorted((c for c in charts if (c.series, c.metric) in marked), key=worst)
    parts += [_chart(c, by_chart[(c.series, c.metric)]) for c in first]
    parts += [_findings_table(findings, suspects), _missing_table(missing), "<h2>Other charts</h2>"]
    parts += [
        _chart(c, by_chart.get((c.series, c.metric), []))
        for c in charts
        if (c.series, c.metric) not in marked
    ]
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "".join(parts)


def _run(image: str | None, commit: str | None) -> str:
    """A run as a reader scans it: the image's tag (or digest, short) and the engine commit."""
    if image is None:
        return "-"
    name = _tag(image)
    if "@sha256:" in name:
        name = name.split("@sha256:")[0] + "@" + name.split("@sha256:")[1][:12]
    return f"{name} @{commit[:8]}" if commit else name


def _findings_table(findings: Sequence[PointChange], suspects: Mapping[int, Any]) -> str:
    rows = [f for f in findings if f.kind in BAD_MARKS]
    if not rows:
        return "<h2>Regressions</h2><p id='regressions'>None.</p>"
    out = [
        "<h2>Regressions</h2><table id='regressions'><colgroup><col style='width:18%'>"
        "<col style='width:10%'><col style='width:9%'><col style='width:13%'>"
        "<col style='width:6%'><col style='width:14%'><col style='width:14%'>"
        "<col style='width:16%'></colgroup><tr><th>series</th><th>point</th>"
        "<th>metric</th><th>old &rarr; new</th><th>change</th><th>verdict</th>"
        "<th>last good &rarr; first bad run</th><th>culprit candidates</th></tr>"
    ]
    for f in rows:
        good, bad = f.good_bad
        change = "-" if f.change is None else f"{f.change:+.1%}"
        values = f"{_value(f.old_value, f.unit)} &rarr; {_value(f.new_value, f.unit)}"
        runs = f"{_e(_run(*good) if good else '-')} &rarr; {_e(_run(*bad))}"
        out.append(
            f"<tr class='finding kind-{_e(f.kind)}'><td>{_e(f.series)}</td><td>{_e(f.point)}</td>"
            f"<td>{_e(f.metric)}</td><td>{values}</td><td>{change}</td><td>{_e(f.kind)}"
            f"{'<br><small>' + _e(f.note) + '</small>' if f.note else ''}</td>"
            f"<td><code>{runs}</code></td><td>{_culprits(suspects.get(id(f)))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _culprits(s: Any) -> str:
    if s is None:
        return "<small>no engine history given (--engine-repo)</small>"
    if s.reason:
        return f"<small>{_e(s.reason)}</small>"
    if not s.culprits:
        return "<small>no commit between the two runs</small>"
    items = []
    for c in s.culprits[:5]:
        where = ", ".join(c.on_path) if c.on_path else "nothing on its path"
        items.append(f"<li><code>{_e(c.sha[:12])}</code> {_e(c.subject[:80])} <b>{_e(where)}</b>")
    more = f"<li>... {len(s.culprits) - 5} more" if len(s.culprits) > 5 else ""
    top = s.culprits[0]
    plural = "s" if len(s.culprits) > 1 else ""
    head = f"{len(s.culprits)} commit{plural}, first <code>{_e(top.sha[:8])}</code>"
    body = f"<ol>{''.join(items)}{more}</ol>"
    return f"<details class='culprits'><summary>{head}</summary>{body}</details>"


def _missing_table(missing: Sequence[MissingRun]) -> str:
    if not missing:
        return ""
    rows = "".join(
        f"<tr><td>{_e(m.series)}</td><td><code>{_e(_run(m.image, m.commit))}</code></td>"
        f"<td>{m.missing} of {m.of}</td></tr>"
        for m in missing
    )
    return (
        "<h2>Missing points (partial runs, not failures)</h2><table id='missing'>"
        f"<tr><th>series</th><th>run</th><th>points missing</th></tr>{rows}</table>"
    )


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return _e(f"{text} {unit}" if unit else text)


def _chart(c: Chart, found: Sequence[PointChange]) -> str:
    values = [v for line in c.lines.values() for v in line if v is not None]
    count = sum(1 for line in c.lines.values() for v in line if v is not None)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - abs(lo) * 0.1 - 1e-9, hi + abs(hi) * 0.1 + 1e-9
    pad = (hi - lo) * 0.08
    lo, hi = (lo - pad if lo - pad > 0 or lo < 0 else 0.0), hi + pad
    n = max(len(c.runs), 1)

    def x(i: int) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (i + 0.5) / n

    def y(v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (hi - v) / (hi - lo)

    svg = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"viewBox='0 0 {WIDTH} {HEIGHT}' role='img'>",
        _axes(c, lo, hi, x, y),
    ]
    legend = []
    # the band of each point with a finding (else of the first point): one band per line would
    # bury the lines of a 30-point series
    banded = {f.point for f in found if f.kind in MARK} or set(list(c.lines)[:1])
    for k, (point, line) in enumerate(c.lines.items()):
        color = PALETTE[k % len(PALETTE)]
        legend.append(f"<span><i style='background:{color}'></i>{_e(point)}</span>")
        if point in banded:
            svg.append(_band(line, c.bands.get(point), color, x, y))
        svg.append(_line(point, line, color, c, x, y, count <= MAX_TITLED))
    index = {(img, sha): i for i, (img, sha, _) in enumerate(c.runs)}
    for f in found:
        mark = MARK.get(f.kind)
        values_at = c.lines.get(f.point)
        at = index.get((f.new_image, f.new_commit))
        value = values_at[at] if values_at is not None and at is not None else None
        if mark and at is not None and value is not None:
            svg.append(
                f"<circle class='ring {mark}' data-kind='{_e(f.kind)}' cx='{x(at):.1f}' "
                f"cy='{y(value):.1f}' r='7'><title>{_e(f.kind)}: {_e(f.point)}</title></circle>"
            )
    svg.append("</svg>")
    unit = f" ({_e(c.unit)})" if c.unit else ""
    return (
        f"<section class='chart' data-series='{_e(c.series)}' data-metric='{_e(c.metric)}' "
        f"data-points='{count}'><h3>{_e(c.series)} &mdash; {_e(c.metric)}{unit}</h3>"
        f"{''.join(svg)}<div class='legend'>{''.join(legend)}</div></section>"
    )


def _axes(c: Chart, lo: float, hi: float, x: Any, y: Any) -> str:
    out = [
        f"<line x1='{LEFT}' y1='{TOP}' x2='{LEFT}' y2='{HEIGHT - BOTTOM}' stroke='#444'/>",
        f"<line x1='{LEFT}' y1='{HEIGHT - BOTTOM}' x2='{WIDTH - RIGHT}' "
        f"y2='{HEIGHT - BOTTOM}' stroke='#444'/>",
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(
            f"<text x='{LEFT - 6}' y='{y(v) + 4:.1f}' text-anchor='end'>{_e(_short(v))}</text>"
        )
    step = max(1, len(c.runs) // 30)
    previous = None
    for i, (image, commit, _) in enumerate(c.runs):
        xi = x(i)
        label = (commit or "")[:8] or _tag(image)
        out.append(
            f"<line x1='{xi:.1f}' y1='{HEIGHT - BOTTOM}' x2='{xi:.1f}' y2='{HEIGHT - BOTTOM + 4}' "
            f"stroke='#444'><title>{_e(_tag(image))} @{_e(commit or '-')}</title></line>"
        )
        if i % step == 0:
            out.append(
                f"<text class='commit' x='{xi:.1f}' y='{HEIGHT - BOTTOM + 14}' "
                f"transform='rotate(40 {xi:.1f} {HEIGHT - BOTTOM + 14})'>{_e(label)}</text>"
            )
        if image != previous:
            out.append(
                f"<line class='imgline' x1='{xi:.1f}' y1='{TOP}' x2='{xi:.1f}' "
                f"y2='{HEIGHT - BOTTOM}'/><text class='image' x='{xi + 3:.1f}' y='{TOP - 6}'>"
                f"{_e(_tag(image)[-22:])}</text>"
            )
            previous = image
    return "".join(out)


def _tag(image: str) -> str:
    return image.rsplit("/", 1)[-1]


def _short(v: float) -> str:
    size = abs(v)
    if size >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _line(
    point: str, line: Sequence[float | None], color: str, c: Chart, x: Any, y: Any, titled: bool
) -> str:
    """One point's line: its polyline segments and a circle per run (`class='pt'`), each with a
    tooltip (value, image, commit) when `titled` (charts small enough to carry them)."""
    out = [f"<g fill='{color}'><title>{_e(point)}</title>"]
    segment: list[str] = []
    for i, v in enumerate(line):
        if v is None:
            if len(segment) > 1:
                out.append(_polyline(segment, color))
            segment = []
            continue
        at = f"{x(i):.1f},{y(v):.1f}"
        segment.append(at)
        cx, cy = at.split(",")
        if titled:
            image, commit, _ = c.runs[i]
            out.append(
                f"<circle class='pt' cx='{cx}' cy='{cy}' r='2.5'><title>{_e(point)}: "
                f"{_value(v, c.unit)} on {_e(_tag(image))} @{_e((commit or '-')[:12])}"
                "</title></circle>"
            )
        else:
            out.append(f"<circle class='pt' cx='{cx}' cy='{cy}' r='2.5'/>")
    if len(segment) > 1:
        out.append(_polyline(segment, color))
    out.append("</g>")
    return "".join(out)


def _polyline(points: Sequence[str], color: str) -> str:
    return (
        f"<polyline fill='none' stroke='{color}' stroke-width='1.2' points='{' '.join(points)}'/>"
    )


def _clip(v: float) -> float:
    return min(max(v, TOP), HEIGHT - BOTTOM)


def _band(line: Sequence[float | None], band: float | None, color: str, x: Any, y: Any) -> str:
    """The band around the level each run is judged against (median of the last runs)."""
    if band is None:
        return ""
    upper, lower = [], []
    seen: list[float] = []
    for i, v in enumerate(line):
        if seen:
            level = statistics.median(seen[-regressions.LEVEL_IMAGES :])
            upper.append(f"{x(i):.1f},{_clip(y(level * (1 + band))):.1f}")
            lower.append(f"{x(i):.1f},{_clip(y(level * (1 - band))):.1f}")
        if v is not None:
            seen.append(v)
    if len(upper) < 2:
        return ""
    return f"<polygon class='band' fill='{color}' points='{' '.join(upper + lower[::-1])}'/>"
