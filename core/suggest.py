"""'Did you mean': the closest known name to a mistyped one, for one-line usage errors.

One home for every suggestion relpipe makes (subcommands, options, choices, config keys). The
typed word comes from outside, so it is cut to `MAX_WORD` characters before it is compared:
difflib's ratio is quadratic in the lengths, and no name relpipe knows is longer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook's config-key check imports this
if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_WORD = 200  # characters of the typed word compared
CUTOFF = 0.6  # difflib's default: 'opn' -> 'open', 'regresions' -> 'regressions'


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name most like `word` (difflib's ratio at least `CUTOFF`), or None."""
    # difflib here, not at the top: only an error path needs it, and the commit hook imports
    # this module (difflib and heapq cost ~0.7 ms of its start-up).
    import difflib  # deferred: not on the commit hook's usual path (start-up)

    names = [name for name in dict.fromkeys(known) if name != word]
    found = difflib.get_close_matches(word[:MAX_WORD], names, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`"; did you mean 'X'?"` for the closest known name, or "" when none is close."""
    found = closest(word, known)
    return f"; did you mean {found!r}?" if found else ""
