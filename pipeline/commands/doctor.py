"""`relpipe doctor`: does relpipe still read the benchmark repository as the repository does?

    relpipe doctor [--repo PATH] [--python PY] [--json]

Runs the repository's own validator, matrix validation and (where importable) sweep generator
on the repository's own data, in an isolated Python, next to relpipe's implementation
(`pipeline.doctor`), and prints every disagreement: changelog verdicts, master fields relpipe
does not know, the masters' check, benchmark points per key. Exit 0 when they agree, 1 when
they do not, 2 when the repository or its code cannot be read.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from relpipe.changelog.errors import ChangelogError
from relpipe.changelog.repository.checkout import open_checkout
from relpipe.changelog.repository.detect import OVERRIDE
from relpipe.core import sanitize
from relpipe.pipeline import doctor
from relpipe.pipeline.commands.parser import Parser, parser
from relpipe.pipeline.errors import PipelineError


def _parser() -> Parser:
    p = parser("relpipe doctor", __doc__)
    p.add_argument("--repo", metavar="PATH", default=".", help="the benchmark repository checkout")
    p.add_argument(
        "--python",
        metavar="PY",
        help="a Python with the repository's dependencies, pydantic and PyYAML "
        f"(default: a venv built once under {doctor.CACHE})",
    )
    p.add_argument("--json", action="store_true", help="one JSON document")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        repo = open_checkout(Path(args.repo))
    except ChangelogError as exc:
        raise PipelineError(str(exc)) from None
    if repo.era.validator:
        found = doctor.diagnose(repo, doctor.isolated_python(args.python))
    else:  # .relpipe.toml says the repository has no rules of its own to compare
        found = doctor.Diagnosis(
            disagreements=(),
            compared=("nothing",),
            skipped=(f"the repository declares no validator ({OVERRIDE})",),
        )
    if args.json:
        document = {
            "repository": str(repo.root),
            "layout": repo.era.name,
            "agree": not found.disagreements,
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
        verdict = "disagree" if found.disagreements else "agree"
        print(f"relpipe and the repository {verdict} ({len(found.disagreements)} disagreement(s))")
    return 1 if found.disagreements else 0
