"""`relpipe revert`: put a config key back on its previous pinned image, with a changelog entry why.

The previous image comes from relpipe's pins (`pipeline.pins`: the results store, plus a lock
file where a team opted into one), which keep every image ever pinned (one entry per
`repository:tag`, each with its verified digest and `created` time): the history of a key's
repository is its pins ordered by creation (as instants), and the previous image is the one
created just before the key's current one (or `--to IMAGE`, which must be pinned).
A revert never deletes the bump's changelog entry (the repository's gate rejects that): it edits
the config with the same minimal edit as a release (`changelog.configs.pin.edit_image`) and
APPENDS an entry naming the restored image and the reason; the PR is then opened the way
`relpipe pr open` opens a release's (`pipeline.pullrequest`). `--dry-run` computes the same
edits and prints them: nothing is written.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..changelog.append import appended_bytes
from ..changelog.configs.pin import edit_image
from ..changelog.entry import Entry
from ..changelog.errors import ChangelogError
from ..core import instant, sanitize
from ..core.files import file_lock, write_atomic
from ..core.pin import Pin
from ..core.reference import parse
from ..images import lock
from .errors import PipelineError
from .release import SCENARIO_TYPES, new_image_text, pr_link
from .workspace import Workspace

if TYPE_CHECKING:
    from ..changelog.entry import Entry


@dataclass(frozen=True, kw_only=True)
class Revert:
    config_key: str
    current: str  # the image the config pins now, as the config spells it
    restored: str  # the image it is put back on, spelled the same way
    digest: str
    reason: str


def previous_image(
    entries: Mapping[str, Pin], current: str, to: str | None, where: str
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


def plan_revert(
    ws: Workspace, config_key: str, to: str | None, reason: str, pinned: Mapping[str, Pin]
) -> Revert:

    if not reason.strip() or "\n" in reason:
        raise PipelineError("--reason must be one non-empty line saying why the image goes back")
    current = ws.config_key(config_key, 1).image
    key, digest = previous_image(pinned, current, to, "relpipe's pins")
    restored = new_image_text(current, parse(key).tagged())
    if parse(restored).tagged() == parse(current).tagged():
        raise PipelineError(f"{config_key} already pins {current}; nothing to revert")
    return Revert(
        config_key=config_key, current=current, restored=restored, digest=digest, reason=reason
    )


def revert_edits(
    ws: Workspace, reverts: Sequence[Revert], repo_url: str
) -> tuple[dict[str, tuple[bytes, bytes]], Entry]:
    """What the revert changes, computed without writing: `{path: (old bytes, new bytes)}` for
    each master config and the changelog (one appended entry naming every key)."""

    texts: dict[str, tuple[bytes, str]] = {}
    scenarios: set[str] = set()
    lines: list[str] = []
    for rev in reverts:
        cfg = ws.config_key(rev.config_key, 1)
        old, text = texts.get(cfg.master) or (
            (ws.root / cfg.master).read_bytes(),
            (ws.root / cfg.master).read_text(encoding="utf-8"),
        )
        try:
            text, _ = edit_image(text, rev.config_key, rev.restored, cfg.master)
        except ChangelogError as exc:
            raise PipelineError(f"{exc}; nothing written") from None
        texts[cfg.master] = (old, text)
        scenarios |= {p.name.split("/", 1)[0] for p in cfg.points} & set(SCENARIO_TYPES)
        line = f"Revert to {rev.restored} from {rev.current}"
        lines += [line] if line not in lines else []
    entry = Entry(
        config_keys=tuple(r.config_key for r in reverts),
        description=(*lines, f"Reason: {reverts[0].reason}"),
        pr_link=pr_link(repo_url, None),
        scenario_type=tuple(sorted(scenarios)) or None,
    )
    changes = {rel: (old, text.encode("utf-8")) for rel, (old, text) in texts.items()}
    path = ws.root / ws.changelog
    before = path.read_bytes() if path.exists() else b""
    try:
        changes[str(ws.changelog)] = (before, appended_bytes(path, before, entry))
    except ChangelogError as exc:
        raise PipelineError(f"{exc}; nothing written") from None
    return changes, entry


def write_revert(ws: Workspace, changes: Mapping[str, tuple[bytes, bytes]]) -> None:
    """The config edits and the appended entry, in the working tree (under the repository lock,
    each file re-checked against what the revert was computed from)."""
    with file_lock(ws.root, what="repository lock", error=PipelineError):
        for rel, (old, _) in changes.items():
            path = ws.root / rel
            if (path.read_bytes() if path.exists() else b"") != old:
                raise PipelineError(f"{rel} changed while the revert was computed; run it again")
        for rel, (_, new) in changes.items():
            write_atomic(ws.root / rel, new)


def diff_of(changes: Mapping[str, tuple[bytes, bytes]]) -> str:
    """The unified diff a dry run prints."""
    out: list[str] = []
    for rel, (old, new) in changes.items():
        out += difflib.unified_diff(
            old.decode("utf-8").splitlines(keepends=True),
            new.decode("utf-8").splitlines(keepends=True),
            f"a/{rel}",
            f"b/{rel}",
        )
    return "".join(out)


def title_and_body(reverts: Sequence[Revert]) -> tuple[str, str]:
    """The revert PR's title and bilingual body (the reason is the user's words, escaped)."""

    first = reverts[0]
    reason = sanitize.markdown(first.reason)
    scope = first.config_key if len(reverts) == 1 else f"{len(reverts)} config keys"
    title = f"Revert {scope} to {first.restored}"
    en, zh = [], []
    for rev in reverts:
        key = sanitize.markdown_code(rev.config_key)
        old, new = sanitize.markdown_code(rev.current), sanitize.markdown_code(rev.restored)
        digest = sanitize.markdown_code(rev.digest)
        en.append(f"Reverts {key} from {old} to the previously pinned {new} ({digest}).")
        zh.append(f"将 {key} 从 {old} 回退到此前固定的 {new}（{digest}）。")
    body = (
        "## English\n\n" + "\n".join(en) + f"\n\nReason: {reason}\n\n"
        "## 简体中文\n\n" + "\n".join(zh) + f"\n\n原因：{reason}\n"
    )
    return title, body
