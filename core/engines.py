"""The engine declarations, as every host layer reads them: one JSON file per engine.

What an engine is (ATOM, vLLM, SGLang: its image families and the tags never chosen, how the
probe reads its version and commit, its source checkout and precision rules, its acceptance-length
spellings, its launch flags and its fixture layout) is declared once, in
`engine/declarations/<name>.json`; docs/engine.md describes the format. The files sit in the
engine payload's folder because the payload is the one reader that runs inside foreign images,
where only that folder is mounted and only the standard library exists; JSON because the payload
has no PyYAML. The payload reads them with its own minimal reader (`engine/declaration.py`); the
host layers (images, validate, pipeline) read them here, typed and validated once. Data, not
code: no layer imports another to learn what an engine is.

More declarations can be added without touching relpipe: `RELPIPE_ENGINE_DECLARATIONS` names
folders (separated by `os.pathsep`) whose `*.json` are read after the built-in ones; a name
declared twice is refused.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import jsonload
from .errors import RelpipeError

DECLARATIONS_ENV = "RELPIPE_ENGINE_DECLARATIONS"
DEFAULT_ENGINE = "atom"  # what a repository no family names serves (ATOM's fixtures, mirrors)
# relpipe/core/engines.py -> relpipe/engine/declarations (a package's data, not an import)
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "engine" / "declarations"
SCHEMA = 1
MAX_DECLARATION = 256 * 1024
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_TOP = set(
    "schema name title about frameworks upstream-images probe source launch acceptance "
    "draft-tokens families never fixtures".split()
)
_PROBE_KEYS = set(
    "method distribution checkouts version-modules version-names commit-names".split()
)
_FAMILY_KEYS = {"about", "repositories", "patterns", "order", "group"}
_NEVER_KEYS = {"class", "why", "repositories", "patterns"}
_SPELLING_KEYS = {"name", "form", "kind"}
_FORMS = ("flag", "key", "setting")
_KINDS = ("al", "rate")
_PROBE_METHODS = ("checkout", "packaging")
_NEVER_CLASSES = ("floating", "branch", "variant", "platform", "custom")
# Separator after a setting's name: quotes and backslashes of JSON in shell, then `:` or `=`.
SETTING_SEP = r"""[\\"']*\s*[:=]\s*"""


class DeclarationError(RelpipeError):
    """An engine declaration is unreadable or malformed, or an engine is not declared."""


@dataclass(frozen=True, kw_only=True)
class FamilySpec:
    """One tag family as declared (images/nightly.py compiles its patterns)."""

    name: str
    engine: str
    about: str
    repositories: tuple[str, ...]
    patterns: tuple[str, ...]
    order: tuple[str, ...]
    group: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class NeverSpec:
    """Tags of the engine's repositories that are never chosen, and why (floating, branch, ...)."""

    kind: str
    engine: str
    why: str
    repositories: tuple[str, ...]
    patterns: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Spelling:
    """How an engine's launch files force an acceptance length (or state K): a `--flag X`, a
    YAML `key: X` or a `SETTING=X` (environment, JSON key); `kind` al (the length), rate
    ((AL - 1) / K) or k (the draft tokens)."""

    engine: str  # the engine's title, as findings name it
    name: str
    form: str
    kind: str

    def regex(self) -> str:
        """The spelling up to its value, as a regular expression (no backtracking: literals)."""
        name = re.escape(self.name)
        if self.form == "flag":
            return name + r"(?:=|\s+)"
        if self.form == "key":
            return r"(?<![\w-])" + name + r"\s*:\s*"
        return r"(?<![\w])" + name + SETTING_SEP


@dataclass(frozen=True, kw_only=True)
class Component:
    """A second repository an engine's images carry with its own rules (ATOM's AITER)."""

    name: str
    checkout: str
    rules: str


@dataclass(frozen=True, kw_only=True)
class Fixtures:
    """How fixture images lay the engine out (images/build.py, images/family_fixtures.py)."""

    repository: str  # the canonical repository its fixture nightlies are pushed as
    checkout: str  # the source checkout, relative to the image root
    install: str  # `editable` (PEP 610, the checkout's folder) or `built` (a wheel's files)
    local_suffix: str | None  # appended to the local version (vLLM's ROCm builds: rocm720)
    version_file: str | None  # checkout-relative file whose __version__ names the version


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One engine's declaration (see the module docstring; the format in docs/engine.md)."""

    name: str
    title: str
    about: str
    path: Path  # the declaration file
    frameworks: tuple[str, ...]  # words of InferenceX's `framework:` that mean this engine
    upstream_images: tuple[str, ...]  # repository prefixes its keys must pin (review)
    probe_method: str  # `checkout` (version from metadata, commit from git) or `packaging`
    distribution: str
    checkout: str  # the source tree in its images; its history is `.git` below
    rules: str  # a built-in precision rule set by name, or a file next to the declaration
    rules_file: Path | None
    components: tuple[Component, ...]
    acceptance: tuple[Spelling, ...]
    draft_tokens: tuple[Spelling, ...]  # how its launch files state K (kind "k")
    families: tuple[FamilySpec, ...]
    never: tuple[NeverSpec, ...]
    fixtures: Fixtures


def _fail(path: Path, message: str) -> DeclarationError:
    return DeclarationError(f"engine declaration {path}: {message}")


def _strings(path: Path, where: str, value: object, *, empty: bool = True) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, f"{where} must be a list of non-empty strings")
    if not value and not empty:
        raise _fail(path, f"{where} must not be empty")
    return tuple(value)


def _field(path: Path, doc: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    """A required, non-empty list of strings."""
    return _strings(path, f"{where}.{key}", doc.get(key), empty=False)


def _text(path: Path, doc: dict[str, object], key: str, where: str = "") -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(path, f"{where}{key} must be a non-empty string")
    return value


def _mapping(path: Path, value: object, where: str, keys: set[str]) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _fail(path, f"{where} must be an object")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise _fail(
            path, f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(keys))})"
        )
    return value


def _families(path: Path, name: str, value: object) -> tuple[FamilySpec, ...]:
    if not isinstance(value, dict):
        raise _fail(path, "families must be an object of family name -> family")
    out = []
    for family, raw in value.items():
        spec = _mapping(path, raw, f"families.{family}", _FAMILY_KEYS)
        out.append(
            FamilySpec(
                name=family,
                engine=name,
                about=str(spec.get("about", "")),
                repositories=_field(path, spec, "repositories", f"families.{family}"),
                patterns=_field(path, spec, "patterns", f"families.{family}"),
                order=_field(path, spec, "order", f"families.{family}"),
                group=_strings(path, f"families.{family}.group", spec.get("group", [])),
            )
        )
    return tuple(out)


def _never(path: Path, name: str, value: object) -> tuple[NeverSpec, ...]:
    if not isinstance(value, list):
        raise _fail(path, "never must be a list")
    out = []
    for i, raw in enumerate(value):
        spec = _mapping(path, raw, f"never[{i}]", _NEVER_KEYS)
        kind = _text(path, spec, "class", f"never[{i}].")
        if kind not in _NEVER_CLASSES:
            raise _fail(path, f"never[{i}].class {kind!r}: use one of {', '.join(_NEVER_CLASSES)}")
        out.append(
            NeverSpec(
                kind=kind,
                engine=name,
                why=_text(path, spec, "why", f"never[{i}]."),
                repositories=_field(path, spec, "repositories", f"never[{i}]"),
                patterns=_field(path, spec, "patterns", f"never[{i}]"),
            )
        )
    return tuple(out)


def _spellings(
    path: Path, title: str, value: object, where: str = "acceptance"
) -> tuple[Spelling, ...]:
    """An acceptance length's spellings (kind al or rate), or K's (`draft-tokens`, kind k)."""
    if not isinstance(value, list):
        raise _fail(path, f"{where} must be a list")
    kinds = _KINDS if where == "acceptance" else ("k",)
    out = []
    for i, raw in enumerate(value):
        spec = _mapping(path, raw, f"{where}[{i}]", _SPELLING_KEYS)
        form, kind = spec.get("form"), spec.get("kind", kinds[0])
        if form not in _FORMS or kind not in kinds:
            raise _fail(path, f"{where}[{i}]: form one of {_FORMS}, kind one of {kinds}")
        name = _text(path, spec, "name", f"{where}[{i}].")
        out.append(Spelling(engine=title, name=name, form=str(form), kind=str(kind)))
    return tuple(out)


def _rules_file(path: Path, rules: str) -> Path | None:
    """A rules file named by the declaration (`x_rules.yaml`, next to it), else None (a name)."""
    if not rules.endswith(".yaml"):
        return None
    file = (path.parent / rules).resolve()
    if file.parent != path.parent.resolve() or not file.is_file():
        raise _fail(path, f"source.rules {rules!r} is not a file next to the declaration")
    return file


def _components(path: Path, value: object) -> tuple[Component, ...]:
    if not isinstance(value, list):
        raise _fail(path, "source.components must be a list")
    out = []
    for i, raw in enumerate(value):
        spec = _mapping(path, raw, f"source.components[{i}]", {"name", "checkout", "rules"})
        where = f"source.components[{i}]."
        out.append(
            Component(
                name=_text(path, spec, "name", where),
                checkout=_text(path, spec, "checkout", where),
                rules=_text(path, spec, "rules", where),
            )
        )
    return tuple(out)


def _fixtures(path: Path, value: object) -> Fixtures:
    keys = {"repository", "checkout", "install", "local-suffix", "version-file"}
    spec = _mapping(path, value, "fixtures", keys)
    install = _text(path, spec, "install", "fixtures.")
    if install not in ("editable", "built"):
        raise _fail(path, "fixtures.install must be editable or built")
    suffix, version_file = spec.get("local-suffix"), spec.get("version-file")
    return Fixtures(
        repository=_text(path, spec, "repository", "fixtures."),
        checkout=_text(path, spec, "checkout", "fixtures."),
        install=install,
        local_suffix=suffix if isinstance(suffix, str) else None,
        version_file=version_file if isinstance(version_file, str) else None,
    )


def parse(path: Path, data: bytes) -> Engine:
    """One declaration from its bytes; DeclarationError naming the file and the field."""
    try:
        doc = jsonload.loads(data, max_bytes=MAX_DECLARATION)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"not JSON ({exc})") from None
    doc = _mapping(path, doc, "the document", _TOP)
    if doc.get("schema") != SCHEMA:
        raise _fail(path, f"schema must be {SCHEMA}")
    name = _text(path, doc, "name")
    if not _NAME.fullmatch(name) or path.stem != name:
        raise _fail(path, f"name {name!r} must be lower-case [a-z0-9_] and the file's stem")
    title = _text(path, doc, "title")
    probe = _mapping(path, doc.get("probe"), "probe", _PROBE_KEYS)
    method = _text(path, probe, "method", "probe.")
    if method not in _PROBE_METHODS:
        raise _fail(path, f"probe.method must be one of {', '.join(_PROBE_METHODS)}")
    source = _mapping(path, doc.get("source"), "source", {"checkout", "rules", "components"})
    rules = _text(path, source, "rules", "source.")
    if not isinstance(doc.get("launch"), dict):
        raise _fail(path, "launch must be an object (its format: engine/adapters/declared.py)")
    return Engine(
        name=name,
        title=title,
        about=str(doc.get("about", "")),
        path=path,
        frameworks=_strings(path, "frameworks", doc.get("frameworks"), empty=False),
        upstream_images=_strings(path, "upstream-images", doc.get("upstream-images", [])),
        probe_method=method,
        distribution=_text(path, probe, "distribution", "probe."),
        checkout=_text(path, source, "checkout", "source."),
        rules=rules,
        rules_file=_rules_file(path, rules),
        components=_components(path, source.get("components", [])),
        acceptance=_spellings(path, title, doc.get("acceptance", [])),
        draft_tokens=_spellings(path, title, doc.get("draft-tokens", []), "draft-tokens"),
        families=_families(path, name, doc.get("families", {})),
        never=_never(path, name, doc.get("never", [])),
        fixtures=_fixtures(path, doc.get("fixtures")),
    )


def folders() -> tuple[Path, ...]:
    """The built-in declarations' folder, then those `RELPIPE_ENGINE_DECLARATIONS` names."""
    extra = os.environ.get(DECLARATIONS_ENV, "")
    return (BUILTIN_DIR, *(Path(p) for p in extra.split(os.pathsep) if p))


def declarations() -> tuple[Engine, ...]:
    """Every declared engine: the built-in ones by name, then each extra folder's by name."""
    return _load(folders())


@cache
def _load(where: tuple[Path, ...]) -> tuple[Engine, ...]:
    found: dict[str, Engine] = {}
    for folder in where:
        if not folder.is_dir():
            raise DeclarationError(f"{DECLARATIONS_ENV}: {folder} is not a folder")
        for path in sorted(folder.glob("*.json")):
            with open(path, "rb") as fh:
                data = fh.read(MAX_DECLARATION + 1)
            if len(data) > MAX_DECLARATION:
                raise _fail(path, f"larger than {MAX_DECLARATION} bytes")
            engine = parse(path, data)
            if engine.name in found:
                raise _fail(
                    path, f"engine {engine.name!r} is already declared in {found[engine.name].path}"
                )
            found[engine.name] = engine
    return tuple(found.values())


def names() -> tuple[str, ...]:
    return tuple(e.name for e in declarations())


def engine(name: str) -> Engine:
    """The declaration of `name`; DeclarationError listing the declared engines."""
    for declared in declarations():
        if declared.name == name:
            return declared
    raise DeclarationError(f"unknown engine {name!r} (declared: {', '.join(names())})")


def of_framework(framework: str) -> Engine | None:
    """The engine whose framework word the master's `framework:` value contains, first
    declaration first (`atom-vllm` is ATOM's), else None."""
    return next((e for e in declarations() if any(w in framework for w in e.frameworks)), None)
