"""Which config keys a release, revert or PR acts on: the keys named (`--config-key K`, repeatable)
and, with `--line`, every key on their image line: the keys whose `image:` is in the same
repository and family group (`images/families.yaml`: e.g. vLLM's commit-addressed nightlies, or
ATOM's `rocm7.2.3_..._atomYYYYMMDD` builds of one ROCm/Python/PyTorch line), optionally narrowed
with `--runner NAME` (the master's `runner:` field, or the GPU in it: `mi355x` matches
`mi355x-disagg` and `cluster:mi355x-amds`). A selection that matches no key is one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.reference import InvalidReference, parse
from ..images import nightly
from ..images.errors import ImageError
from .errors import PipelineError
from .workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class Line:
    """An image line: a repository, its family and the family's group values of a tag."""

    repository: str
    family: str
    group: tuple[tuple[str, str], ...] | None  # None: a tag of no family (a line of its own)
    tag: str


def line_of(image: str) -> Line:
    """The image line `image` (as a config spells it) is on; a value that is no image reference
    (the real tree has `ghcr.io#...`) is a line of its own."""
    try:
        ref = parse(image)
    except InvalidReference:
        return Line(repository=image, family="", group=None, tag="")
    name = nightly.default_family(ref.repository)
    tag = ref.tag or ""
    found: list[nightly.NightlyTag] = []
    try:
        fam = nightly.family(name)
        found = nightly.matching([tag], name, evidence=lambda tags: {})
    except ImageError:
        fam = None
    if fam is None or not found:
        return Line(repository=ref.name, family=name, group=None, tag=tag)
    return Line(repository=ref.name, family=name, group=found[0].group(fam.group), tag=tag)


def same_line(a: Line, b: Line) -> bool:
    if a.repository != b.repository or a.family != b.family:
        return False
    if a.group is None or b.group is None:  # not a family tag: only the same tag is its line
        return a.tag == b.tag
    return a.group == b.group


def runs_on(runner: str | None, wanted: str) -> bool:
    """`runner:` is `wanted`, or names it as its GPU (`mi355x-disagg`, `cluster:mi355x-amds`)."""
    if not runner:
        return False
    parts = runner.replace(":", "-").split("-")
    return runner == wanted or wanted in parts


def select(
    ws: Workspace, keys: Sequence[str], *, line: bool = False, runners: Sequence[str] = ()
) -> tuple[str, ...]:
    """The keys named, widened to their image lines with `line`, narrowed to `runners`; in the
    masters' order, each once. Refused in one line when nothing is selected."""
    if not keys:
        raise PipelineError("name at least one --config-key KEY")
    named = {key: ws.config_key(key, 1) for key in dict.fromkeys(keys)}
    if not line and not runners:
        return tuple(named)
    lines = [line_of(cfg.image) for cfg in named.values()]
    chosen: list[str] = []
    for master in ws.masters():
        doc = ws.read_yaml(master)
        if not isinstance(doc, dict):
            continue
        for key, cfg in doc.items():
            if not isinstance(cfg, dict) or not isinstance(cfg.get("image"), str):
                continue
            if line:
                if not any(same_line(line_of(cfg["image"]), on) for on in lines):
                    continue
            elif key not in named:
                continue
            runner = cfg.get("runner")
            if runners and not any(runs_on(str(runner or ""), r) for r in runners):
                continue
            chosen.append(str(key))
    if not chosen:
        what = "on the image line of " if line else ""
        raise PipelineError(
            f"no config key {what}{', '.join(named)} runs on {', '.join(runners)}; "
            "check --runner (the master's runner: field, or its GPU)"
            if runners
            else f"no config key on the image line of {', '.join(named)}"
        )
    return tuple(dict.fromkeys(chosen))


def field_warnings(ws: Workspace, keys: Sequence[str]) -> list[str]:
    """The selected keys' master fields relpipe does not know, as `warning: file:line: ...`
    lines (a WARN, never a refusal: release carries them in C10; revert and pr print them)."""
    return [f"warning: {w}" for key in keys for w in ws.config_key(key, 1).warnings]
