"""A checkout of the benchmark repository for the commands: its root and its era
(`detect.detect` over the working tree, the override applied, every path checked to stay inside).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ChangelogError
from .detect import (
    check_paths,
    detect,
    inside,
    lister,
    read_override,
)
from .era import MASTER_SUFFIX, Era
from .eras import ERAS


def find_root(start: Path) -> Path:
    """The checkout root for a directory given as --repo: a project folder itself (2026-10's
    `inferencex-e2e/`) resolves to its parent, whose era relpipe knows."""
    start = start.resolve()
    for era in ERAS:
        if era.project and start.name == era.project and (start / "infx").is_dir():
            return start.parent
    return start


@dataclass(frozen=True)
class Checkout:
    """A benchmark repository checkout and its era."""

    root: Path
    era: Era
    repository: str | None = None  # the canonical URL `.relpipe.toml` names

    def path(self, rel: str) -> Path:
        """`rel` under the root; refused when it leaves the checkout (absolute, `..`, or a
        symlink out)."""
        check_inside(self.root, rel)
        return self.root / rel

    def masters(self) -> list[Path]:
        return sorted((self.root / self.era.masters).glob(f"*{MASTER_SUFFIX}"))

    def codeowners(self) -> str | None:
        return next((p for p in self.era.codeowners if (self.root / p).is_file()), None)


def check_inside(root: Path, rel: str) -> None:
    """One line when `rel` leaves the checkout at `root` (resolve, then check)."""
    if not inside(str(root), rel):
        raise ChangelogError(
            f"{rel} leaves the checkout {root} (absolute, `..` or a symlink out); relpipe reads "
            "and writes only inside the repository"
        )


def open_checkout(path: str | os.PathLike[str], eras: tuple[Era, ...] = ERAS) -> Checkout:
    """The repository at `path` (a checkout root, or 2026-10's `inferencex-e2e/`)."""
    given = Path(path)
    if not given.is_dir():
        raise ChangelogError(
            f"--repo {given} is not a directory; point it at an InferenceX checkout"
        )
    root = find_root(given)
    override = read_override(str(root))
    era = detect(lister(str(root)), override, str(given), eras)
    assert era is not None  # required=True raises instead
    check_paths(str(root), era, str(given))
    repository = override.get("repository") if override else None
    return Checkout(root, era, repository)


def is_checkout(path: Path) -> bool:
    """Whether `path` holds a benchmark repository of a known era (no error either way)."""
    try:
        open_checkout(path)
    except ChangelogError:
        return False
    return True
