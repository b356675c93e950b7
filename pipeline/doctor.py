"""`relpipe doctor`: the benchmark repository's own rules next to relpipe's, on the repository's
own data, and every place they disagree.

The repository's code runs in an isolated Python (a venv with its dependencies, pydantic and
PyYAML, built once and cached under ~/.cache/relpipe/doctor/, or one given with --python):
`pipeline/doctor_probe.py` imports its changelog validator, its matrix validation and, where
present, its sweep generator. relpipe computes the same things in this process. Compared:
- verdicts: each of the changelog's last entries appended to the entries before it, plus
  mutations of the last one (an edited old entry, a pr-link to another PR, a duplicate key);
- fields: every field the repository's master-config models know that relpipe's field table
  (`changelog.configs.schema`) does not;
- masters: the repository's check of its `srt-recipe` rows against relpipe's reading;
- points per key: the generator's benchmark points against relpipe's plan (when importable).

Three outcomes: agree (everything compared, no difference), disagree (every difference listed),
incomplete (something could not be compared: named, with the reason). Only agree is exit 0, and
"nothing to compare", when the repository's `.relpipe.toml` declares it has no validator of its
own (the user's statement, not a comparison: never called agree).

The repository's code is not trusted with the user's secrets: it gets a minimal environment (a
few named variables, no tokens or credentials, a temporary HOME) and runs in its own process
group, killed whole on timeout. It still runs with the user's file permissions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..changelog.configs.load import load_master, load_masters
from ..changelog.configs.points import plan_key
from ..changelog.configs.schema import KNOWN, line_of, unknown_fields
from ..changelog.entry import ERROR
from ..changelog.errors import ChangelogError
from ..changelog.repository.checkout import Checkout
from ..changelog.repository.detect import OVERRIDE
from ..core import jsonload, process
from ..core.files import file_lock
from ..core.heartbeat import heartbeat
from ..validate.gate import hook
from .errors import PipelineError

REQUIREMENTS = ("pydantic>=2.7,<3", "PyYAML>=6.0")
CACHE = Path(os.environ.get("RELPIPE_DOCTOR_CACHE", Path.home() / ".cache/relpipe/doctor"))
PROBE = Path(__file__).with_name("doctor_probe.py")
PROBE_TIMEOUT_S = 900.0  # the probe, and each step of building its venv (pip install)
ANSWER_LIMIT = 64 << 20  # bytes of the probe's JSON answer read back
# The only variables of the user's environment the repository's code sees: an allowlist, so a
# token (GITHUB_TOKEN, GH_TOKEN), a registry password or a database URL never reaches it.
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
AGREE, DISAGREE, INCOMPLETE = "agree", "disagree", "incomplete"
NOTHING = "nothing to compare"  # the repository declares no validator (.relpipe.toml)
LAST_ENTRIES = 5
_ENTRY = re.compile(rb"^- ", re.MULTILINE)
_PR = re.compile(rb"pr-link:\s*(https://github\.com/[^/\s]+/[^/\s]+)/pull/(\d+)")


@dataclass(frozen=True, kw_only=True)
class Disagreement:
    kind: str  # verdict | field | masters | points
    subject: str  # the case, field or key
    repository: str  # what the repository's own code says
    relpipe: str  # what relpipe says

    def line(self) -> str:
        return (
            f"{self.kind}: {self.subject}: repository: {self.repository}; relpipe: {self.relpipe}"
        )


@dataclass(frozen=True, kw_only=True)
class Case:
    label: str
    base: bytes
    head: bytes
    pr: int | None
    repo_url: str | None


def isolated_python(python: str | None) -> str:
    """The interpreter that runs the repository's code: `python`, else a cached venv."""
    if python:
        return python
    key = hashlib.sha256("\n".join((sys.version, *REQUIREMENTS)).encode()).hexdigest()[:12]
    venv = CACHE / f"venv-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with file_lock(CACHE / f"venv-{key}.lock", timeout_s=900, what="doctor venv lock"):
        if not (venv / ".ready").is_file():
            _build_venv(venv)
            (venv / ".ready").write_text("ok\n")
    return str(venv / "bin" / "python")


def _build_venv(venv: Path) -> None:
    """A venv at `venv` with REQUIREMENTS (about a minute: said every 10 s on stderr)."""
    with heartbeat(f"relpipe doctor: building its Python ({' '.join(REQUIREMENTS)}) in {venv}"):
        for argv in (
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *REQUIREMENTS],
        ):
            try:
                done = process.run(argv, timeout=PROBE_TIMEOUT_S, check=False)
                said = _last_line(done.stderr, "?") if done.returncode else ""
            except process.ProcessError as exc:
                said = str(exc)
            if said:
                raise PipelineError(
                    f"cannot build the doctor's venv ({' '.join(REQUIREMENTS)}): "
                    f"{said}; give --python PY"
                )


def _last_line(stderr: bytes, default: str) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return process.one_line(lines[-1]) if lines else default


def cases(changelog: bytes) -> list[Case]:
    """The last entries, each appended to the ones before it, and mutations of the last."""
    starts = [m.start() for m in _ENTRY.finditer(changelog)]
    bounds = [*starts, len(changelog)]
    out = []
    for i in range(max(0, len(starts) - LAST_ENTRIES), len(starts)):
        head = changelog[: bounds[i + 1]].rstrip(b"\n") + b"\n"  # as committed: one newline
        m = _PR.search(head, starts[i])
        pr, url = (int(m.group(2)), m.group(1).decode()) if m else (None, None)
        base = changelog[: starts[i]].rstrip(b"\n") + b"\n" if i else b""
        out.append(Case(label=f"entry {i + 1}", base=base, head=head, pr=pr, repo_url=url))
    if len(starts) >= 2 and out:
        last = out[-1]
        old = changelog[starts[0] : starts[1]]
        edited = old.replace(b"\n  description:\n", b'\n  description:\n    - "edited"\n', 1)
        first_pr = last.pr + 1 if last.pr is not None else None
        out += [
            Case(
                label=f"{last.label} with entry 1 edited",
                base=last.base,
                head=last.head.replace(old, edited, 1),
                pr=last.pr,
                repo_url=last.repo_url,
            ),
            Case(
                label=f"{last.label} checked as PR {first_pr}",
                base=last.base,
                head=last.head,
                pr=first_pr,
                repo_url=last.repo_url,
            ),
            Case(
                label=f"{last.label} with a duplicate key",
                base=last.base,
                head=last.head.rstrip(b"\n") + b"\n  pr-link: x\n",
                pr=last.pr,
                repo_url=last.repo_url,
            ),
        ]
    return out


def relpipe_verdict(case: Case) -> tuple[bool, str]:

    report = hook.check(
        case.base,
        case.head,
        hook.Policy(repo_url=case.repo_url, pr_number=case.pr, config_keys=None),
    )
    errors = [f for f in report.findings if f.severity == ERROR]
    return not errors, errors[0].format(hook.DEFAULT_CHANGELOG) if errors else ""


def minimal_env(home: Path) -> dict[str, str]:
    """The environment of the repository's code: `PASSED_ENV`, and `home` as HOME and TMPDIR."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(HOME=str(home), TMPDIR=str(home), PYTHONDONTWRITEBYTECODE="1")
    return env


def probe(
    python: str,
    repo: Checkout,
    all_cases: list[Case],
    timeout: float = PROBE_TIMEOUT_S,
) -> dict[str, Any]:
    era = repo.era
    request = {
        "project": str(repo.root / era.project) if era.project else str(repo.root),
        "validator": str(repo.root / era.validator),
        "masters": [str(p) for p in repo.masters()],
        "runners": str(repo.root / era.runners),
        "cases": [
            {
                "base": base64.b64encode(c.base).decode(),
                "head": base64.b64encode(c.head).decode(),
                "pr": c.pr,
            }
            for c in all_cases
        ],
    }
    failed = f"the repository's validator did not run ({era.validator})"
    try:
        with tempfile.TemporaryDirectory(prefix="relpipe-doctor-home-") as home:
            # Its own session: a timeout kills the probe and every child it left (killpg).
            done = process.Process(
                [python, "-I", str(PROBE)],
                input=json.dumps(request).encode(),
                env=minimal_env(Path(home)),
                new_session=True,
                what="the repository's code (doctor probe)",
            ).wait(timeout=timeout, limit=ANSWER_LIMIT)
    except process.ProcessError as exc:
        raise PipelineError(f"{failed}: {exc}") from None
    if done.returncode != 0:
        raise PipelineError(f"{failed}: {_last_line(done.stderr, 'no output')}")
    try:
        answer: dict[str, Any] = jsonload.loads(done.stdout.decode("utf-8", "replace"))
    except json.JSONDecodeError:
        raise PipelineError("the doctor probe printed no JSON answer") from None
    return answer


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    disagreements: tuple[Disagreement, ...]
    compared: tuple[str, ...]  # what was compared, with counts
    skipped: tuple[str, ...]  # what could not be compared, and why ("points: ModuleNotFound...")
    declared_none: bool = False  # the repository declares it has no validator: nothing to run

    @property
    def outcome(self) -> str:
        """disagree when anything differs; else incomplete when anything was not compared."""
        if self.declared_none:
            return NOTHING
        if self.disagreements:
            return DISAGREE
        return INCOMPLETE if self.skipped else AGREE


def diagnose(repo: Checkout, python: str, timeout: float = PROBE_TIMEOUT_S) -> Diagnosis:
    """Every disagreement between the repository's own code and relpipe on its own data."""
    path = repo.root / repo.era.changelog
    if not path.is_file():
        raise PipelineError(f"{repo.era.changelog} is not in {repo.root}")
    if not (repo.root / repo.era.validator).is_file():
        # Early trees of an era had no validator of their own (InferenceX before 2026-07):
        # nothing of theirs to run; relpipe's reading of the masters is still compared.
        return Diagnosis(
            disagreements=tuple(drift(repo)),
            compared=("the master fields",),
            skipped=(
                f"the repository's code: this checkout has no {repo.era.validator} (the "
                f"{repo.era.name} era's validator; if the repository has none, say so in "
                f'{OVERRIDE}: [tool.relpipe] validator = "")',
            ),
        )
    all_cases = cases(path.read_bytes())
    answer = probe(python, repo, all_cases, timeout)
    found: list[Disagreement] = []
    for case, (ok, reason) in zip(all_cases, answer["verdicts"], strict=True):
        mine, why = relpipe_verdict(case)
        if mine != ok:
            theirs = "accepts" if ok else f"rejects ({reason})"
            found.append(
                Disagreement(
                    kind="verdict",
                    subject=case.label,
                    repository=theirs,
                    relpipe="accepts" if mine else f"rejects ({why})",
                )
            )
    known = KNOWN | set(repo.era.extra_fields) | repo.era.master_fields
    for name in answer["fields"]:
        if name not in known:
            found.append(
                Disagreement(
                    kind="field",
                    subject=name,
                    repository="a master-config field",
                    relpipe="unknown",
                )
            )
    skipped = [f"fields: {answer['fields_error']}"] if answer.get("fields_error") else []
    compared = [f"{len(all_cases)} changelog case(s)"]
    if not answer.get("fields_error"):
        compared.append(f"{len(answer['fields'])} master field(s)")
    masters_ok, masters_why = _relpipe_masters(repo)
    theirs_error = answer.get("masters_error")
    if answer.get("masters_skipped"):
        skipped.append(f"masters: {answer['masters_skipped']}")
    elif answer.get("masters_absent"):
        pass  # the repository has no such check (before 2026-10): nothing to compare
    elif (theirs_error is None) != masters_ok:
        found.append(
            Disagreement(
                kind="masters",
                subject=repo.era.masters,
                repository=theirs_error or "accepts",
                relpipe=masters_why or "accepts",
            )
        )
    if not answer.get("masters_skipped") and not answer.get("masters_absent"):
        compared.append("the masters' check")
    points = answer.get("points")
    if points is None:
        skipped.append(f"points: {answer.get('points_error')}")
    else:
        found += _points(repo, points)
        compared.append(f"points of {len(points)} key(s)")
    named = {d.subject for d in found if d.kind == "field"}
    found += [d for d in drift(repo) if d.subject.rpartition(" ")[2] not in named]
    compared.append("the master fields")
    return Diagnosis(disagreements=tuple(found), compared=tuple(compared), skipped=tuple(skipped))


def drift(repo: Checkout) -> list[Disagreement]:
    """Fields the repository's masters use that relpipe does not know (neither its schema nor
    the era's declaration nor `extra-fields`), each at its file:line: the day the repository's
    rules and relpipe's part. A master that does not parse is one row too."""
    known = set(repo.era.extra_fields) | repo.era.master_fields
    out: list[Disagreement] = []
    for master in repo.masters():
        rel = master.relative_to(repo.root).as_posix()
        try:
            configs = load_master(master)
            lines = master.read_text(encoding="utf-8").splitlines()
        except (ChangelogError, OSError, UnicodeDecodeError) as exc:
            out.append(
                Disagreement(
                    kind="masters", subject=rel, repository="a master config", relpipe=f"{exc}"
                )
            )
            continue
        for key, cfg in configs.items():
            start = line_of(lines, 1, key)
            for place, name in unknown_fields(key, cfg):
                if name not in known:
                    where = f"{rel}:{line_of(lines, start, name)}"
                    used = f"used in {place + ' of ' if place else ''}{key}"
                    out.append(
                        Disagreement(
                            kind="field",
                            subject=f"{where} {name}",
                            repository=used,
                            relpipe="unknown",
                        )
                    )
    return out


def _relpipe_masters(repo: Checkout) -> tuple[bool, str]:

    try:
        for master in repo.masters():
            for key, cfg in load_master(master).items():
                for _, name in unknown_fields(key, cfg):
                    if name not in repo.era.extra_fields and name not in repo.era.master_fields:
                        return False, f"{master.name}: unknown field {name!r} in {key}"
    except ChangelogError as exc:
        return False, str(exc)
    return True, ""


def _points(repo: Checkout, theirs: dict[str, int]) -> list[Disagreement]:

    configs = load_masters(repo.masters()).configs
    out = []
    for key, n in sorted(theirs.items()):
        try:
            mine = str(len(plan_key(key, configs[key]))) if key in configs else "no such key"
        except ChangelogError as exc:
            mine = f"error ({exc})"
        if mine != str(n):
            out.append(
                Disagreement(
                    kind="points",
                    subject=key,
                    repository=f"{n} point(s)",
                    relpipe=f"{mine} point(s)",
                )
            )
    return out
