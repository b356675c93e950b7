"""Credentials out of text: the one redaction of every message, report and record that names a
database, a repository or any other URL (DESIGN: credentials never appear in logs, reports or
errors, "database URLs in every form libpq accepts included").

libpq takes a password in three places, and relpipe prints the text it was given in several
(errors, the ingest summary, `--json`'s `store`, run records' `history.json`), so each form is
cut wherever it stands in a text:
- URL userinfo: `postgresql://user:SECRET@host` -> `postgresql://***@host` (the user too: a git
  URL carries a token as its user; up to the last `@` before the host's `/`, `?` or a space, so a
  malformed URL echoed by a driver is cut too);
- a parameter in a URL query: `?password=SECRET`, `&sslpassword=...`, `&passfile=...` (names
  percent-decoded, as libpq decodes them: `pass%77ord` is `password`);
- a key=value connection string: `password=SECRET`, `password = 'a secret'` (quotes and `\\'`).
Every pattern is a bounded character class run after a literal anchor: linear in the text.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
# libpq's parameters whose value is a secret or says where one is (`passfile`, `sslpassword`
# decrypts the client key); matched case-insensitively, as libpq's own keywords are lower case.
SECRET_KEYS = frozenset({"password", "passfile", "sslpassword"})
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,30}://)([^\s/?#@]*(?:@[^\s/?#@]*)*)@")
_QUERY = re.compile(r"([?&;])((?:[A-Za-z0-9_.~-]|%[0-9A-Fa-f]{2}){1,60})=([^&\s]*)")
_CONNINFO = re.compile(
    # not after `?`, `&` or `;`: a URL's query is _QUERY's (its values end at `&`)
    r"(?<![A-Za-z0-9_%?&;])([A-Za-z0-9_]{1,60})(\s*=\s*)('(?:[^'\\]|\\.){0,4096}'|\S+)"
)


def _query(m: re.Match[str]) -> str:
    if unquote(m.group(2)).lower() in SECRET_KEYS:
        return f"{m.group(1)}{m.group(2)}={MASK}"
    return m.group(0)


def _conninfo(m: re.Match[str]) -> str:
    # (a value already masked is left as it is: redacting twice changes nothing)
    if m.group(1).lower() in SECRET_KEYS and not m.group(3).startswith(MASK):
        return f"{m.group(1)}{m.group(2)}{MASK}"
    return m.group(0)


def redact(text: str) -> str:
    """`text` with every credential form above replaced by `***` (other text unchanged)."""
    if "=" not in text and "@" not in text:
        return text  # the common case (a path, a plain message): nothing to cut
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _QUERY.sub(_query, text)
    return _CONNINFO.sub(_conninfo, text)
