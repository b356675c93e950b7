"""`relpipe bisect --engine-repo PATH GOOD BAD` with engine commits: bisect inside one image.

ATOM's CI runs engine commits on top of a nightly image, and the results store keeps those runs
as (image, engine commit). Between a good and a bad engine commit, the runs already measured
narrow the range before anything is run: the last measured commit that was good and the first that
was bad (a regression, failure or collapse of the series there, judged as `relpipe history
regressions` judges it). What remains are the culprit candidates, ranked for the series' model,
and the commit to run next (the middle of what remains), as a bisect step would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..changelog.results import regressions, store
from ..validate.errors import ValidateError
from ..validate.precision import culprits, gitio
from .errors import PipelineError


@dataclass(frozen=True, kw_only=True)
class Narrowed:
    series: str
    good: str  # the last commit known good (GOOD, or a measured run after it)
    bad: str  # the first commit known bad (BAD, or a measured run before it)
    commits: int  # commits in good..bad
    measured: int  # runs of the series at commits of GOOD..BAD the store holds
    next_probe: str | None  # the middle commit of good..bad, when more than one remains
    suspects: culprits.Suspects


def span(repo: Path, good: str, bad: str) -> list[str]:
    """GOOD and the first-parent commits of GOOD..BAD, oldest first (full shas)."""
    try:
        shas = gitio.resolve(repo, [good, bad])
        out = gitio.run(repo, "rev-list", "--first-parent", "--reverse", f"{shas[0]}..{shas[1]}")
    except ValidateError as exc:
        raise PipelineError(str(exc).splitlines()[0]) from None
    between = out.decode().split()
    if not between or between[-1] != shas[1]:
        raise PipelineError(f"BAD {bad} does not descend from GOOD {good} in {repo}")
    return [shas[0], *between]


def narrow(repo: Path, db: store.Store, series: str, good: str, bad: str) -> Narrowed:
    """The range GOOD..BAD narrowed by the runs of `series` the store holds at its commits."""
    order = span(repo, good, bad)
    at = {sha: i for i, sha in enumerate(order)}
    findings = regressions.compare(db.measurements(), every=True, series=[series])
    bad_at = sorted(
        at[f.new_commit] for f in findings if f.kind in regressions.BAD_KINDS and f.new_commit in at
    )
    first_bad = min(bad_at, default=len(order) - 1)
    measured = {m.engine_commit or "" for m in db.measurements(series=[series])} & set(order)
    good_at = [at[sha] for sha in measured if at[sha] < first_bad and at[sha] not in bad_at]
    last_good = max(good_at, default=0)
    lo, hi = order[last_good], order[first_bad]
    rest = first_bad - last_good
    return Narrowed(
        series=series,
        good=lo,
        bad=hi,
        commits=rest,
        measured=len(measured),
        next_probe=order[(last_good + first_bad) // 2] if rest > 1 else None,
        suspects=culprits.find(repo, lo, hi, series=series),
    )
