"""Config pin: change the `image:` of one master-config key by a minimal textual edit.

The master configs are hand-written YAML with comments and flow mappings, so they are never
re-dumped: the scalar's exact character span is located with PyYAML's composer and only those
characters are replaced. The result is re-parsed and must equal the old document with exactly
that one value changed; otherwise nothing is written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ...core.files import read_capped, write_atomic
from ..errors import ChangelogError
from .load import MAX_MASTER_BYTES

# libyaml when present: the same marks (character offsets), ten times faster on a master config.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A container reference as a plain YAML scalar: no spaces, no '#', no leading indicator.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,510}")


class ConfigPinError(ChangelogError):
    """The config key or its image could not be pinned (checked failure)."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class PinResult:
    path: str
    key: str
    old_image: str
    new_image: str
    line: int  # 1-based line of the edited value
    changed: bool


def _find_image_node(root: yaml.Node, key: str, path: str) -> yaml.ScalarNode:
    if not isinstance(root, yaml.MappingNode):
        raise ConfigPinError(f"{path}: top level is not a mapping of config keys")
    found = [v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == key]
    if not found:
        raise ConfigPinError(f"{path}: config key {key!r} not found")
    if len(found) > 1:
        raise ConfigPinError(
            f"{path}: config key {key!r} appears {len(found)} times; fix the file first"
        )
    body = found[0]
    if not isinstance(body, yaml.MappingNode):
        raise ConfigPinError(f"{path}: config key {key!r} is not a mapping")
    images = [v for k, v in body.value if isinstance(k, yaml.ScalarNode) and k.value == "image"]
    if len(images) != 1 or not isinstance(images[0], yaml.ScalarNode):
        raise ConfigPinError(f"{path}: config key {key!r} needs exactly one scalar 'image:'")
    return images[0]


def edit_image(
    text: str, key: str, new_image: str, path: str = "<config>"
) -> tuple[str, PinResult]:
    """Pure edit: returns the new text and what changed
    (raises when the edit cannot be verified).
    """
    if not _IMAGE.fullmatch(new_image):
        raise ConfigPinError(f"invalid image reference {new_image!r}: no spaces, quotes or '#'")
    try:
        root = yaml.compose(text, Loader=_Loader)
        before = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise ConfigPinError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    if root is None:
        raise ConfigPinError(f"{path}: empty config file")
    node = _find_image_node(root, key, path)
    old = str(node.value)
    start, end = node.start_mark.index, node.end_mark.index
    line = node.start_mark.line + 1
    if old == new_image:
        return text, PinResult(
            path=path, key=key, old_image=old, new_image=new_image, line=line, changed=False
        )
    if node.style in ("'", '"'):
        replacement = f"{node.style}{new_image}{node.style}"  # keep the author's quoting
    elif not node.style and "\n" not in text[start:end]:  # plain (libyaml says "", PyYAML None)
        replacement = new_image
    else:
        raise ConfigPinError(f"{path}: image of {key!r} is a block scalar; edit it by hand")
    new_text = text[:start] + replacement + text[end:]
    _verify(before, new_text, key, new_image, path)
    return new_text, PinResult(
        path=path, key=key, old_image=old, new_image=new_image, line=line, changed=True
    )


def _verify(before: Any, new_text: str, key: str, new_image: str, path: str) -> None:
    try:
        after = yaml.load(new_text, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise ConfigPinError(
            f"{path}: edit produced invalid YAML ({str(exc).splitlines()[0]}); not written"
        ) from None
    expected = dict(before)
    expected[key] = dict(before[key], image=new_image)
    if after != expected:
        raise ConfigPinError(f"{path}: re-parsed config differs beyond {key}.image; not written")


def pin_image(path: str | os.PathLike[str], key: str, new_image: str) -> PinResult:
    """Edit the file in place (atomic rename); returns what changed. Bytes outside the value are
    kept.

    An unreadable or unwritable file is a one-line `ChangelogError` (exit 2), never an OSError.
    """
    p = Path(path)
    raw = read_capped(p, MAX_MASTER_BYTES, "master config", "check --config", error=ChangelogError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigPinError(f"{p}: not UTF-8") from None
    if "\r" in text:
        # PyYAML normalises line breaks, which would shift the marks we splice at.
        raise ConfigPinError(f"{p}: contains carriage returns; convert to LF line endings first")
    new_text, result = edit_image(text, key, new_image, str(p))
    if result.changed:
        try:
            write_atomic(p, new_text.encode("utf-8"))
        except OSError as exc:
            raise ChangelogError(
                f"cannot write master config {p}: {exc.strerror}; check permissions and disk space"
            ) from exc
    return result
