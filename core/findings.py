"""`Finding`: one problem a check found, located at a file and line; the one such record.

Every content check (the changelog gate, the notes check, golden AL) reports `Finding`s. `code` is
a stable slug that tests, reports and severity tables key on; `line` is 1-based (0: the whole
file). Standard library only: the commit hook path uses it.
"""

from __future__ import annotations

from .record import Record

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from typing import Any

ERROR, WARNING = "error", "warning"


class Finding(Record, slots=True):  # slots: a large audit holds many thousands
    """One problem: its code, message, location, hint and severity (error or warning)."""

    code: str
    message: str
    line: int = 0
    path: str = ""
    hint: str = ""
    severity: str = ERROR

    def where(self, path: str | None = None) -> str:
        """`path:line`, or the path alone for a whole-file finding."""
        name = self.path if path is None else path
        return f"{name}:{self.line}" if self.line else name

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"

    def format(self, path: str | None = None) -> str:
        """The compiler-style line the hook prints: `path:line: severity: message (hint: ...)`."""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.where(path)}: {self.severity}: {self.message}{hint}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"path": self.path, "line": self.line, "code": self.code}
        doc["message"] = self.message
        if self.hint:
            doc["hint"] = self.hint
        if self.severity != ERROR:
            doc["severity"] = self.severity
        return doc
