"""The strict loader for untrusted YAML: every YAML file relpipe reads goes through `load_yaml`.

Bounded size, no NUL, no aliases (billion laughs), no duplicate keys at any depth (PyYAML keeps
the last one silently), numbers within the bounded-number policy (`core.numbers`: `1.0e+400` is
`inf` to PyYAML), the C loader when available. PyYAML is imported on first use, so that
importing this module costs the commit hook nothing.
"""

from __future__ import annotations

from functools import cache

from . import numbers
from .errors import RelpipeError

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: the hook does not import typing
if TYPE_CHECKING:
    from typing import Any

MAX_YAML_BYTES = 16 * 1024 * 1024


class _DuplicateKey(Exception):
    def __init__(self, line: int, key: object) -> None:
        super().__init__(f"line {line}: duplicate key `{key}`; keep one definition")


@cache
def _strict_loader() -> type:
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[object, object]:
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # an unhashable key: the base class reports it
                    duplicate = False
                if duplicate:
                    raise _DuplicateKey(key_node.start_mark.line + 1, key)
                if not isinstance(key, list | dict):
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    def bounded(construct: Any) -> Any:
        """A number constructor that applies the bounded-number policy (core.numbers)."""

        def build(loader: Any, node: Any) -> Any:
            value = construct(loader, node)
            try:
                return numbers.bounded(value)
            except numbers.NumberError as exc:
                raise yaml.constructor.ConstructorError(
                    None, None, str(exc), node.start_mark
                ) from None

        return build

    StrictLoader.add_constructor("tag:yaml.org,2002:int", bounded(base.construct_yaml_int))
    StrictLoader.add_constructor("tag:yaml.org,2002:float", bounded(base.construct_yaml_float))
    return StrictLoader


def load_yaml(
    text: str,
    what: str = "YAML file",
    *,
    max_bytes: int = MAX_YAML_BYTES,
    error: type[RelpipeError] = RelpipeError,
) -> Any:
    """Parse untrusted YAML `text`; every failure is one `error` line that starts with `what`."""
    if len(text) > max_bytes:
        raise error(f"{what} is larger than {max_bytes} bytes; refusing to parse it")
    if "\x00" in text:
        raise error(f"{what} contains a NUL byte; it is not a YAML text file")
    import yaml  # deferred: not on the commit hook's usual path (start-up)

    loader = _strict_loader()
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise error(
                    f"{what} line {line}: YAML aliases are not allowed; write the value out"
                )
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader subclass
    except _DuplicateKey as exc:
        raise error(f"{what} {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise error(f"{what}{where}: invalid YAML ({problem}); fix the file") from None
    except (ValueError, RecursionError) as exc:  # e.g. an int over 4,300 digits, deep nesting
        raise error(
            f"{what}: value cannot be loaded ({type(exc).__name__}); fix the file"
        ) from None
