"""Docs name only paths that exist: every repository path written in `docs/`, the README and the
workflows' comments is checked against the checkout (STYLE.md: a moved file leaves no stale name).

A path counts as this repository's when its first component is one of the repository's own
top-level entries; globs must match at least one file. Paths of the benchmark repository (the
InferenceX layout relpipe reads: `docs/PR_REVIEW_CHECKLIST.md`, `configs/...`) are named in
`FOREIGN` with the reason they are not ours.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN_ROOTS = (
    "core",
    "pipeline",
    "changelog",
    "images",
    "engine",
    "validate",
    "tests",
    "bench",
    "docs",
    "examples",
    ".github",
    ".ci",
)
OWN_FILES = ("noxfile.py", "pyproject.toml", "setup.py", "README.md", ".pre-commit-hooks.yaml")
# Paths under one of our folder names that belong to the benchmark repository, not to relpipe.
FOREIGN = {
    "docs/PR_REVIEW_CHECKLIST.md",  # InferenceX's review checklist
    "docs/waiver/",  # InferenceX's waiver folder
    "docs/waiver",
    "docs/MODELS.md",
    ".github/configs/",  # InferenceX's layout before 2026-07-02
    ".github/configs",
    ".github/CODEOWNERS",
    ".github/workflows/run-sweep.yml",
    "engine/",  # the word as a folder name in prose
    ".github/codeowner-signoff-verify-prompt.md",  # InferenceX's sign-off verifier prompt
    "docs/waiver/N.md",  # InferenceX's waiver files, one per PR number
}
_PATH = re.compile(
    r"(?<![\w./-])((?:\.?[A-Za-z0-9_-]+/)+[A-Za-z0-9_.*-]*|[A-Za-z0-9_.-]+\.(?:py|md|toml|yaml|yml))(?![\w/-])"
)
_MODULE = re.compile(r"(?:relpipe\.)?(?:core|pipeline|changelog|images|engine|validate)(?:\.\w+)+")
_FILE_SUFFIXES = (".md", ".py", ".yaml", ".yml", ".json", ".toml", ".png", ".html")
_SPAN = re.compile(r"`([^`\n]+)`|\]\(([^)\s]+)\)")


def _named_paths(text: str, *, plain: bool = False) -> set[str]:
    """Paths in code spans and links (prose), or in every word (`plain`: workflow comments)."""
    found = set()
    spans = [text] if plain else [m.group(1) or m.group(2) for m in _SPAN.finditer(text)]
    for span in spans:
        for token in span.split():
            token = token.strip("'\",;:()`.").split("#")[0].split(":")[0]
            if _PATH.fullmatch(token):
                found.add(token)
    return found


def _named_modules(text: str) -> set[str]:
    """Dotted names of our modules written in code spans (`validate.gate.hook.check`)."""
    found = set()
    for match in _SPAN.finditer(text):
        for token in (match.group(1) or match.group(2)).split():
            token = token.strip("'\",;:()").split("(")[0]
            if _MODULE.fullmatch(token) and not token.endswith(_FILE_SUFFIXES):
                found.add(token.removeprefix("relpipe."))
    return found


def _module_exists(name: str) -> bool:
    """The longest prefix of `name` that is a module or package has two components or more
    (`images.runtime.Runtime` -> images/runtime.py; a stale `validate.gitio.run` finds only
    validate/)."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def _is_ours(path: str) -> bool:
    first = path.split("/")[0]
    return (first in OWN_ROOTS and "/" in path) or path in OWN_FILES


def _exists(path: str, base: Path) -> bool:
    for root in (ROOT, base):
        if any(ch in path for ch in "*?["):
            if any(root.glob(path.rstrip("/"))):
                return True
        elif (root / path).exists():
            return True
    return False


def _sources() -> list[tuple[Path, str]]:
    """(file, text): the docs and README whole, the workflows' comments only."""
    docs = [(p, p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))]
    docs.append((ROOT / "README.md", (ROOT / "README.md").read_text()))
    for workflow in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        comments = "\n".join(
            line.split("#", 1)[1] for line in workflow.read_text().splitlines() if "#" in line
        )
        docs.append((workflow, comments))
    return docs


def test_every_repository_path_in_the_docs_exists() -> None:
    missing = []
    for source, text in _sources():
        for path in sorted(_named_paths(text, plain=source.suffix == ".yml")):
            if _is_ours(path) and path not in FOREIGN and not _exists(path, source.parent):
                missing.append(f"{source.relative_to(ROOT)}: {path}")
    assert missing == []


def test_every_module_named_in_the_docs_exists() -> None:
    missing = [
        f"{source.relative_to(ROOT)}: {name}"
        for source, text in _sources()
        for name in sorted(_named_modules(text))
        if not _module_exists(name)
    ]
    assert missing == []


def test_the_path_reader_sees_moved_files() -> None:
    """The checker itself: a stale name is reported, a real one is not."""
    named = _named_paths("see `validate/perf_changelog.py` and [x](validate/gate/hook.py)")
    assert named == {"validate/perf_changelog.py", "validate/gate/hook.py"}
    assert not _exists("validate/perf_changelog.py", ROOT) and _exists(
        "validate/gate/hook.py", ROOT
    )
    assert _named_modules("`validate.gitio.run` and `relpipe.images.runtime`") == {
        "validate.gitio.run",
        "images.runtime",
    }
    assert not _module_exists("validate.gitio.run") and _module_exists("images.runtime")
