"""The bounded-number policy: every number relpipe reads from outside is finite and at most 2**53
in magnitude, or it is refused with one line.

2**53 is where integers stop being exact as floats (and as JavaScript numbers: the HTML dashboard
plots them), and it is far inside SQLite's 64-bit INTEGER and a date's range in milliseconds, so
a bounded value reaches no `OverflowError` anywhere: before this policy, a dashboard value of
10**400 crashed `math.isfinite`, a date of 10**20 the SQLite bind, `1e400` read as `inf` and was
written into notes, and a 401-digit score crashed `float()` (each an exit 3, issue 34.3). The
largest real values are timestamps in milliseconds (about 1.8e12) and byte sizes.

Used by the JSON loader (`core.jsonload`: every JSON document), the strict YAML loader
(`core.yamlload`) and the record reader (`core.jsoncodec`, for values that did not come from
either). Standard library only: the commit hook imports the loaders.
"""

from __future__ import annotations

import math

LIMIT = 2**53  # the largest magnitude read (9,007,199,254,740,992)
_DIGITS = len(str(LIMIT))  # more digits than this (sign aside) is out of range, unconverted


class NumberError(ValueError):
    """A number outside the policy: what it is (shortened) and the bound, one line."""


def describe(value: object) -> str:
    """A number as one short line, whatever its size (`str` of a 5,000-digit int raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"{'a negative' if value < 0 else 'an'} integer of about {digits} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse(what: str) -> NumberError:
    return NumberError(f"{what} is out of range (relpipe reads finite numbers up to 2**53)")


def bounded(value: int | float) -> int | float:
    """`value` itself when it is within the policy; NumberError otherwise (bool is not a number
    here: callers check their types first)."""
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > LIMIT:
            raise _refuse(describe(value))
    elif abs(value) > LIMIT:
        raise _refuse(describe(value))
    return value


def is_bounded(value: object) -> bool:
    """A real number (not a bool) within the policy."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        bounded(value)
    except NumberError:
        return False
    return True


def parse_int(text: str) -> int:
    """An integer literal (JSON's `parse_int`, YAML's decimal ints): digits are counted before
    converting, so a 5,000-digit literal costs nothing and raises no conversion-limit error."""
    digits = text.lstrip("+-")
    if len(digits.lstrip("0")) > _DIGITS:
        raise _refuse(f"{text[:12]}... ({len(digits)} digits)")
    return int(bounded(int(text)))


def parse_float(text: str) -> float:
    """A float literal (JSON's `parse_float`): `1e400` is `inf` to `float`, and refused."""
    value = float(text)
    if not math.isfinite(value) or abs(value) > LIMIT:
        raise _refuse(text if len(text) <= 40 else text[:37] + "...")
    return value


def parse_constant(name: str) -> float:
    """JSON's `NaN`, `Infinity` and `-Infinity` (Python writes them; JSON has none): refused."""
    raise NumberError(f"{name} is not a number relpipe reads (JSON has no {name})")
