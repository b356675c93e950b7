"""Run the review: resolve the change and the keys in scope, then every requested check.

Over a change, the keys in scope are those whose master-config block has a changed line or whose
resolved launch path (scripts, helpers, runners, recipes) contains a changed file. Over keys,
they are the named keys. The head is the working tree (pre-commit's view) unless `head_ref`
names a commit; the base defaults to the merge-base with the upstream branch, else HEAD.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from relpipe.validate.errors import ValidateError
from relpipe.validate.precision import gitio
from relpipe.validate.review import artifacts, images, launch, models, owners
from relpipe.validate.review.context import Change, Options, Review
from relpipe.validate.review.result import Result
from relpipe.validate.review.scope import Masters, load_masters, scope_keys, select_keys
from relpipe.validate.review.source import Source, open_source

# id -> (function, fast enough and local enough for the commit hook, checklist item)
CHECKS: dict[str, tuple[Callable[[Review], Result], bool]] = {
    "owners": (owners.check_owners, True),
    "checklist": (owners.check_checklist, True),
    "upstream-images": (images.check_images, True),
    "deprecated": (models.check_deprecated, True),
    "arch-hacks": (launch.check_arch, True),
    "chat-template": (launch.check_chat, True),
    "engine-patches": (launch.check_patches, True),
    "golden-al": (artifacts.check_golden, True),
    "append-only": (artifacts.check_append_only, True),
    "draft-as-shipped": (launch.check_draft, True),
    "pareto": (artifacts.check_pareto, False),
    "notes": (artifacts.check_notes, False),
}
FAST = tuple(cid for cid, (_, fast) in CHECKS.items() if fast)
# Checks that look at neither the keys in scope nor the change: no masters, no git needed.
STANDALONE = frozenset({"checklist", "pareto", "notes"})
# ... and those that need the change but not the keys (resolving every key costs seconds).
# (append-only resolves the keys its changelog entries name by itself.)
KEYLESS = STANDALONE | {"owners", "append-only"}
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def default_base(repo: Path) -> str:
    try:
        return gitio.run(repo, "merge-base", "HEAD", "@{upstream}").decode().strip()
    except ValidateError:
        return "HEAD"


def diff(repo: Path, base: str, head: str | None) -> Change:
    """Changed paths and head line numbers between `base` and `head` (None: the working tree)."""
    target = [head] if head else []
    out = gitio.run(
        repo,
        "diff",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        base,
        *target,
        "--",
        what="diff",
    )
    lines: dict[str, set[int]] = {}
    paths: list[str] = []
    current: str | None = None
    for raw in out.splitlines():
        if raw.startswith(b"diff --git "):
            current = None
        elif raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "replace")
            current = name[2:] if name.startswith("b/") else None
            if current:
                paths.append(current)
                lines.setdefault(current, set())
        elif raw.startswith(b"--- ") and current is None:
            name = raw[4:].decode("utf-8", "replace")
            if name.startswith("a/"):
                paths.append(name[2:])  # deleted file
        elif current and (m := _HUNK.match(raw)):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines[current].update(range(start, start + count))
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
) -> list[Result]:
    """Results of `checks` (default: all) over the given keys or over the change."""
    options = options or Options()
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise ValidateError(f"unknown check {unknown[0]!r}; known: {', '.join(CHECKS)}")
    source = open_source(repo, head_ref)
    wanted = list(checks or CHECKS)
    if not keys and not all_keys and STANDALONE.issuperset(wanted):
        review = Review(source=source, masters=Masters(), scopes=(), options=options)
        return [CHECKS[cid][0](review) for cid in wanted]
    masters = load_masters(source)
    change = None
    base_source: Source | None = None
    if keys or all_keys:
        names = list(masters.configs) if all_keys else select_keys(masters, keys)
        scopes = scope_keys(source, masters, names)
        if base_ref:
            change = diff(source.root, base_ref, head_ref)
            base_source = Source(root=source.root, ref=base_ref, layout=source.layout)
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
        base_source = Source(root=source.root, ref=base, layout=source.layout)
        every = (
            scope_keys(source, masters, list(masters.configs))
            if not KEYLESS.issuperset(wanted)
            else []
        )
        touched = set(change.paths)
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
    return [CHECKS[cid][0](review) for cid in wanted]
