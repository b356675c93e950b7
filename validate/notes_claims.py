"""Release notes claim only what the facts say (issue 27.3): every fact line present, verbatim, in
each half, and no text the facts do not contain.

The renderer (`changelog.notes.render`) turns the facts into one line per claim: the image and
digest, the engine versions and commit count, each config change, each validation check with its
status, each eval with its score, threshold and samples, each risk; in English and in Chinese. A
half of the notes passes when:
- every non-blank line the renderer writes for that half is in it, byte for byte (trailing blanks
  aside): a score 0.93 -> 0.99, a commit count 17 -> 7, C5 PASS -> FAIL, a dropped C3 line, a
  dropped or negated risk, a changed image, a zero-width character in the digest, each in either
  half, leaves a required line missing (`facts-missing`);
- every bullet and heading in it is one the renderer writes (`facts-extra`): a claim added beside
  the true one is not a fact;
- the remaining lines (a title, a hand-written paragraph) carry no HTML (a comment hides text from
  the reader, `html`), no link or URL (`link`), no @mention (`mention`), no check status
  (`facts-status`) and no number the facts do not hold (`facts-number`);
- no line has an invisible character (control, bidi, zero-width: `invisible`), rendered or not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from ..changelog.notes import ReleaseFacts, render
from ..changelog.notes.render import ZH_HEADING
from ..core import sanitize

Add = Callable[[int, str, str], None]  # add(line, code, message)
Lines = Sequence[tuple[int, str]]  # (line number, text)

_STRUCTURE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s|^\s*#{1,6}(?:\s|$)")
_HTML = re.compile(r"<\s*(?:!|\?|/?[A-Za-z])")
_LINK = re.compile(r"\]\s*[(\[]|https?://|www\.|\bmailto:|\[[^\]]*\]:", re.IGNORECASE)
_CODE = re.compile(r"(`+).+?\1")
_MENTION = re.compile(r"(?<![\w/`])@+[\w\ufffd-]")
_STATUS = re.compile(r"\b(?:PASS|FAIL|WARN|N/A)\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)")


def rendered_halves(facts: ReleaseFacts) -> tuple[list[str], list[str]]:
    """The lines the renderer writes for the English and the Chinese half (blank lines dropped)."""
    en, _, zh = render(facts, "both").partition(f"\n{ZH_HEADING}\n")
    return [x.rstrip() for x in en.split("\n") if x.strip()], [
        x.rstrip() for x in zh.split("\n") if x.strip()
    ]


def _fact_numbers(value: object) -> set[str]:
    """Every number the facts hold, as numbers and as digits inside their strings."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, int | float):
        return {f"{value:g}" if isinstance(value, float) else str(value)}
    if isinstance(value, str):
        return set(_NUMBER.findall(value)) | set(re.findall(r"\d+", value))
    if isinstance(value, dict):
        return set().union(*(_fact_numbers(v) for v in value.values()), set())
    if isinstance(value, list):
        return set().union(*(_fact_numbers(v) for v in value), set())
    return set()


def _prose(n: int, text: str, numbers: set[str], add: Add, *, title: bool) -> None:
    """A line the renderer did not write: no markup, link, mention, status or foreign number."""
    if _HTML.search(text):
        add(n, "html", "HTML in the notes (a comment or tag hides text from the reader)")
    if _LINK.search(text):
        add(n, "link", "a link or URL the facts do not contain")
    outside = _CODE.sub(" ", text)
    if _MENTION.search(outside):
        add(n, "mention", "an @mention (it notifies people; the facts mention no one)")
    if _STATUS.search(outside):
        add(n, "facts-status", "a check status outside the validation lines the facts render")
    if not title:
        for number in dict.fromkeys(_NUMBER.findall(outside)):
            if number not in numbers:
                add(n, "facts-number", f"number {number} is not in the facts")


def _nearest(lines: Lines, text: str) -> int:
    """The line of `lines` that shares the longest prefix with `text` (where it was changed)."""
    return max(lines, key=lambda item: len(os.path.commonprefix([item[1], text])), default=(0, ""))[
        0
    ]


def check_claims(
    halves: Sequence[tuple[str, Lines]], title: int | None, facts: ReleaseFacts, add: Add
) -> None:
    """Add the claim findings of the notes' halves ((name, lines), English first)."""
    numbers = _fact_numbers(facts.to_json())
    for (name, lines), want in zip(halves, rendered_halves(facts), strict=False):
        have = {text.rstrip() for n, text in lines if n != title}
        wanted = set(want)
        for text in want:
            if text not in have:
                add(
                    _nearest(lines, text),
                    "facts-missing",
                    f"the {name} half lacks the fact line {text.strip()[:160]!r} "
                    "(dropped or changed)",
                )
        for n, text in lines:
            if sanitize.invisible(text):
                add(n, "invisible", "an invisible character (control, bidi or zero-width)")
            if n == title or not text.strip() or text.rstrip() in wanted:
                if n == title:
                    _prose(n, text, numbers, add, title=True)
                continue
            if _STRUCTURE.match(text):
                add(
                    n, "facts-extra", f"a bullet or heading the facts do not render: {text[:120]!r}"
                )
            else:
                _prose(n, text, numbers, add, title=False)
