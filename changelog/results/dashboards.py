"""ATOM's CI dashboards (github-action-benchmark `data.js`) as history samples.

Format: `window.BENCHMARK_DATA = {lastUpdate, repoUrl, entries: {NAME: [{commit, date, tool,
benches: [{name, value, unit, extra}]}]}}`, optionally ending in `;`. One entry is one CI run; a
bench name is `PREFIX::SERIES POINT METRIC (unit)`: `... 1024/1024 c=64 TTFT (ms)` (a perf point),
`... accuracy (GSM8K)` (an eval), `... MTP acceptance (%)` and `... avg toks/fwd (tok/fwd)`
(speculative decoding). `extra` is `Key: value | Key: value` (`Docker:` names the image,
`Threshold:` the eval bar), or space-separated `k=v` for the mocker; some benches have none and
take the image of their series in the same run.

What the dashboards get wrong is kept as such (records.py): a zero throughput, latency or score is
a failed run (a zero acceptance is a collapse, a measurement: its run reports 1.0 tokens/forward),
a name twice in one run is ambiguous, a score above 1 or a percent above 100 is an ambiguous unit,
`repo:latest` without a digest names no image.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from ...core import jsonload
from .records import (
    ACCEPTANCE,
    ACCURACY,
    AMBIGUOUS,
    FAILED,
    HIGHER,
    LOWER,
    OK,
    OTHER,
    PERF,
    Image,
    Sample,
    finite,
    image_from_ref,
)

PREFIX = "window.BENCHMARK_DATA"
GSM8K_N = 1319  # GSM8K's test split: the n of the binomial standard error the dashboards omit
_PERF = re.compile(r"^(?P<series>.+?) (?P<point>\d+/\d+ c=\d+) (?P<metric>.+)$")
_EVAL = re.compile(r"^(?P<series>.+) accuracy \((?P<task>[^()]+)\)$")
_ACCEPT = re.compile(r"^(?P<series>.+) MTP acceptance \(%\)$")
_LENGTH = re.compile(r"^(?P<series>.+) avg toks/fwd \(tok/fwd\)$")
_CELL = re.compile(r"^(?P<series>[^:]+::)(?P<point>\S+) (?P<metric>.+)$")
_UNIT = re.compile(r"\s*\([^()]*\)$")
_RUN = re.compile(r"/actions/runs/(\d{1,20})")
_HEX = "0123456789abcdefABCDEF"
MAX_MS = 2**53  # a run time beyond this is no time (and no float holds it exactly)


def looks_like(text: str) -> bool:
    return text.lstrip().startswith(PREFIX)


def parse(text: str) -> dict[str, Any]:
    """The dashboard's JSON object; ValueError (one line) when it is not one."""
    body = text.lstrip()[len(PREFIX) :].lstrip()
    if not body.startswith("="):
        raise ValueError("no `=` after window.BENCHMARK_DATA")
    body = body[1:].rstrip()
    body = body.removesuffix(";")
    data = jsonload.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise ValueError("no `entries` object")
    return data


def samples(
    data: Mapping[str, Any], *, source: str, problems: list[str] | None = None
) -> Iterator[Sample]:
    """Every bench of every entry, in order, as a sample (measurement, failed or ambiguous);
    an entry whose commit or date cannot be used adds one line to `problems`."""
    for entries in data["entries"].values():
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and isinstance(entry.get("benches"), list):
                commit_id, why = commit_of(entry)
                seq, why_seq = _seq(entry.get("date"))
                for line in (why, why_seq):
                    if line and problems is not None:
                        problems.append(f"entry {index}: {line}")
                yield from _entry(entry, source=source, commit_id=commit_id, seq=seq)


def commit_of(entry: Mapping[str, Any]) -> tuple[str, str]:
    """The engine commit of a run (a hex sha), or "" and why its runs have the image only."""
    commit = entry.get("commit")
    sha = commit.get("id") if isinstance(commit, dict) else None
    if sha is None:
        return "", "no commit id: its runs are identified by image only"
    if not isinstance(sha, str) or not 7 <= len(sha) <= 40 or sha.strip(_HEX):
        return "", f"commit id {str(sha)[:40]!r} is not a git sha: ignored, runs keyed by image"
    return sha.lower(), ""


def _seq(date: object) -> tuple[int, str]:
    """The run's time in ms since the epoch; 0 (first in history) and why when unusable."""
    if isinstance(date, int) and not isinstance(date, bool) and 0 <= date < MAX_MS:
        return date, ""
    if isinstance(date, float) and math.isfinite(date) and 0 <= date < MAX_MS:
        return int(date), ""
    return 0, f"date {str(date)[:40]!r} is not a time in milliseconds: ordered first"


def _entry(entry: Mapping[str, Any], *, source: str, commit_id: str, seq: int) -> Iterator[Sample]:
    benches = [
        b for b in entry["benches"] if isinstance(b, dict) and isinstance(b.get("name"), str)
    ]
    counts = Counter(b["name"] for b in benches)
    parsed = [(b, _name(b["name"]), _extra(b.get("extra"))) for b in benches]
    docker_of: dict[str, str] = {}
    for _, (series, *_), extra in parsed:
        if "Docker" in extra:
            docker_of.setdefault(series, extra["Docker"])
    seen: Counter[str] = Counter()
    for bench, (series, point, metric, kind, better), extra in parsed:
        seen[bench["name"]] += 1
        docker = extra.get("Docker") or docker_of.get(series)
        run_match = _RUN.search(extra.get("Run", ""))
        run = f"{seq}:{run_match.group(1) if run_match else commit_id}"
        status, note, image = OK, "", _image(docker, commit_id)
        if image is None:
            status, note = AMBIGUOUS, image_from_ref(docker or "")[1]
            image = Image(ref=docker or "unknown", engine_commit=commit_id or None)
        value, unit, se, why = _value(bench, kind, metric)
        if why:
            status, note = (FAILED if value == 0 else AMBIGUOUS), why
        if counts[bench["name"]] > 1:
            run = f"{run}#{seen[bench['name']]}"  # each copy kept, none a measurement
            status = AMBIGUOUS
            note = f"name appears {counts[bench['name']]} times in one run"
        yield Sample(
            series=series,
            point=point,
            metric=metric,
            kind=kind,
            better=better,
            unit=unit,
            image=image,
            run=run,
            seq=seq,
            status=status,
            value=value,
            se=_binomial_se(value) if status == OK and point == "gsm8k" else se,
            threshold=_float(extra.get("Threshold")) if kind == ACCURACY else None,
            note=note,
            source=source,
        )


def _image(docker: str | None, commit_id: str) -> Image | None:
    if docker is None:
        # No image at all (the mocker runs the router's code): the commit is what was measured.
        return Image(ref=f"commit:{commit_id}", engine_commit=commit_id) if commit_id else None
    image, _ = image_from_ref(docker)
    if image is not None and commit_id:
        image = Image(ref=image.ref, tag=image.tag, digest=image.digest, engine_commit=commit_id)
    return image


def _name(name: str) -> tuple[str, str, str, str, str]:
    """(series, point, metric, kind, better) from a bench name."""
    if m := _EVAL.match(name):
        return m["series"], m["task"].lower(), "accuracy", ACCURACY, HIGHER
    if m := _ACCEPT.match(name):
        return m["series"], "mtp", "acceptance_rate", ACCEPTANCE, HIGHER
    if m := _LENGTH.match(name):
        return m["series"], "mtp", "accept_length", ACCEPTANCE, HIGHER
    m = _PERF.match(name) or _CELL.match(name)
    if m is None:
        return name, "-", "value", OTHER, HIGHER
    metric = _UNIT.sub("", m["metric"]).strip().lower()
    series = m["series"].removesuffix("::")
    if metric in ("accept length", "acceptance rate"):  # measured per perf point (DSpark runs)
        return series, m["point"], metric.replace(" ", "_"), ACCEPTANCE, HIGHER
    return series, m["point"], metric, *_perf_kind(metric)


def _perf_kind(metric: str) -> tuple[str, str]:
    if metric.startswith("_") or metric in ("perf point", "failed requests"):
        return OTHER, LOWER if metric == "failed requests" else HIGHER
    if "latency" in metric or metric in ("ttft", "tpot", "itl", "e2el"):
        return PERF, LOWER
    return PERF, HIGHER


def _value(
    bench: Mapping[str, Any], kind: str, metric: str
) -> tuple[float | None, str, float | None, str]:
    """(value, unit, standard error, why it is not a measurement or "")."""
    raw, unit = bench.get("value"), str(bench.get("unit") or "")[:40]
    value = finite(raw)
    if value is None:
        return None, unit, None, f"value {str(raw)[:40]!r} is not a number in float range"
    if value == 0 and kind in (PERF, ACCURACY):
        return 0.0, unit, None, "zero: the run failed (recorded as 0)"
    if value < 0:
        return value, unit, None, "negative value"
    if kind == ACCURACY:
        if value > 1:
            return value, unit, None, f"score {value:g} above 1: percent or fraction?"
        return value, "fraction", None, ""
    if kind == ACCEPTANCE and unit == "%":
        # 0 % is a measurement (acceptance collapsed: the same runs report 1.0 tokens/forward)
        if value > 100:
            return value, unit, None, f"acceptance {value:g} % above 100: percent or fraction?"
        return value / 100, "fraction", None, ""
    return value, unit, None, ""


def _binomial_se(value: float | None) -> float | None:
    return None if value is None else math.sqrt(value * (1 - value) / GSM8K_N)


def _extra(extra: object) -> dict[str, str]:
    """`Key: value | Key: value` (ATOM) or `k=v k=v Run: URL` (the mocker) as a mapping."""
    if not isinstance(extra, str):
        return {}
    fields: dict[str, str] = {}
    if " | " in extra or extra.startswith(("Run:", "Docker:")):
        for part in extra.split(" | "):
            key, sep, value = part.partition(":")
            if sep:
                fields.setdefault(key.strip(), value.strip())
        return fields
    head, _, run = extra.partition("Run:")
    fields["Run"] = run.strip()
    for token in head.split():
        key, sep, value = token.partition("=")
        if sep:
            fields.setdefault(key, value)
    return fields


def _float(text: str | None) -> float | None:
    try:
        return finite(float(text)) if text is not None else None
    except ValueError:
        return None
