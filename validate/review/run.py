"""Run the review: resolve the change and the keys in scope, then every requested check.

Over a change, the keys in scope are those whose master-config block has a changed line or whose
resolved launch path (scripts, helpers, runners, recipes) contains a changed file. Over keys,
they are the named keys. The head is the working tree (pre-commit's view) unless `head_ref`
names a commit; the base defaults to the merge-base with the upstream branch, else HEAD.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import re2

from ...changelog.repository.era import MODELS_NAME, Era
from ...core.check import Check, Checklist, declare, judged
from ...core.status import NA, PASS, WARN
from ..errors import ValidateError
from ..precision import gitio
from . import artifacts, images, launch, models, owners, required, yamlkeys
from .context import Change, Options, Review
from .scope import (
    Masters,
    load_masters,
    master_paths,
    scope_keys,
    select_keys,
)
from .source import Source, open_source, path_text

# The review's checks, in the order they are reported: each declared once, with its title and
# whether it is fast and local enough for the commit hook (`--fast`). A new check is one line here.
CHECKS = Checklist[Review](
    declare("owners", "code owners of the changed files", owners.check_owners, fast=True),
    declare("checklist", "sign-off uses the current checklist", owners.check_checklist, fast=True),
    declare("upstream-images", "upstream vLLM/SGLang images", images.check_images, fast=True),
    declare(
        "deprecated",
        f"no deprecated model or scenario ({MODELS_NAME})",
        models.check_deprecated,
        fast=True,
    ),
    declare("arch-hacks", "no architecture hacks", launch.check_arch, fast=True),
    declare(
        "chat-template",
        "spec-decode benchmarks use the chat template",
        launch.check_chat,
        fast=True,
    ),
    declare(
        "engine-patches", "no engine patches without a waiver", launch.check_patches, fast=True
    ),
    declare("golden-al", "golden acceptance length", artifacts.check_golden, fast=True),
    declare(
        "append-only",
        "append-only keeps every existing point",
        artifacts.check_append_only,
        fast=True,
    ),
    declare("draft-as-shipped", "draft model runs as shipped", launch.check_draft, fast=True),
    declare(
        "yaml-keys", "no duplicate key in the YAML files read", yamlkeys.check_yaml_keys, fast=True
    ),
    declare(
        "changelog-required",
        "a benchmark-affecting change has a changelog entry",
        required.check_changelog_required,
        fast=True,
    ),
    declare("pareto", "Pareto coverage of each curve", artifacts.check_pareto),
    declare("notes", "PR body matches the facts", artifacts.check_notes),
    declare(
        "master-fields",
        "master fields relpipe knows the meaning of",
        yamlkeys.check_master_fields,
        fast=True,
    ),
)
FAST = tuple(c.id for c in CHECKS if c.fast)
# Checks that look at neither the keys in scope nor the change: no masters, no git needed.
STANDALONE = frozenset({"checklist", "pareto", "notes"})
# ... and those that need the change but not the keys (resolving every key costs seconds).
# (append-only resolves the keys its changelog entries name by itself.)
KEYLESS = STANDALONE | {"owners", "append-only", "master-fields"}
_HUNK = re2.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def default_base(repo: Path) -> str:
    try:
        return gitio.run(repo, "merge-base", "HEAD", "@{upstream}").decode().strip()
    except ValidateError:
        return "HEAD"


def check_ref(value: str, flag: str) -> str:
    """A revision given on the command line: never an option to git (`--base-ref=--output=x`)."""
    if not value or value.startswith("-") or any(c.isspace() or ord(c) < 32 for c in value):
        raise ValidateError(f"{flag} {value[:80]!r} is not a git revision; give a branch or commit")
    return value


def _unquote(name: bytes) -> str:
    """A path as git prints it in a patch header: C-quoted when it has `"`, tab, ESC, ..."""
    if not name.startswith(b'"') or not name.endswith(b'"'):
        return path_text(name)
    body, out, i = name[1:-1], bytearray(), 0
    escapes = {ord("t"): 9, ord("n"): 10, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8}
    escapes |= {ord("f"): 12, ord("v"): 11, ord("r"): 13}
    while i < len(body):
        if body[i] == 92 and i + 1 < len(body):
            if body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(escapes.get(body[i + 1], body[i + 1]))
            i += 2
            continue
        out.append(body[i])
        i += 1
    return path_text(bytes(out))


def diff(repo: Path, base: str, head: str | None) -> Change:
    """Changed paths and head line numbers between `base` and `head` (None: the working tree)."""
    target = [head] if head else []
    opts = ("--no-color", "--no-ext-diff", "--no-renames", "--end-of-options")
    # Paths from `-z` (no quoting, nothing dropped); line numbers from the patch, whose headers
    # quote odd names (decoded by _unquote).
    names = gitio.run(repo, "diff", "--name-only", "-z", *opts, base, *target, "--", what="diff")
    out = gitio.run(repo, "diff", "-U0", *opts, base, *target, "--", what="diff")
    lines: dict[str, set[int]] = {}
    current: str | None = None
    header = False  # `+++ ` names a file only in a header (an added line `++ x` reads the same)
    for raw in out.splitlines():
        if raw.startswith(b"diff --git "):
            current, header = None, True
        elif header and raw.startswith(b"+++ "):
            name = _unquote(raw[4:])
            current = name[2:] if name.startswith("b/") else None
            if current:
                lines.setdefault(current, set())
        elif current and (m := _HUNK.match(raw)):
            header = False
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines[current].update(range(start, start + count))
    paths = [path_text(p) for p in names.split(b"\0") if p]
    return Change(
        base=base,
        head=head or "working tree",
        paths=tuple(dict.fromkeys(paths)),
        lines={p: frozenset(n) for p, n in lines.items()},
    )


def run(
    repo: Path,
    *,
    keys: Sequence[str] = (),
    all_keys: bool = False,
    base_ref: str | None = None,
    head_ref: str | None = None,
    checks: Sequence[str] = (),
    options: Options | None = None,
) -> list[Check]:
    """Results of `checks` (default: all) over the given keys or over the change."""
    options = options or Options()
    base_ref = check_ref(base_ref, "--base-ref") if base_ref is not None else None
    head_ref = check_ref(head_ref, "--head-ref") if head_ref is not None else None
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise ValidateError(f"unknown check {unknown[0]!r}; known: {', '.join(CHECKS.ids())}")
    source = open_source(repo, head_ref)
    wanted = list(checks or CHECKS.ids())
    if not keys and not all_keys and STANDALONE.issuperset(wanted):
        review = Review(source=source, masters=Masters(), scopes=(), options=options)
        return [CHECKS[cid](review) for cid in wanted]
    try:
        masters = load_masters(source)
    except ValidateError as exc:
        if "duplicate key" not in str(exc):
            raise
        # A duplicate key in a master is a finding (yaml-keys FAILs with its line), not a stop;
        # the keys cannot be resolved, so the key checks have none in scope.
        review = Review(source=source, masters=Masters(), scopes=(), options=options)
        return [CHECKS[cid](review) for cid in dict.fromkeys(["yaml-keys", *wanted])]
    change = None
    base_source: Source | None = None
    if keys or all_keys:
        options = dataclasses.replace(options, audit=True)
        names = list(masters.configs) if all_keys else select_keys(masters, keys)
        scopes = scope_keys(source, masters, names)
        if base_ref:
            change = diff(source.root, base_ref, head_ref)
            base_source = Source(root=source.root, ref=base_ref, era=source.era)
    else:
        try:
            gitio.run(source.root, "rev-parse", "--git-dir", what="rev-parse")
        except ValidateError:
            raise ValidateError(
                f"{source.root} is not a git repository, so there is no change to review; "
                "give --config-key K or --all-keys"
            ) from None
        base = base_ref or default_base(source.root)
        change = diff(source.root, base, head_ref)
        base_source = Source(root=source.root, ref=base, era=source.era)
        touched = set(change.paths)
        every = (
            scope_keys(source, masters, _candidates(source.era, masters, change))
            if not KEYLESS.issuperset(wanted)
            else []
        )
        scopes = [
            s
            for s in every
            if touched & {u.path for u in s.files}
            or (
                s.master in touched
                and change.lines.get(s.master, frozenset()) & frozenset(range(s.line, s.end + 1))
            )
        ]
    review = Review(
        source=source,
        masters=masters,
        scopes=tuple(scopes),
        change=change,
        base_source=base_source,
        options=options,
    )
    return _not_read(review, [CHECKS[cid](review) for cid in wanted])


def _candidates(era: Era, masters: Masters, change: Change) -> list[str]:
    """Keys that may be in a change's scope. Resolving a key's launch path costs ~20 ms, so
    when no changed file can be on any launch path (only master configs, the changelog,
    Markdown, .github/), only keys whose master block has a changed line are resolved."""
    own = set(masters.lines)
    if any(era.may_launch(p) and p not in own for p in change.paths):
        return list(masters.configs)
    return [
        key
        for key, (path, start, end) in masters.where.items()
        if any(start <= n <= end for n in change.lines.get(path, ()))
    ]


def _not_read(review: Review, results: list[Check]) -> list[Check]:
    """A master config that was not read (over the cap, binary, ...) hides its keys and their
    launch paths: no check that looks at keys may then PASS or say N/A."""
    masters = set(master_paths(review.source))
    rows = [e for e in review.problems() if e.where in masters]
    if not rows:
        return results
    first = rows[0]
    return [
        CHECKS[r.id].result(
            judged(
                WARN, f"{first.where} {first.what}; its keys are not checked", [*rows, *r.evidence]
            )
        )
        if r.id not in STANDALONE and r.status in (PASS, NA)
        else r
        for r in results
    ]
