"""Which era a checkout of the benchmark repository is, by its files, with the `.relpipe.toml`
override; the one detection every command and the commit hook use.

`detect` is the one pure decision (a lister of repository folders and the override table in, an
`Era` out), so the review (which reads a git commit), the commands and the hook (which read a
working tree) agree. The override file (`[tool.relpipe]` in `.relpipe.toml` at the checkout
root: `layout = "<era>"`, any path field of `Era`, `extra-fields`, `repository`) covers the
next move of the repository without a relpipe release.

Every path the override names, and every path of the era, stays inside the checkout: an
absolute path, a `..` or a symlink that leaves the root is refused in one line (`inside`,
`check_paths`: resolve, then check). Standard library only and no pathlib: the hook imports
this module on every commit (tomllib is loaded only when an override file exists).
"""

from __future__ import annotations

import os
import posixpath

from ...core.files import read_capped
from ...core.record import Record, fields, replace
from ..errors import ChangelogError
from .era import Era
from .eras import DEFAULT, ERAS, by_name

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

OVERRIDE = ".relpipe.toml"
_OVERRIDE_CAP = 64 * 1024
# `Era` fields the override may set: the paths (strings), and two lists.
_NOT_PATHS = frozenset(
    {
        "name",
        "markers",
        "entry_schema",
        "master_fields",
        "placeholders",
        "acceptance",
        "harness_golden",
        "extra_fields",
        "codeowners",
    }
)
PATH_FIELDS = tuple(f.name for f in fields(Era) if f.name not in _NOT_PATHS)
_LISTS = ("codeowners", "extra-fields")
_OTHER = ("layout", "repository", "base-branch")
# The branch a benchmark repository merges into, unless `.relpipe.toml` names another
# (`base-branch`): InferenceX's is `main` in every era.
BASE_BRANCHES = ("main", "master")
# The remote a fork's clone names the canonical repository by (GitHub's and git's convention).
UPSTREAM_REMOTE = "upstream"


class Located(Record):
    """A checkout's era as the commit hook needs it: `found` False when no era's files exist
    (a new repository: the default era's paths), `repository` the canonical URL the override
    file names (None: not named there)."""

    era: Era
    found: bool
    repository: str | None = None
    base_branch: str | None = None  # `.relpipe.toml` base-branch

    def looked_for(self) -> tuple[str, ...]:
        """Every marker tried, for error messages."""
        return tuple(marker for era in ERAS for marker in era.markers)


def _matches(marker: str, listdir: Callable[[str], Iterable[str]]) -> bool:
    folder, _, name = marker.rpartition("/")
    head, star, tail = name.partition("*")
    for found in listdir(folder):
        if (found.startswith(head) and found.endswith(tail)) if star else found == name:
            return True
    return False


def detect(
    listdir: Callable[[str], Iterable[str]],
    override: Mapping[str, Any] | None = None,
    where: str = ".",
    eras: tuple[Era, ...] = ERAS,
    required: bool = True,
) -> Era | None:
    """The era whose markers exist (`listdir(folder)`: the names directly in a repository
    folder, none when it does not exist), with the override table applied.

    `override` is the `[tool.relpipe]` table: `layout` names one of `eras`, path fields replace
    the era's. More than one era is a one-line ChangelogError; none is one too when `required`,
    else None."""
    table = dict(override or {})
    name = table.pop("layout", None)
    table.pop("repository", None)
    table.pop("base-branch", None)
    accepted = {*PATH_FIELDS, *(f.replace("_", "-") for f in PATH_FIELDS), *_LISTS}
    unknown = sorted(set(table) - accepted)
    if unknown:
        known = ", ".join((*_OTHER, *_LISTS, *(f.replace("_", "-") for f in PATH_FIELDS)))
        raise ChangelogError(
            f"{where}/{OVERRIDE}: unknown [tool.relpipe] field(s) {', '.join(unknown)}; "
            f"known: {known}"
        )
    if name is not None:
        named = by_name(name, eras) if isinstance(name, str) else None
        if named is None:
            raise ChangelogError(
                f"{where}/{OVERRIDE}: layout {name!r} is not one of "
                f"{', '.join(e.name for e in eras)}"
            )
        found = [named]
    else:
        found = [era for era in eras if any(_matches(m, listdir) for m in era.markers)]
        if "masters" in table:
            found = found[:1] or [DEFAULT]
    if len(found) > 1:
        names = " and ".join(f"{era.markers[0]} ({era.name})" for era in found)
        raise ChangelogError(
            f"{where}: the checkout mixes layouts ({names}); remove the stale copy or name "
            f"the layout in {OVERRIDE} ([tool.relpipe] layout = ...)"
        )
    if not found:
        if not required:
            return None
        looked = ", ".join(m for era in eras for m in era.markers)
        raise ChangelogError(
            f"{where}: not an InferenceX checkout: looked for {looked}; "
            f"point --repo at the repository root or describe it in {OVERRIDE}"
        )
    values: dict[str, Any] = {}
    for key, value in table.items():
        listed = key in _LISTS
        ok = (not listed and isinstance(value, str)) or (
            listed and isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            kind = "a list of strings" if listed else "a path string"
            raise ChangelogError(f"{where}/{OVERRIDE}: [tool.relpipe] {key} must be {kind}")
        paths = [] if key == "extra-fields" else value if listed else [value]
        for path in paths:
            if path and not relative_inside(path):
                raise ChangelogError(
                    f"{where}/{OVERRIDE}: [tool.relpipe] {key} = {path!r} leaves the checkout; "
                    "name a path relative to the repository root, without `..`"
                )
        values[key.replace("-", "_")] = (
            tuple(value) if listed else posixpath.normpath(value) if value else ""
        )
    return replace(found[0], **values)


def relative_inside(path: str) -> bool:
    """A repository-relative path that stays inside the repository (not absolute, no `..`)."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    return not (path.startswith(("/", "\\")) or norm == ".." or norm.startswith("../"))


def inside(root: str, rel: str) -> bool:
    """`rel` under `root`, resolved (symlinks followed), is still inside `root`."""
    if not relative_inside(rel):
        return False
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def check_paths(root: str, era: Era, where: str | None = None) -> None:
    """Refuse, in one line, an era whose paths leave the checkout at `root` (an override path
    through a symlink, a committed `configs` symlink to a folder outside)."""
    for name in PATH_FIELDS:
        rel = getattr(era, name)
        if rel and not inside(root, rel):
            raise ChangelogError(
                f"{where or root}: {rel} ({name.replace('_', '-')}) leaves the checkout through "
                "a symlink; relpipe reads and writes only inside the repository"
            )
    for rel in era.codeowners:
        if not inside(root, rel):
            raise ChangelogError(
                f"{where or root}: {rel} (codeowners) leaves the checkout through a symlink"
            )


def read_override(root: str) -> dict[str, Any] | None:
    """`[tool.relpipe]` (or `[relpipe]`) of `<root>/.relpipe.toml`, None when there is none."""
    path = os.path.join(root, OVERRIDE)
    if not os.path.isfile(path):
        return None
    if not inside(root, OVERRIDE):
        raise ChangelogError(f"{path}: a symlink out of the checkout; not read")
    import tomllib  # deferred: only when the repository has an override file (the hook's start-up)

    data = read_capped(path, _OVERRIDE_CAP, "the override file", error=ChangelogError)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ChangelogError(f"{path}: not valid TOML ({exc})") from None
    tool = doc.get("tool")
    table = tool.get("relpipe") if isinstance(tool, dict) else None
    if table is None:
        table = doc.get("relpipe")
    if not isinstance(table, dict):
        raise ChangelogError(f"{path}: no [tool.relpipe] table")
    for name in ("repository", "base-branch"):
        value = table.get(name)
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise ChangelogError(f"{path}: [tool.relpipe] {name} must be a non-empty string")
    return table


def lister(root: str) -> Callable[[str], list[str]]:
    """`detect`'s lister for a working tree."""

    def listdir(folder: str) -> list[str]:
        try:
            return os.listdir(os.path.join(root, folder) if folder else root)
        except OSError:
            return []

    return listdir


def locate(root: str = ".", eras: tuple[Era, ...] = ERAS) -> Located:
    """The era of the working tree at `root` for the commit hook: like `detect`, but a
    checkout of no known era is the default era's paths (`found` False), not an error."""
    override = read_override(root)
    era = detect(lister(root), override, root, eras, required=False)
    if era is None:
        return Located(era=DEFAULT, found=False)
    check_paths(root, era)
    table = override or {}
    return Located(
        era=era,
        found=True,
        repository=table.get("repository"),
        base_branch=table.get("base-branch"),
    )


def canonical_repository(
    *,
    named: str | None,
    override: str | None,
    remotes: Mapping[str, str],
    linked: str | None,
) -> str | None:
    """The benchmark repository's canonical URL, from its identity and never from a fork:
    the URL the user named (`--repo-url`), else the override file's `repository`, else the
    `upstream` remote (a fork's clone), else the repository its own changelog links to, else
    `origin` (a clone of the canonical repository itself, before its first entry)."""
    return named or override or remotes.get(UPSTREAM_REMOTE) or linked or remotes.get("origin")


def linked_repository(changelog: bytes) -> str | None:
    """The repository the last `pr-link: https://<host>/<owner>/<name>/pull/<n>` of a changelog
    names (its own PRs), None when it links to none."""
    at = changelog.rfind(b"\n  pr-link: https://")
    while at >= 0:
        line = changelog[at + len(b"\n  pr-link: ") : changelog.find(b"\n", at + 1)]
        url, sep, number = line.decode("utf-8", "replace").strip().rpartition("/pull/")
        if sep and number.isdigit() and url.count("/") == 4:
            return url
        at = changelog.rfind(b"\n  pr-link: https://", 0, at)
    return None


def pull_request_at_commit(branch: str | None, base_branch: str | None, in_ci: bool) -> bool:
    """Whether a commit is judged as InferenceX judges a PR (pr-link placeholders accepted): at
    commit time on a branch other than the base branch. On the base branch, on a detached HEAD
    and in CI (which passes --pr-number on a PR) it is judged as InferenceX judges main."""
    if in_ci or branch is None:
        return False
    return branch not in ((base_branch,) if base_branch else BASE_BRANCHES)
