"""The engine precision diff: which changes between two engine commits can move numerical precision.

The package's public face, for `relpipe diff`, the qualification's C5 and `relpipe review`:
`rules` (the rules format and its lint), `classify` (one file's verdict; `diff`, the batched git
reads of a commit pair), `report` (`PrecisionReport` as JSON and Markdown). Below them: `gitio`
(git, a fixed handful of processes per pair), `cosmetic` (comment-only and logging-only edits),
`commits` (subjects -> type, scope, PR), `globs` and `regexlit` (rule matching). docs/precision.md.
"""

from .classify import check_upstream, classify, diff
from .report import (
    VERDICTS,
    FileChange,
    PrecisionReport,
    UpstreamResult,
    WatchResult,
    render_markdown,
)
from .rules import (
    LintReport,
    Rule,
    Rules,
    builtin_rules,
    glob_regex,
    lint,
    lint_paths,
    load_rules,
    parse_rules,
    parse_upstream,
    rules_of,
)

__all__ = [
    "builtin_rules",
    "VERDICTS",
    "FileChange",
    "LintReport",
    "PrecisionReport",
    "Rule",
    "Rules",
    "UpstreamResult",
    "WatchResult",
    "check_upstream",
    "classify",
    "diff",
    "glob_regex",
    "lint",
    "lint_paths",
    "load_rules",
    "rules_of",
    "parse_rules",
    "parse_upstream",
    "render_markdown",
]
