"""Where a benchmark repository keeps its changelog and master configs, in every layout
InferenceX has had (detected by the files present, never by a date).

| layout   | changelog                            | masters                            |
|----------|--------------------------------------|------------------------------------|
| `github` | `perf-changelog.yaml`                | `.github/configs/*-master.yaml`    |
| `root`   | `perf-changelog.yaml`                | `configs/*-master.yaml`            |
| `e2e`    | `inferencex-e2e/perf-changelog.yaml` | `inferencex-e2e/configs/*-master.yaml` |

(`github`: before 2026-07-02; `root`: 2026-07 to 2026-09; `e2e`: from about 2026-09.)

Standard library only: the `validate_perf_changelog` hook imports it on every commit. The general
module that knows the whole repository (runners, recipes, curves, docs) builds on this one.
"""

from __future__ import annotations

import os

from relpipe.changelog.errors import ChangelogError
from relpipe.core.record import Record

CHANGELOG = "perf-changelog.yaml"
MASTERS = "*-master.yaml"
# (name, folder of the changelog, folder of the masters), all relative to the repository root.
LAYOUTS = (
    ("e2e", "inferencex-e2e", "inferencex-e2e/configs"),
    ("root", "", "configs"),
    ("github", "", ".github/configs"),
)


class BenchmarkFiles(Record):
    """The changelog and master-config globs of one checkout; paths are relative to `root`
    (joined with it: `os.path.join(root, changelog)` is the file)."""

    root: str
    layout: str | None  # "e2e", "root", "github"; None: no changelog and no master found
    changelog: str  # the layout's changelog path (it may not exist yet: a first entry)
    masters: tuple[str, ...]  # glob patterns ("configs/*-master.yaml")
    runners: str | None  # runners.yaml beside the masters; None without a layout
    looked_for: tuple[str, ...]  # every changelog and master pattern tried, for error messages


def _has_masters(root: str, folder: str) -> bool:
    try:
        names = os.listdir(os.path.join(root, folder) if folder else root)
    except OSError:
        return False
    return any(name.endswith("-master.yaml") for name in names)


def find_benchmark_files(root: str = ".") -> BenchmarkFiles:
    """The layout of the checkout at `root`, by the files present.

    A layout is present when its changelog or its masters exist. Two layouts at once (say
    `configs/*-master.yaml` and `inferencex-e2e/configs/*-master.yaml`) is a ChangelogError
    naming both: nothing can tell which one the repository means. No layout at all returns
    the root layout's paths with `layout=None` (a new repository; the caller says what it
    looked for if it needs a file)."""
    looked_for = tuple(
        path
        for _, changelog_dir, masters_dir in LAYOUTS
        for path in (os.path.join(changelog_dir, CHANGELOG), os.path.join(masters_dir, MASTERS))
    )
    present = [
        layout
        for layout in LAYOUTS
        if _has_masters(root, layout[2])
        or (layout[1] and os.path.isfile(os.path.join(root, layout[1], CHANGELOG)))
    ]
    if os.path.isfile(os.path.join(root, CHANGELOG)) and not any(not c for _, c, _ in present):
        present.append(LAYOUTS[1])  # a root changelog without masters: the root layout
    if len(present) > 1:
        where = " and ".join(
            f"{os.path.join(c, CHANGELOG)} + {os.path.join(m, MASTERS)} ({n})"
            for n, c, m in present
        )
        raise ChangelogError(
            f"{os.path.abspath(root)} mixes benchmark-repository layouts: {where}; remove the "
            "stale copy, or pass --changelog-file and --configs"
        )
    name, changelog_dir, masters_dir = present[0] if present else (None, "", "configs")
    return BenchmarkFiles(
        root=root,
        layout=name,
        changelog=os.path.join(changelog_dir, CHANGELOG),
        masters=(os.path.join(masters_dir, MASTERS),),
        runners=os.path.join(masters_dir, "runners.yaml") if name else None,
        looked_for=looked_for,
    )
