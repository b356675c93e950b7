"""Facts of the effective launch path (scripts, helpers, runners, recipes) of the keys in scope.

Four checks read the same lines, so each file is scanned once (`scan`) and every check filters
the hits: arch-hacks (checklist: "the model architecture isn't changed with benchmark hacks like
using --hf-overrides"), engine-patches ("does not patch the inference engine or serving stack
... .patch files / git apply / patch, inline patches ..., in-place edits of site-packages,
monkey-patching, overwriting container files, and installing forked/rebuilt engine wheels",
waived only by docs/waiver/<PR>.md), chat-template ("speculative decoding PRs uses chat
templates") and draft-as-shipped (no lowered draft precision; SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE,
which runs the NextN draft's MoE in FP8 on an NVFP4 checkpoint, is prohibited anywhere).

Shell lines are logical lines without comments (a commented-out flag is not a finding); a hit in
a branch guarded by `MODEL_PREFIX`/`FRAMEWORK`/`PRECISION` tests that exclude the key is not the
key's. Recipe hits carry the line of the block they were inherited from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import re2

from ...changelog.repository import launch as keyfiles
from ...core.check import Evidence, Judgement, judged
from ...core.status import FAIL, NA, PASS, WARN
from ..errors import ValidateError
from . import actions, bash
from .context import Review, plural
from .rx import rx
from .scope import KeyScope, followable, load_masters
from .waiver import Waiver, load_waivers

_GUARD = re2.compile(r"\$\{?(MODEL_PREFIX|FRAMEWORK|PRECISION)\}?\"?\s*==\s*\"?([\w.*-]+)")
_NEXTN = "SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE"
_DRAFT_PRECISION = re2.compile(
    r"(?i)speculative[-_]draft[-_](?:model[-_])?(?:quantization|dtype)|draft[-_](?:model[-_])?"
    r"(?:quantization|dtype)|speculative[-_]config[^\n]*[\"']quantization[\"']"
)


def _abbreviations(flag: str, unique: int) -> str:
    """A long option and every prefix of it argparse accepts (`allow_abbrev`, the default in
    vLLM's and SGLang's parsers): its first `unique` characters make it unambiguous among the
    engine's flags; `-` and `_` alike (vLLM reads `--hf_overrides`). RE2: linear, nested."""
    rest = "".join(f"(?:{'[-_]' if c == '-' else re2.escape(c)}" for c in flag[unique:])
    head = "".join("[-_]" if c == "-" else re2.escape(c) for c in flag[2:unique])
    return f"--?{head}{rest}{')?' * (len(flag) - unique)}(?:[=\\s\"']|$)"


# `--hf-o` is vLLM's only `--hf-o...` flag (`--hf-config-path`, `--hf-token`, `--hf-revision` are
# the others), `--json-m` SGLang's only `--json-m...`: an abbreviation is the flag (issue 34.9).
_ARCH = re2.compile(
    _abbreviations("--hf-overrides", 6)
    + "|"
    + _abbreviations("--json-model-override-args", 8)
    + r"|\bhf[-_]overrides\b|json[-_]model[-_]override[-_]args|"
    r"--?(?:num[-_]hidden[-_]layers|skip[-_]layers?|layers?[-_]to[-_]skip)\b"
)
_FLAG_END = "=\"' \t\n"  # what ends a flag in _ARCH's match (not part of its name)
_CHAT_ON = re2.compile(
    r"(?i)--use-chat-template(?:[^)]|$)|use_chat_template\s*:\s*true|"
    r"AIPERF_APPLY_CHAT_TEMPLATE[\"']?\s*[=:]\s*[\"']?(?:1|true)|"
    r"--endpoint-type\s+chat|--apply[-_]chat[-_]template"
)
_CHAT_KWARGS = re2.compile(r"(?i)chat[-_]template[-_]kwargs|CHAT_TEMPLATE_KWARGS")
_COMPLETIONS = re2.compile(r"/v1/completions\b|--endpoint-type\s+completions|--backend\s+vllm\b")
_REPLAY = "run_agentic_replay_and_write_outputs"


@dataclass(frozen=True, kw_only=True)
class Hit:
    """One fact in one file: line, kind (the check family's word) and the text."""

    path: str
    line: int
    kind: str
    text: str
    severity: str = FAIL
    guard: tuple[tuple[str, str], ...] = ()  # (variable, value) tests of the enclosing branch


def _guards(raw: list[str], number: int) -> tuple[tuple[str, str], ...]:
    """Equality tests of the `if`/`elif` branches enclosing physical line `number` (1-based)."""
    if number < 1 or number > len(raw):
        return ()
    indent = len(raw[number - 1]) - len(raw[number - 1].lstrip())
    tests: list[tuple[str, str]] = []
    for i in range(number - 2, -1, -1):
        line = raw[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = len(line) - len(line.lstrip())
        if here < indent:
            if rx(r"\s*(?:if|elif)\b").match(line):
                if rx(r"\bfi\s*(?:;|$)").search(line):
                    continue  # a one-line `if ... fi` encloses nothing below it
                cond = line.split("then", 1)[0]
                # Only a conjunction of equality tests excludes keys: with `||`, `!` or `-o`
                # the branch may run for any key (`[[ $MODEL_PREFIX == zzz ]] || true`).
                if not rx(r"\|\||!|\s-o\s").search(cond):
                    tests += _GUARD.findall(line)
            indent = here
        if indent == 0:
            break
    return tuple(tests)


def applies(hit: Hit, scope: KeyScope) -> bool:
    """Whether a hit's enclosing branch can run for this key (unknown tests: it can)."""
    values = {
        "MODEL_PREFIX": str(scope.config.get("model-prefix", "")),
        "FRAMEWORK": scope.framework,
        "PRECISION": str(scope.config.get("precision", "")),
    }
    tested: dict[str, set[str]] = {}
    for var, value in hit.guard:
        tested.setdefault(var, set()).add(value)
    return all(values[var] in vals or any("*" in v for v in vals) for var, vals in tested.items())


def shell_hits(path: str, text: str, raw: list[str]) -> list[Hit]:
    """The facts of a launch script read as bash reads it (bash.py, actions.py)."""
    script = bash.parse(text)
    hits = [
        Hit(
            path=path,
            line=f.line,
            kind=f.kind,
            text=f.text,
            severity=f.severity,
            guard=_guards(raw, f.line),
        )
        for f in actions.facts(script)
    ]
    written: set[str] = set()  # kinds found where they are written (an assignment, an array)
    for cmd in script.commands:
        line = " ".join(cmd.text.split())
        if cmd.argv and cmd.argv[0].rsplit("/", 1)[-1] in ("echo", "printf"):
            continue  # a message about a command is not the command
        physical = raw[cmd.line - 1] if 0 < cmd.line <= len(raw) else ""

        def add(
            kind: str,
            sev: str = FAIL,
            t: str = line,
            n: int = cmd.line,
            here: str = physical,
            assignment: bool = not cmd.argv,
        ) -> None:
            # A value reported where it was assigned is not reported again at each expansion
            # (`"${VLLM_CMD[@]}"` of an array whose element has the flag).
            token = kind.split(": ", 1)[1]
            if kind in written and token not in here:
                return
            if assignment or token in here:
                written.add(kind)
            hits.append(
                Hit(path=path, line=n, kind=kind, text=t[:200], severity=sev, guard=_guards(raw, n))
            )

        if _NEXTN in line or (cmd.stdin and _NEXTN in cmd.stdin.text):
            add("draft: prohibited")
        if _DRAFT_PRECISION.search(line):
            add("draft: draft-model precision override")
        if _ARCH.search(line):
            add("arch: " + _ARCH.search(line).group(0).rstrip(_FLAG_END))  # type: ignore[union-attr]
        if _CHAT_ON.search(line):
            add("chat: " + _CHAT_ON.search(line).group(0), PASS)  # type: ignore[union-attr]
        if _CHAT_KWARGS.search(line):
            add("chatkw: template kwargs", PASS)
        if _COMPLETIONS.search(line):
            add("chat-off: raw completions endpoint", WARN)
        if cmd.argv and cmd.argv[0] == _REPLAY:
            add("chat-replay: agentic trace replay (chat endpoint)", PASS)
        if (
            len(cmd.argv) > 1
            and cmd.argv[0] in ("source", ".")
            and cmd.argv[1].endswith(".sh")
            and not followable(cmd.argv[1])
        ):
            # A script named through a variable or by an absolute path is not on the launch
            # path relpipe reads: what it does is unknown (issue 34.9).
            add(f"unread: sources {cmd.argv[1][:120]}, not followed", WARN)
    return hits


def _yaml_hits(path: str, lines: Sequence[str]) -> list[Hit]:
    """Hits of a recipe (YAML): the same families as a script's, read line by line outside
    comments (a recipe runs no commands, so no guards)."""
    hits: list[Hit] = []
    for n, raw in enumerate(lines, start=1):
        code = raw.split("#", 1)[0] if not raw.lstrip().startswith("#") else ""
        text = raw.strip()
        if _NEXTN in code:
            hits.append(Hit(path=path, line=n, kind="draft: prohibited", text=text[:200]))
        arch = _ARCH.search(code)
        for kind, severity, found in (
            ("draft: draft-model precision override", FAIL, _DRAFT_PRECISION.search(code)),
            (f"arch: {arch.group(0).rstrip(_FLAG_END) if arch else ''}", FAIL, arch),
            ("chat: use_chat_template", PASS, _CHAT_ON.search(code)),
            ("chatkw: template kwargs", PASS, _CHAT_KWARGS.search(code)),
            ("chat-replay: agentic_srt.sh replay", PASS, rx(r"agentic_srt\.sh").search(code)),
        ):
            if found:
                hits.append(Hit(path=path, line=n, kind=kind, text=text, severity=severity))
    return hits


def scan(review: Review, path: str) -> list[Hit]:
    """Every hit of one file (computed once per run)."""
    key = ("hits", path)
    memo = review.source.memo.get(key)
    if memo is not None:
        return memo  # type: ignore[return-value]
    hits: list[Hit] = []
    if path.endswith((".yaml", ".yml")):
        hits = _yaml_hits(path, review.source.lines(path))
    else:
        source_lines = review.source.lines(path)
        hits = shell_hits(path, review.source.text(path) or "", source_lines)
    review.source.memo[key] = hits
    return hits


def _key_hits(review: Review, scope: KeyScope, prefix: str) -> list[Hit]:
    out = []
    paths = [u.path for u in scope.files]
    if any(u.path.endswith("agentic_srt.sh") for u in scope.files) is False and any(
        h.kind.startswith("chat-replay: agentic_srt") for p in paths for h in scan(review, p)
    ):
        paths.append(keyfiles.multinode_agentic_client(review.source.era))
    # What the parser could not read can hide a patch or an override: those checks WARN on it.
    wanted = (prefix, "unread:") if prefix in ("patch:", "arch:") else (prefix,)
    for path in paths:
        out += [h for h in scan(review, path) if h.kind.startswith(wanted) and applies(h, scope)]
    return [_preexisting(review, scope, h) for h in out]


def _preexisting(review: Review, scope: KeyScope, hit: Hit) -> Hit:
    """A change is judged on what it changes: a FAIL on a line it did not touch, of a key that
    already existed at the base, is listed as a pre-existing WARN (audits keep it a FAIL)."""
    if hit.severity != FAIL or review.change is None or review.options.audit:
        return hit
    if _changed(review, hit) or scope.key not in _base_keys(review):
        return hit
    return Hit(
        path=hit.path,
        line=hit.line,
        kind=hit.kind,
        text=f"pre-existing: {hit.text}",
        severity=WARN,
        guard=hit.guard,
    )


def _base_keys(review: Review) -> frozenset[str]:
    base = review.base_source
    if base is None:
        return frozenset()
    memo = base.memo.get(("keys", "base"))
    if memo is None:
        try:
            memo = frozenset(load_masters(base).configs)
        except ValidateError:
            memo = frozenset()  # the base's keys unknown: every finding stays the change's
        base.memo[("keys", "base")] = memo
    return memo  # type: ignore[return-value]


def _changed(review: Review, hit: Hit) -> bool:
    if review.change is None:
        return True
    return hit.line in review.change.lines.get(hit.path, frozenset())


def _coverage(review: Review) -> list[Evidence]:
    """Launch-path files named but not in the tree or not readable, every one (the Markdown
    comment shows the first rows of a check, `--json` all of them)."""
    return [Evidence(e.where, f"not checked: {e.what}") for e in dict.fromkeys(review.unresolved())]


def _none_in_scope() -> Judgement:
    return judged(NA, "no config key in scope (give --config-key, --all-keys or a change)")


def _verdict(review: Review, bad: list[Hit], ok: str, what: str) -> Judgement:
    if not review.scopes:
        return _none_in_scope()
    rows = [Evidence.at(h.path, h.line, f"{h.kind.split(': ', 1)[1]}: {h.text}") for h in bad]
    fails = [h for h in bad if h.severity == FAIL]
    gaps = _coverage(review)
    n_gaps = len(set(review.unresolved()))
    if fails:
        first = fails[0]
        return judged(
            FAIL,
            f"{what} at {first.path}:{first.line} (+{len(fails) - 1} more)"
            if len(fails) > 1
            else f"{what} at {first.path}:{first.line}",
            [*rows, *gaps],
        )
    if bad or gaps:
        why = f"{plural(len(bad), 'finding')} to review" if bad else ok
        extra = f"; {plural(n_gaps, 'launch-path item')} not checked" if gaps else ""
        return judged(WARN, why + extra, [*rows, *gaps])
    n = len({u.path for _, u in review.uses()})
    return judged(PASS, f"{ok} ({plural(n, 'file')} of {len(review.scopes)} key(s))")


def _dedupe(hits: Iterable[Hit]) -> list[Hit]:
    return list(dict.fromkeys(hits))


def check_arch(review: Review) -> Judgement:
    bad = _dedupe(h for s in review.scopes for h in _key_hits(review, s, "arch:"))
    return _verdict(
        review,
        bad,
        "no architecture override in the launch path",
        "architecture override",
    )


def check_draft(review: Review) -> Judgement:
    bad = _dedupe(h for s in review.scopes for h in _key_hits(review, s, "draft:"))
    # Say which selected recipe block runs a recipe hit: the base block's settings are
    # inherited by every override, and that is what "inherited settings included" means.
    runs: dict[tuple[str, int], str] = {}
    for scope in review.scopes:
        for recipe in scope.recipes:
            for leaf in recipe.leaves:
                runs.setdefault((recipe.file, leaf.line), f"{recipe.selector or 'the recipe'}")
    bad = [
        Hit(
            path=h.path,
            line=h.line,
            kind=h.kind,
            text=f"{h.text} (in effect for {runs[(h.path, h.line)]})"
            if (h.path, h.line) in runs
            else h.text,
            severity=h.severity,
            guard=h.guard,
        )
        for h in bad
    ]
    return _verdict(
        review,
        bad,
        "no draft-precision override in the effective launch path",
        "draft model not run as shipped",
    )


def check_patches(review: Review) -> Judgement:
    if not review.scopes:
        return _none_in_scope()
    waivers = load_waivers(review.source)
    bad: list[Hit] = []
    rows: list[Evidence] = []
    for hit in _dedupe(h for s in review.scopes for h in _key_hits(review, s, "patch:")):
        cover = [w for w in waivers if w.covers(hit.path)]
        if cover and hit.severity == FAIL:
            w = cover[0]
            if w.missing:
                bad.append(hit)
                rows.append(Evidence(w.path, f"waiver lacks: {', '.join(w.missing)}"))
            elif (
                review.options.pr is not None
                and _changed(review, hit)
                and review.change
                and (w.number != review.options.pr)
            ):
                bad.append(hit)
                rows.append(Evidence(w.path, f"new patch needs docs/waiver/{review.options.pr}.md"))
            else:
                rows.append(Evidence.at(hit.path, hit.line, f"waived by {w.path}: {hit.text}"))
            continue
        bad.append(hit)
    res = _verdict(
        review,
        bad,
        "no engine patch in the launch path",
        "engine patched without a waiver",
    )
    if res.status == PASS and rows:
        return judged(
            PASS,
            f"every patch is covered by a complete waiver ({plural(len(rows), 'row')})",
            rows,
        )
    return judged(res.status, res.reason, [*res.evidence, *rows])


def check_chat(review: Review) -> Judgement:
    if not review.scopes:
        return _none_in_scope()
    spec = [s for s in review.scopes if s.agentic and s.spec_decoding()]
    if not spec:
        return judged(NA, "no agentic speculative-decoding key in scope")
    rows: list[Evidence] = []
    failing: list[str] = []
    unsure: list[str] = []
    for scope in spec:
        roles = {u.path: u.role for u in scope.files}
        found = _key_hits(review, scope, "chat-replay:") + _key_hits(review, scope, "chat:")
        # Only the key's own script or recipe decides: a library merely defines the options
        # (benchmark_lib.sh has both chat and raw clients); its lines show the mechanism.
        own = [h for h in found if roles.get(h.path) in ("script", "recipe")]
        library = [h for h in found if roles.get(h.path) not in ("script", "recipe")]
        kwargs = _key_hits(review, scope, "chatkw:")
        off = [h for h in _key_hits(review, scope, "chat-off:") if roles.get(h.path) != "helper"]
        if own:
            h = own[0]
            rows.append(Evidence.at(h.path, h.line, f"{scope.key}: {h.kind.split(': ', 1)[1]}"))
            if h.kind.startswith("chat-replay:"):
                rows += [
                    Evidence.at(x.path, x.line, f"{scope.key}: replay client: {x.text}")
                    for x in library
                    if "endpoint-type" in x.text
                ][:1]
            rows += [
                Evidence.at(k.path, k.line, f"{scope.key}: kwargs {k.text}") for k in kwargs[:2]
            ]
        elif off:
            failing.append(scope.key)
            h = off[0]
            rows.append(Evidence.at(h.path, h.line, f"{scope.key}: {h.text}"))
        else:
            unsure.append(scope.key)
            rows.append(
                Evidence.at(
                    scope.master,
                    scope.line,
                    f"{scope.key}: no chat-template client found in its script or recipe",
                )
            )
    if failing:
        return judged(FAIL, f"spec-decode benchmark without chat template: {failing[0]}", rows)
    if unsure:
        return judged(
            WARN,
            f"no chat-template client found for {plural(len(unsure), 'key')}: {unsure[0]}",
            rows,
        )
    return judged(
        PASS,
        f"{plural(len(spec), 'agentic spec-decode key')} benchmark through the chat template",
        rows,
    )


__all__ = ["Hit", "Waiver", "check_arch", "check_chat", "check_draft", "check_patches", "scan"]
