"""Master configs (`configs/*-master.yaml`): loading, top-level keys, and config-key resolution.

`load_master` reads a whole master file strictly (duplicate keys rejected at any depth, `*` not
allowed in top-level keys, as InferenceX's loader requires). `master_keys` returns only the
top-level keys, from a line scan, for the commit hook: loading the real masters (376 KB) with
PyYAML takes longer than the whole hook may, and only the keys are needed there. The scan
falls back to PyYAML's event stream whenever a line is not the simple `key:` form or a quoted
scalar might run over several lines, so it never guesses.

`resolve_keys` follows InferenceX's `process_changelog.py`: only `*` is a wildcard, a pattern
must match a whole key, a glob that matches nothing and an exact key that does not exist are
distinct errors, and the result is de-duplicated in first-seen order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ...core import suggest
from ...core.files import read_capped
from ...core.record import Record
from ...core.yamlload import load_yaml as _load_yaml
from ..entry.scalars import lazy_re
from ..errors import ChangelogError

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing at all
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    PathArg = Path | str

MAX_MASTER_BYTES = 16 * 1024 * 1024


class MasterConfigs(Record):
    """Configs of one or more master files: key -> config mapping, and which file defines it."""

    configs: Mapping[str, Mapping[str, object]]
    origin: Mapping[str, Path]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.configs)


def _read(path: PathArg) -> bytes:
    return read_capped(
        path, MAX_MASTER_BYTES, "master config", "check --configs", error=ChangelogError
    )


def _decode(data: bytes, path: PathArg) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ChangelogError(f"{path}: not UTF-8; save it as UTF-8") from exc


def load_yaml(text: str, what: str = "config") -> Any:
    """Parse untrusted YAML text strictly (`core.yamlload`);
    failures are one ChangelogError line.
    """
    return _load_yaml(text, what, max_bytes=MAX_MASTER_BYTES, error=ChangelogError)


def load_master(path: PathArg) -> dict[str, dict[str, object]]:
    """The whole master file as {config key: config}; strict about keys and shape."""
    return parse_master(_read(path), path)


def parse_master(data: bytes, path: PathArg) -> dict[str, dict[str, object]]:
    """`load_master` of bytes read elsewhere (a git blob); `path` names it in errors."""
    loaded = load_yaml(_decode(data, path), str(path))
    if not isinstance(loaded, dict):
        raise ChangelogError(
            f"{path}: a master config must be a mapping of config keys; "
            f"found {type(loaded).__name__}"
        )
    for key, value in loaded.items():
        if not isinstance(key, str):
            raise ChangelogError(f"{path}: config key {key!r} is not a string; quote it")
        if "*" in key:
            raise ChangelogError(
                f"{path}: config key `{key}` contains `*`, which is reserved for globs; rename it"
            )
        if not isinstance(value, dict):
            raise ChangelogError(
                f"{path}: config `{key}` must be a mapping, found {type(value).__name__}"
            )
    return loaded


def load_masters(paths: Iterable[PathArg]) -> MasterConfigs:
    """Several master files merged; a key defined in two files is an error naming both."""
    return parse_masters((path, _read(path)) for path in paths)


def parse_masters(blobs: Iterable[tuple[PathArg, bytes]]) -> MasterConfigs:
    """`load_masters` of (path, bytes) pairs read elsewhere (git blobs at a ref)."""
    from pathlib import Path  # deferred: not at the top: the commit hook never loads whole masters

    configs: dict[str, dict[str, object]] = {}
    origin: dict[str, Path] = {}
    for path, data in blobs:
        for key, value in parse_master(data, path).items():
            if key in configs:
                raise ChangelogError(
                    f"config key `{key}` is defined in both {origin[key]} and {path}; keep one"
                )
            configs[key] = value
            origin[key] = Path(path)
    return MasterConfigs(configs=configs, origin=origin)


# Compiled on first use (`lazy_re`): the usual commit reads the masters' keys from the base cache.
_KEY_LINE = lazy_re(
    r"""(?:([^\s#'"&*!|>%@`{}\[\],?:-][^:#]*?)|"([^"\\]*)"|'([^']*)'):[ ]*(?:#.*)?$"""
)
# A quoted scalar that opens after `key: ` or `- ` and does not close on its line could carry a
# column-0 line that looks like a key; such files take the event-stream path. Possessive (`*+`):
# nothing a part takes can be given back, which no match needs (a plain key never starts with
# "- ") and which keeps a hostile line linear (backtracking made `-  ` x 16,000 take 1 s).
_OPEN_QUOTE = lazy_re(
    r"""[ ]*+(?:- +)*+(?:[^\s#'"][^:#]*+:[ ]++)?(?:"(?:[^"\\]|\\.)*+$|'(?:[^']|'')*+$)"""
)


def _closed(line: str) -> bool:
    """Cheap proof that no quoted scalar stays open at the end of the line: it ends with a quote
    that is neither escaped nor doubled, and holds no comment. Otherwise the regex decides."""
    end = line.rstrip(" ")
    return "#" not in end and (
        (end.endswith('"') and not end.endswith('\\"'))
        or (end.endswith("'") and not end.endswith("''"))
    )


def _keys_from_events(data: bytes, path: PathArg) -> tuple[str, ...]:
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    keys: list[str] = []
    depth = 0
    expect_key = False
    try:
        for event in yaml.parse(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if depth == 1 and expect_key:
                    raise ChangelogError(f"{path}: a top-level key is not a plain string; quote it")
                if depth == 1:
                    expect_key = True
                depth += 1
                if depth == 1 and isinstance(event, yaml.MappingStartEvent):
                    expect_key = True
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)) and depth == 1:
                if expect_key:
                    if not isinstance(event, yaml.ScalarEvent):
                        raise ChangelogError(
                            f"{path}: alias used as a top-level key; write the key out"
                        )
                    keys.append(event.value)
                expect_key = not expect_key
    except yaml.YAMLError as exc:
        raise ChangelogError(
            f"{path}: not valid YAML ({getattr(exc, 'problem', exc)}); fix the syntax"
        ) from exc
    return tuple(keys)


# A column-0 line after the first. Led by a literal newline, which the regex engine searches
# for at C speed; a `^` in MULTILINE mode is tried at every offset (5x slower on the real masters).
_TOP_LINE = lazy_re(r"\n([^ #\n][^\n]*)")


def _top_lines(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of each column-0 line that is neither empty nor a comment nor indented."""
    first = text.split("\n", 1)[0]
    if first and first[0] not in " #":
        yield 0, first
    for m in _TOP_LINE.finditer(text):
        yield m.start(1), m.group(1)


def _quoted_lines(text: str) -> list[str]:
    """Every line holding a quote character, once each, in file order (found with str.find)."""
    spans: set[tuple[int, int]] = set()
    for quote in "\"'":
        at = text.find(quote)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            spans.add((start, end))
            at = text.find(quote, end)
    return [text[start:end] for start, end in sorted(spans)]


def _key_lines(text: str) -> list[tuple[int, str]] | None:
    """(offset, key) of each top-level key, when a line scan proves every column-0 line is a
    plain `key:` line (no tab, CR or multi-line quoted scalar); None when it cannot."""
    if (
        "\t" in text
        or "\r" in text
        or any(_OPEN_QUOTE.match(line) for line in _quoted_lines(text) if not _closed(line))
    ):
        return None
    found: list[tuple[int, str]] = []
    for offset, line in _top_lines(text):
        m = _KEY_LINE.match(line)
        if m is None:
            return None
        plain, double, single = m.groups()
        found.append(
            (offset, plain if plain is not None else double if double is not None else single)
        )
    return found


def master_keys(path: PathArg) -> tuple[str, ...]:
    """Top-level keys of a master file, in file order, without loading the configs."""
    return keys_of(read_master(path), path)


def read_master(path: PathArg) -> bytes:
    """A master file's bytes, refused with one line when unreadable or over the size cap."""
    return _read(path)


def keys_of(data: bytes, path: PathArg) -> tuple[str, ...]:
    """`master_keys` of bytes read elsewhere; `path` names them in errors."""
    found = _key_lines(_decode(data, path))
    if found is None:
        return _keys_from_events(data, path)
    return tuple(key for _, key in found)


def master_blocks(data: bytes, path: PathArg) -> dict[str, str] | None:
    """Each top-level key's block of text (its `key:` line up to the next key line), from the
    line scan of `master_keys`; each block parses on its own to {key: config}, and equal blocks
    are equal configs. None when the scan cannot prove that (or a key repeats): load it whole."""
    text = _decode(data, path)
    found = _key_lines(text)
    if found is None or len({key for _, key in found}) != len(found):
        return None
    # Each block runs to the next key's line; the last one to the end, with one more newline.
    ends = [offset for offset, _ in found[1:]]
    blocks = {key: text[start:end] for (start, key), end in zip(found, ends, strict=False)}
    start, key = found[-1] if found else (0, "")
    if found:
        blocks[key] = text[start:] + "\n"
    return blocks


def resolve_key(pattern: str, keys: Sequence[str]) -> list[str]:
    """Keys one changelog `config-keys` item selects (`*` is the only wildcard; full match)."""
    if "*" in pattern:
        regex = re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
        matched = [key for key in keys if regex.fullmatch(key)]
        if not matched:
            raise ChangelogError(
                f"glob `{pattern}` matches no config key in the master configs; fix the pattern"
            )
        return matched
    if pattern not in keys:
        raise ChangelogError(
            f"config key `{pattern}` not found in the master configs"
            f"{suggest.did_you_mean(pattern, keys) or '; check its spelling'}"
        )
    return [pattern]


def resolve_keys(patterns: Iterable[str], keys: Sequence[str]) -> list[str]:
    """All keys the patterns select, de-duplicated in first-seen order; first failure raises."""
    lookup = set(keys) if len(keys) > 64 else keys
    out: dict[str, None] = {}
    for pattern in patterns:
        if "*" not in pattern and pattern in lookup:
            out.setdefault(pattern)
            continue
        for key in resolve_key(pattern, keys):
            out.setdefault(key)
    return list(out)
