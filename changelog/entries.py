"""The former module of perf-changelog entries, now the package `relpipe.changelog.entry`.

Kept so that `from relpipe.changelog.entries import ...` of the public names keeps working;
new code imports `relpipe.changelog.entry`.
"""

from __future__ import annotations

from relpipe.changelog.entry import *  # noqa: F403
from relpipe.changelog.entry import __all__  # noqa: F401
