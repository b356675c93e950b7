"""Docs name only paths that exist: every repository path written in `docs/`, the README and the
workflows' comments is checked against the checkout (STYLE.md: a moved file leaves no stale name),
and every `relpipe COMMAND [ACTION] --option` they show against the real argparse tree.

A path counts as this repository's when its first component is one of the repository's own
top-level entries; globs must match at least one file. Paths of the benchmark repository (the
InferenceX layout relpipe reads: `docs/PR_REVIEW_CHECKLIST.md`, `configs/...`) are named in
`FOREIGN` with the reason they are not ours.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path
from typing import NoReturn

import pytest

from relpipe.pipeline import screenshot
from relpipe.pipeline.cli import COMMANDS
from relpipe.pipeline.verdict import CHECKS

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


# -- command claims: every `relpipe COMMAND [ACTION] --option` the docs show exists ------------

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_STOP = {"|", "||", "&&", ";", "#", ">", "<", "\\", "relpipe"}
_STARTS = {"$", "&&", "||", "|", ";", "run:", "then", "do", "*", "-"}  # what may precede a command
_NEGATION = {"except", "without", "no"}  # `[the qualify options except --baseline]`
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_.]*|\.\.\.|ARGS")


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's real parser, caught when its `main` starts parsing `--help`."""

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        raise _Captured(self)

    found = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
        for name, (module, _) in COMMANDS.items():
            with pytest.raises(_Captured) as caught:
                importlib.import_module(f"relpipe.pipeline.commands.{module}").main(["--help"])
            found[name] = caught.value.parser
    return found


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
    }


def _claims(text: str) -> list[list[str]]:
    """The words after each `relpipe` that starts a command line in code (spans and fenced
    blocks: at the start of a line or after a shell operator, not `every relpipe hook`), up to
    the next shell operator or comment."""
    chunks = [m.group(1) for m in _FENCE.finditer(text)]
    prose = _FENCE.sub("", text)
    chunks += [m.group(1) for m in _SPAN.finditer(prose) if m.group(1)]
    found = []
    for chunk in chunks:
        for line in chunk.replace("\\\n", " ").splitlines():
            words = line.split()
            for at, word in enumerate(words):
                if word != "relpipe" or (at and words[at - 1] not in _STARTS):
                    continue
                claim = []
                for token in words[at + 1 :]:
                    if token in _STOP or token.startswith(("#", "$(", "`")):
                        break
                    claim.append(token.strip("[](),'\"`"))
                found.append(claim)
    return found


def _check_claim(claim: list[str], parsers: dict[str, argparse.ArgumentParser]) -> str | None:
    """Why `relpipe CLAIM...` is not a command line relpipe has, or None."""
    if not claim or claim[0] in ("--help", "-h", "--version") or _PLACEHOLDER.fullmatch(claim[0]):
        return None
    if claim[0] not in parsers:
        return f"no command {claim[0]!r}"
    parser, rest = parsers[claim[0]], claim[1:]
    known = set(parser._option_string_actions)
    actions = _actions(parser)
    if actions:
        words = [w for w in rest if w and not w.startswith("-")]
        if words and not _PLACEHOLDER.fullmatch(words[0]):
            for action in words[0].split("|"):
                if action not in actions:
                    return f"no action {action!r} of {claim[0]}"
                known |= set(actions[action]._option_string_actions)
        else:
            for sub in actions.values():
                known |= set(sub._option_string_actions)
    for before, word in zip(["", *rest], rest, strict=False):
        for option in word.split("=", 1)[0].split("|"):
            if option.startswith("--") and before not in _NEGATION and option not in known:
                return f"no option {option} of relpipe {claim[0]}"
    return None


def test_every_relpipe_command_and_option_in_the_docs_exists() -> None:
    """Issue 36: docs said what the code no longer had. Each `relpipe ...` in README.md and
    docs/ is checked against the real argparse tree (commands, actions, options)."""
    parsers = _command_parsers()
    wrong = [
        f"{source.relative_to(ROOT)}: relpipe {' '.join(claim)}: {why}"
        for source, text in _sources()
        if source.suffix == ".md"
        for claim in _claims(text)
        if (why := _check_claim(claim, parsers))
    ]
    assert wrong == []


def test_the_claim_checker_sees_a_wrong_command_action_and_option() -> None:
    parsers = _command_parsers()
    claims = _claims(
        "run `relpipe pr open --dry-run` or\n```\nrelpipe doctor --repo X --jsn | jq\n"
        "relpipe history ingest|regressions --json\nrelpipe qualfy REF\nrelpipe pr close\n"
        "relpipe release --config-key K \\\n    --baseline X [the options except --baseline]\n"
        "# every relpipe hook, the relpipe version\n```\n"
    )
    assert [_check_claim(c, parsers) for c in claims] == [
        "no option --jsn of relpipe doctor",
        None,
        "no command 'qualfy'",
        "no action 'close' of pr",
        "no option --baseline of relpipe release",  # the continued line is one command
        None,
    ]
    assert claims[4][-3:] == ["options", "except", "--baseline"]


def test_every_screenshot_is_regenerated_by_nox_and_the_report_shows_todays_checks() -> None:
    """Issue 36: docs/report.png showed C1-C10 while the report had C1-C12. Each PNG under
    docs/ is one that `nox -s screenshots` writes (headless Chromium, never by hand); the demo's
    release report is tagged with its source and the report's checks, which must be today's."""
    noxfile = (ROOT / "noxfile.py").read_text()
    session = noxfile[noxfile.index("def screenshots(") :].split("\n\n\n", 1)[0]
    pictures = sorted((ROOT / "docs").glob("*.png"))
    assert "report.png" in {p.name for p in pictures}
    for picture in pictures:
        assert f"docs/{picture.name}" in session, picture.name  # the session writes this file
    chunks = screenshot.text_chunks((ROOT / "docs" / "report.png").read_bytes())
    assert chunks.get("relpipe-source") == screenshot.SOURCE
    assert chunks["relpipe-checks"].split(",") == list(CHECKS.ids())


def test_the_screenshot_tags_survive_in_a_valid_png() -> None:
    png = (ROOT / "docs" / "report.png").read_bytes()
    tagged = screenshot.with_text(png, {"k": "v"})
    assert tagged.endswith(png[-12:]) and screenshot.text_chunks(tagged)["k"] == "v"
