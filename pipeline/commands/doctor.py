"""`relpipe doctor`: does relpipe still read the benchmark repository as the repository does?

    relpipe doctor [--repo PATH] [--python PY] [--timeout S] [--json]

Runs the repository's own code (its changelog validator, matrix validation and, where
importable, sweep generator) on the repository's own data, in an isolated Python, next to
relpipe's implementation (`pipeline.doctor`), and prints every disagreement: changelog verdicts,
master fields relpipe does not know, the masters' check, benchmark points per key.

The repository's code gets a minimal environment (no tokens or credentials: only PATH, LANG,
LC_ALL, LC_CTYPE and TZ pass; a temporary HOME) and its own process group, killed whole after
--timeout; it runs with your file permissions, so run doctor on checkouts whose code you would
run anyway (as the repository's own CI does).

Outcomes: agree (exit 0); disagree (exit 1, every disagreement listed); incomplete (exit 1: what
could not be compared, and why); "nothing to compare" (exit 0) where .relpipe.toml declares the
repository has no validator; exit 2 when the repository or its code cannot be read.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ...changelog.errors import ChangelogError
from ...changelog.repository.checkout import open_checkout
from ...changelog.repository.detect import OVERRIDE
from ...core import sanitize
from .. import doctor
from ..errors import PipelineError
from .parser import Parser, parser


def _parser() -> Parser:
    p = parser("relpipe doctor", __doc__)
    # What it runs, how it is contained, and the outcomes: the docstring after the usage line.
    p.epilog = (__doc__ or "").split("\n\n", 2)[2].strip()
    p.add_argument("--repo", metavar="PATH", default=".", help="the benchmark repository checkout")
    p.add_argument(
        "--python",
        metavar="PY",
        help="a Python with the repository's dependencies, pydantic and PyYAML "
        f"(default: a venv built once under {doctor.CACHE})",
    )
    p.add_argument(
        "--timeout",
        metavar="S",
        type=float,
        default=doctor.PROBE_TIMEOUT_S,
        help="seconds the repository's code may run before its process group is killed",
    )
    p.add_argument("--json", action="store_true", help="one JSON document")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        repo = open_checkout(Path(args.repo))
    except ChangelogError as exc:
        raise PipelineError(str(exc)) from None
    if not 0 < args.timeout <= doctor.PROBE_TIMEOUT_S * 4:
        raise PipelineError(f"--timeout {args.timeout:g}: give 1..{doctor.PROBE_TIMEOUT_S * 4:g}")
    if repo.era.validator:
        found = doctor.diagnose(repo, doctor.isolated_python(args.python), args.timeout)
    else:  # .relpipe.toml says the repository has no rules of its own to compare
        found = doctor.Diagnosis(
            disagreements=(),
            compared=("nothing",),
            skipped=(f"everything: the repository declares no validator ({OVERRIDE})",),
            declared_none=True,
        )
    if args.json:
        document = {
            "repository": str(repo.root),
            "layout": repo.era.name,
            "outcome": found.outcome,
            "agree": found.outcome == doctor.AGREE,
            "compared": list(found.compared),
            "skipped": list(found.skipped),
            "disagreements": [vars(d) for d in found.disagreements],
        }
        print(sanitize.json_text(document, indent=2))
    else:
        print(f"{repo.root} (layout {repo.era.name}): compared {', '.join(found.compared)}")
        for line in found.skipped:
            print(f"not compared: {line}")
        for d in found.disagreements:
            print(d.line())
        print(_closing(found))
    return 0 if found.outcome in (doctor.AGREE, doctor.NOTHING) else 1


def _closing(found: doctor.Diagnosis) -> str:
    if found.outcome == doctor.NOTHING:
        return f"relpipe and the repository: nothing to compare ({found.skipped[0]})"
    if found.outcome == doctor.INCOMPLETE:
        parts = ", ".join(line.split(":", 1)[0] for line in found.skipped)
        return (
            f"relpipe and the repository: incomplete ({len(found.skipped)} part(s) not "
            f"compared: {parts}; no disagreement in the rest)"
        )
    n = len(found.disagreements)
    return f"relpipe and the repository {found.outcome} ({n} disagreement(s))"
