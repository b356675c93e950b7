"""`relpipe revert`: put a config key back on its previous pinned image, with a changelog entry why.

The previous image comes from `images.lock.yaml`, which keeps every image ever pinned (one entry
per `repository:tag`, never removed, each with its verified digest and `created` time): the
history of a key's repository is its lock entries ordered by creation, and the previous image is
the one created just before the key's current one (or `--to IMAGE`, which must be in the lock).
A revert never deletes the bump's changelog entry (the repository's gate rejects that): it edits
the config with the same minimal edit as a release (`changelog.configs.pin.edit_image`) and
APPENDS an entry naming the restored image and the reason; the PR is then opened the way
`relpipe pr open` opens a release's (`pipeline.pullrequest`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from relpipe.core import instant
from relpipe.core.reference import parse
from relpipe.images import lock
from relpipe.images.lock import LockEntry
from relpipe.pipeline.errors import PipelineError
from relpipe.pipeline.workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class Revert:
    config_key: str
    current: str  # the image the config pins now, as the config spells it
    restored: str  # the image it is put back on, spelled the same way
    digest: str
    reason: str


def previous_image(
    entries: Mapping[str, LockEntry], current: str, to: str | None, where: str
) -> tuple[str, str]:
    """(pin key, digest) of the image to restore: `to`, else the one of the same repository
    created last before `current` (compared as instants), from the pins in `where`."""
    now = lock.lookup(entries, current)
    if now is None:
        raise PipelineError(
            f"{current} is not in {where}: the pins keep the history a revert reads; "
            "pin it with `relpipe images pin` or pass --to IMAGE"
        )
    if to is not None:
        target = lock.lookup(entries, to)
        if target is None:
            raise PipelineError(f"{to} is not in {where}; pin it first with `relpipe images pin`")
        return target.key, target.digest
    name = parse(now.key).name
    current_at = instant.parse_or_none(now.created)
    if current_at is None:
        raise PipelineError(
            f"{current} has no created time in {where}, so no image is known to precede it; "
            "pass --to IMAGE"
        )
    # Instants, never text: `...T10:00:00-05:00` is later than `...T12:00:00Z`.
    dated = [
        (when, e.key, e)
        for e in entries.values()
        if parse(e.key).name == name and (when := instant.parse_or_none(e.created)) is not None
    ]
    before = [item[2] for item in sorted(dated) if item[0] < current_at]
    if not before:
        raise PipelineError(
            f"no image of {name} was pinned before {current} in {where}; pass --to IMAGE"
        )
    return before[-1].key, before[-1].digest


def plan_revert(ws: Workspace, config_key: str, to: str | None, reason: str) -> Revert:
    from relpipe.pipeline.release import new_image_text

    if not reason.strip() or "\n" in reason:
        raise PipelineError("--reason must be one non-empty line saying why the image goes back")
    current = ws.config_key(config_key, 1).image
    where = str(ws.lock)
    key, digest = previous_image(lock.load(ws.root / ws.lock), current, to, where)
    restored = new_image_text(current, parse(key).tagged())
    if parse(restored).tagged() == parse(current).tagged():
        raise PipelineError(f"{config_key} already pins {current}; nothing to revert")
    return Revert(
        config_key=config_key, current=current, restored=restored, digest=digest, reason=reason
    )


def write_revert(ws: Workspace, rev: Revert, repo_url: str) -> None:
    """The config edit and the appended entry, in the working tree."""
    from relpipe.changelog.append import append
    from relpipe.changelog.configs.pin import edit_image
    from relpipe.changelog.entry import Entry
    from relpipe.core.files import write_atomic
    from relpipe.pipeline.release import SCENARIO_TYPES, pr_link

    cfg = ws.config_key(rev.config_key, 1)
    master = ws.root / cfg.master
    text, _ = edit_image(
        master.read_text(encoding="utf-8"), rev.config_key, rev.restored, cfg.master
    )
    scenarios = sorted({p.name.split("/", 1)[0] for p in cfg.points} & set(SCENARIO_TYPES))
    entry = Entry(
        config_keys=(rev.config_key,),
        description=(f"Revert to {rev.restored} from {rev.current}", f"Reason: {rev.reason}"),
        pr_link=pr_link(repo_url, None),
        scenario_type=tuple(scenarios) or None,
    )
    write_atomic(master, text.encode("utf-8"))
    append(ws.root / ws.changelog, entry)


def title_and_body(rev: Revert) -> tuple[str, str]:
    """The revert PR's title and bilingual body (the reason is the user's words, escaped)."""
    from relpipe.core import sanitize

    reason = sanitize.markdown(rev.reason)
    key = sanitize.markdown_code(rev.config_key)
    old, new = sanitize.markdown_code(rev.current), sanitize.markdown_code(rev.restored)
    digest = sanitize.markdown_code(rev.digest)
    title = f"Revert {rev.config_key} to {rev.restored}"
    body = (
        f"## English\n\nReverts {key} from {old} to the previously pinned {new} "
        f"({digest}, from images.lock.yaml).\n\nReason: {reason}\n\n"
        f"## 简体中文\n\n将 {key} 从 {old} 回退到此前固定的 {new}"
        f"（{digest}，见 images.lock.yaml）。\n\n原因：{reason}\n"
    )
    return title, body
