"""The argument parser every `relpipe` subcommand builds: one help layout, one usage-error rule.

Help shows every option's default (`(default: X)`, unless the help text already names it) or
`(required)`, keeps
the line breaks of descriptions, and is 100 columns wide. A usage error is one line on stderr and
exit 2, through the CLI's error handler, like every other user error (argparse's own exit would
print the usage block first). A mistyped option, action or choice gets the closest known one
("did you mean"; Python 3.11's argparse has no `suggest_on_error`), from `core.suggest`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ...core import suggest
from ..errors import PipelineError

WIDTH = 100


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """`argparse.ArgumentDefaultsHelpFormatter`, with readable words for absent defaults."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("width", WIDTH)
        kwargs.setdefault("max_help_position", 32)
        super().__init__(prog, **kwargs)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.option_strings and action.required:
            return f"{text} (required)".lstrip()
        if (
            not action.option_strings
            or action.default is argparse.SUPPRESS
            or "default" in text.lower()
        ):
            return text
        default = action.default
        if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
            shown = "on" if default else "off"
        elif default is None or default == []:
            shown = "none"
        else:
            # `%` in a default (a tag pattern) must not be read as a format by argparse.
            shown = str(default).replace("%", "%%")
        return f"{text} (default: {shown})" if text else f"(default: {shown})"


class Parser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` with `HelpFormatter`; a usage error is a `PipelineError`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise PipelineError(f"{message}; run `{self.prog} --help`")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """`ArgumentParser.parse_args`; an unknown option is reported by the action's own
        parser (`relpipe pr status`, whose --help lists it) with the closest option it has."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            chosen = self._chosen(parsed)
            known = list(chosen._option_string_actions)
            hint = next(
                (
                    found
                    for word in extra
                    if word.startswith("-")
                    and (found := suggest.did_you_mean(word.split("=", 1)[0], known))
                ),
                "",
            )
            chosen.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # An action (`relpipe pr opne`) or a choice (`--lang fr`) that is not one: name them all
        # and the closest.
        if action.choices is not None and value not in action.choices:
            names = [str(choice) for choice in action.choices]
            raise argparse.ArgumentError(
                action,
                f"invalid choice: {value!r} (choose from {', '.join(names)})"
                f"{suggest.did_you_mean(str(value), names)}",
            )

    def _chosen(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the action the command line chose (`relpipe pr open`), else this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                sub = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(sub, Parser):
                    return sub._chosen(parsed)
        return self


def parser(prog: str, doc: str | None) -> Parser:
    """The parser of one subcommand, described by the first line of its module docstring."""
    return Parser(prog=prog, description=(doc or "").strip().splitlines()[0] if doc else None)
