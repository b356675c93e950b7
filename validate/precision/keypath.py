"""What lies on a config key's path through the engine tree: the files whose change can move the
precision of that key, and nothing else.

A precision diff says which changed files can move numerical precision *somewhere*. A release of
one key asks a narrower question: did anything change on *this key's* path? The path is derived
from the engine tree at the new commit and the key's config:

* the model's own modules (`atom/models/minimax_m3.py` for `minimaxm3`), its draft model's
  (`..._mtp.py`, the DSpark/EAGLE3 drafter modules for the spec-decode method), and the
  model-specific op folders named after it (`atom/model_ops/minimax_m3/`);
* every module of the engine package they reach by imports (`ast`, never imported), without
  crossing into another model's modules or op folders, the plugin/entrypoint/benchmark trees;
* the engine-wide switches every model runs through (config, model runner, loader, quantization
  specs, sampling; speculative decoding and KV-cache code when the key uses them).

Everything else a diff touches (other models, other engines' plugins, tests, docs, CI, recipes of
other models) is "elsewhere": reported, never relevant for the key. ATOM's layout is the one
declared here; an engine without a declaration has no key path (every change stays relevant).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ...core import sanitize
from ...core.jsoncodec import RecordError
from . import gitio
from .classify import diff
from .globs import compile_globs
from .report import PrecisionReport

SPEC_METHODS = ("mtp", "eagle3", "eagle", "dspark")
PRECISIONS = ("mxfp4", "fp4", "fp8", "int4", "int8", "bf16", "fp16", "nvfp4", "w4a8", "w8a8")
MAX_MODULE = 2 * 1024 * 1024  # a Python module larger than this is not parsed (counted on path)


@dataclass(frozen=True, kw_only=True)
class EngineTree:
    """Where an engine keeps what the path is made of (globs relative to the repository)."""

    package: str  # the import root (`atom`)
    models: str  # the folder of model modules
    model_ops: str  # the folder whose subfolders are model-specific ops
    never: tuple[str, ...]  # trees the path never enters
    engine_wide: tuple[str, ...]  # what every key runs through
    spec_decode: tuple[str, ...]  # on the path when the key decodes speculatively
    kv_cache: tuple[str, ...]  # on the path when the KV cache is quantized (fp8 kv)
    drafters: dict[str, tuple[str, ...]]  # spec method -> shared drafter modules (globs)
    # Variant tokens: a module named for one (`attention_mla.py`, `v4_kernels/`) is one of
    # several implementations a dispatcher imports all of; it is on a key's path only when the
    # model's own modules import a module of that variant.
    variants: tuple[str, ...] = ()


ATOM = EngineTree(
    package="atom",
    models="atom/models",
    model_ops="atom/model_ops",
    never=(
        # other engines' plugins, servers, tools: not on an ATOM key's path
        "atom/plugin/**",
        "atom/entrypoints/**",
        "atom/benchmarks/**",
        "atom/examples/**",
        "atom/mesh/**",
        "atom/rollout/**",
        # PD disaggregation moves KV blocks between nodes, it computes nothing (a key's config
        # would name it); scheduling and block bookkeeping decide when, not how, a token is
        # computed: both reached by imports, neither on the numerical path (the model runner
        # and a quantized KV cache are, below)
        "atom/kv_transfer/**",
        "atom/model_engine/**",
    ),
    engine_wide=(
        "atom/config.py",
        "atom/quant_spec.py",
        "atom/quantization/**",
        "atom/model_engine/model_runner.py",
        "atom/model_loader/**",
        "atom/model_ops/sampler.py",
        "atom/utils/envs.py",
        "pyproject.toml",
        "setup.py",
    ),
    spec_decode=(
        "atom/spec_decode/__init__.py",
        "atom/spec_decode/drafter.py",
        "atom/spec_decode/factory.py",
        "atom/model_ops/rejection_sampler.py",
    ),
    kv_cache=("atom/model_engine/kv_block.py", "atom/model_engine/block_manager.py"),
    drafters={
        "dspark": (
            "atom/models/dspark_draft.py",
            "atom/model_ops/dspark_*.py",
            "atom/spec_decode/dspark_*.py",
        ),
        "eagle3": ("atom/models/eagle3_*.py", "atom/spec_decode/eagle*.py"),
        "eagle": ("atom/models/eagle3_*.py", "atom/spec_decode/eagle*.py"),
        # MTP drafts through the EAGLE proposer (`eagle.py` until mid-2026)
        "mtp": ("atom/spec_decode/eagle.py", "atom/spec_decode/eagle_proposer.py"),
    },
    variants=("mla", "mha", "gdn", "mamba", "fla", "v4", "dspark", "eagle3", "mrope", "swa"),
)
ENGINE_TREES = {"atom": ATOM}


@dataclass(frozen=True, kw_only=True)
class KeyConfig:
    """The parts of a config key that choose its path: model, precision, spec decoding, KV dtype."""

    model: str
    precision: str | None = None
    spec_decode: str | None = None
    kv_dtype: str | None = None


def _norm(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def key_config(name: str, *, kv_dtype: str | None = None) -> KeyConfig:
    """A key's config from its name: an InferenceX config key (`minimaxm3-fp4-mi355x-atom-
    agentic-mtp`) or a dashboard series (`ATOM::Qwen3.5-397B-A17B-FP8 MTP`)."""
    text = name.rsplit("::", 1)[-1]
    tokens = [t for t in re.split(r"[\s_-]+", text) if t]
    model: list[str] = []
    precision = spec = None
    for token in tokens:
        low = token.lower()
        method = next((m for m in SPEC_METHODS if low.rstrip("0123456789") == m), None)
        if low in PRECISIONS:
            precision = precision or low
        elif method:
            spec = spec or method
        elif precision is None and spec is None:
            model.append(token)
    return KeyConfig(
        model="-".join(model) or text, precision=precision, spec_decode=spec, kv_dtype=kv_dtype
    )


@dataclass(frozen=True, kw_only=True)
class KeyPath:
    """The files on a key's path at one commit, and why each is there."""

    key: KeyConfig
    commit: str
    models: tuple[str, ...]  # the model and draft modules the path starts from
    files: frozenset[str]  # reached by imports from them
    switches: tuple[str, ...]  # globs every key of the engine runs through

    def on_path(self, path: str) -> bool:
        return path in self.files or any(_match(g, path) for g in self.switches)

    def split(self, paths: Iterable[str]) -> tuple[list[str], list[str]]:
        """(on the key's path, elsewhere), each in the given order."""
        on: list[str] = []
        off: list[str] = []
        for path in paths:
            (on if self.on_path(path) else off).append(path)
        return on, off

    def why(self, path: str) -> str:
        if path in self.models:
            return "the model's own code"
        if path in self.files:
            return "reached from the model by imports"
        if self.on_path(path):
            return "an engine-wide switch"
        return "elsewhere"


@functools.cache
def _compiled(glob: str) -> re.Pattern[str]:
    return compile_globs([glob])


def _match(glob: str, path: str) -> bool:
    return bool(_compiled(glob).fullmatch(path))


def resolve(repo: Path, commit: str, key: KeyConfig, engine: EngineTree = ATOM) -> KeyPath:
    """The key's path in `repo` at `commit`: one `ls-tree`, then one `cat-file` per level of
    imports for the modules not read before (a module's imports are kept by blob id)."""
    sha = gitio.run(repo, "rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    listing = gitio.run(repo, "ls-tree", "-r", "-z", "--full-tree", sha, "--", engine.package)
    blobs: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob" and path.endswith(b".py"):
            blobs[path.decode("utf-8", "replace")] = parts[2].decode()
    tree = _Tree(repo, blobs, engine)
    seeds = _seeds(sorted(blobs), key, engine)
    switches = list(engine.engine_wide)
    if key.spec_decode:
        switches += engine.spec_decode
    if key.kv_dtype and "fp8" in key.kv_dtype.lower():
        switches += engine.kv_cache
    files = _closure(seeds, tree, engine)
    return KeyPath(
        key=key, commit=sha, models=tuple(seeds), files=frozenset(files), switches=tuple(switches)
    )


ImportNames = tuple[tuple[str, ...], ...]
_NAMES: dict[tuple[str, str], ImportNames] = {}  # (blob, path) -> what it imports
_NAMES_CAP = 100_000


class _Tree:
    """The package's modules at one commit; their imports read in batches, once per blob."""

    def __init__(self, repo: Path, blobs: dict[str, str], engine: EngineTree) -> None:
        self.repo, self.blobs, self.engine = repo, blobs, engine

    def read(self, paths: Iterable[str]) -> None:
        """Parse the modules of `paths` not seen before, in one `cat-file`."""
        todo = {self.blobs[p]: p for p in paths if p in self.blobs}
        todo = {sha: p for sha, p in todo.items() if (sha, p) not in _NAMES}
        if not todo:
            return
        if len(_NAMES) > _NAMES_CAP:
            _NAMES.clear()
        texts = gitio.read_blobs(self.repo, sorted(todo))
        for sha, path in todo.items():
            _NAMES[(sha, path)] = _import_names(path, texts.get(sha, b""))

    def imports(self, path: str) -> set[str]:
        """The package modules `path` imports (read first with `read`)."""
        names = _NAMES.get((self.blobs.get(path, ""), path), ())
        out = set()
        for parts in names:
            if not parts or parts[0] != self.engine.package:
                continue
            for candidate in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
                if candidate in self.blobs:
                    out.add(candidate)
        return out


def _model_stems(paths: Iterable[str], engine: EngineTree) -> dict[str, str]:
    """Model module path -> normalised stem, for every module of the models folder."""
    out = {}
    for path in paths:
        p = PurePosixPath(path)
        if str(p.parent) == engine.models and p.stem not in ("__init__", "utils"):
            out[path] = _norm(p.stem)
    return out


def _seeds(paths: Sequence[str], key: KeyConfig, engine: EngineTree) -> list[str]:
    """The model's module (the longest stem the model name starts with) and its draft modules."""
    model = _norm(key.model)
    stems = _model_stems(paths, engine)
    fits = [s for s in stems.values() if model.startswith(s) or s.startswith(model)]
    if not fits:
        return []
    best = max(fits, key=len) if any(model.startswith(s) for s in fits) else min(fits, key=len)
    seeds = [p for p, s in stems.items() if s == best]
    if key.spec_decode:
        method = key.spec_decode
        seeds += [p for p, s in stems.items() if s == best + _norm(method)]
        globs = engine.drafters.get(method, ())
        seeds += [p for p in paths if any(_match(g, p) for g in globs)]
    folder = _model_ops_folder(paths, best, engine)
    seeds += [p for p in paths if folder and p.startswith(folder)]
    return sorted(set(seeds))


def _model_ops_folder(paths: Sequence[str], stem: str, engine: EngineTree) -> str | None:
    for path in paths:
        rest = path.removeprefix(engine.model_ops + "/")
        if rest != path and "/" in rest and _norm(rest.split("/", 1)[0]) == stem:
            return f"{engine.model_ops}/{rest.split('/', 1)[0]}/"
    return None


def _closure(seeds: Sequence[str], tree: _Tree, engine: EngineTree) -> set[str]:
    """Every module reached from `seeds` by imports inside the package, never crossing into
    another model's modules or op folder, nor into the trees the path never enters."""
    paths = tree.blobs
    others = _other_models(paths, seeds, engine)
    tree.read(seeds)
    used = _variants_used(seeds, tree, engine)
    others |= {p for p in paths if p not in seeds and (_tokens(p) & set(engine.variants)) - used}
    seen = set(seeds)
    level = list(seeds)
    while level:
        tree.read(level)
        following = []
        for path in level:
            if path.endswith("/__init__.py") and path not in seeds:
                # A package's __init__ runs on import, but what it re-exports is used only where
                # a module names it (those imports are followed there): its edges are not the path.
                continue
            for target in tree.imports(path):
                if (
                    target in seen
                    or target in others
                    or any(_match(g, target) for g in engine.never)
                ):
                    continue
                seen.add(target)
                following.append(target)
        level = following
    return seen


def _tokens(path: str) -> set[str]:
    return set(re.split(r"[/_.]", path.removeprefix("atom/")))


def _variants_used(seeds: Sequence[str], tree: _Tree, engine: EngineTree) -> set[str]:
    """The variants the model's own modules name, or import a module of directly."""
    out: set[str] = set()
    for seed in seeds:
        for path in (seed, *tree.imports(seed)):
            out |= _tokens(path) & set(engine.variants)
    return out


def _other_models(sources: Iterable[str], seeds: Sequence[str], engine: EngineTree) -> set[str]:
    """Modules of other models: their model modules and their model-specific op folders."""
    sources = list(sources)
    mine = {_norm(PurePosixPath(s).stem) for s in seeds}
    stems = _model_stems(sources, engine)
    out = {p for p, s in stems.items() if p not in seeds}
    op_dirs = {
        p.removeprefix(engine.model_ops + "/").split("/", 1)[0]
        for p in sources
        if p.startswith(engine.model_ops + "/") and p.count("/") > 2
    }
    theirs = {d for d in op_dirs if _norm(d) in set(stems.values()) - mine}
    out |= {p for p in sources if any(p.startswith(f"{engine.model_ops}/{d}/") for d in theirs)}
    return out


def _import_names(path: str, source: bytes) -> ImportNames:
    """The dotted names a module imports, relative imports made absolute (a module too large or
    not parseable imports nothing we can see). Only statements are walked, not expressions."""
    if len(source) > MAX_MODULE:
        return ()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    here = PurePosixPath(path).parent.parts
    names: list[tuple[str, ...]] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            names += [tuple(a.name.split(".")) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = tuple((node.module or "").split(".")) if node.module else ()
            if node.level:
                base = here[: len(here) - node.level + 1] + base
            names.append(base)
            names += [base + (a.name,) for a in node.names]
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo += [c for c in children if isinstance(c, ast.AST)]
    return tuple(names)


@dataclass(frozen=True, kw_only=True)
class Window:
    """A span of commits judged for one key: relevant files anywhere, and those on its path."""

    old: str
    new: str
    relevant: tuple[str, ...]
    on_path: tuple[str, ...]

    @property
    def warns(self) -> bool:
        """C5 WARNs for the key: a precision-relevant change on its path."""
        return bool(self.on_path)

    @property
    def warned_before(self) -> bool:
        """What C5 said before it was scoped to the key: any relevant change."""
        return bool(self.relevant)


def windows(repo: Path, key: KeyConfig, *, last: int = 100, size: int = 5) -> list[Window]:
    """The last `last` first-parent commits of HEAD in windows of `size`, each diffed and
    scoped to `key` (the measurement behind docs/precision.md's key-scoped C5 figures)."""
    out = gitio.run(repo, "rev-list", "--first-parent", "-n", str(last + 1), "HEAD")
    revs = out.decode().split()[::-1]
    found = []
    for at in range(0, len(revs) - 1, size):
        old, new = revs[at], revs[min(at + size, len(revs) - 1)]
        report = diff(repo, old, new, scope="atom")
        path = resolve(repo, new, key)
        relevant = tuple(f.path for f in report.files if f.verdict == "relevant")
        found.append(
            Window(old=old, new=new, relevant=relevant, on_path=tuple(path.split(relevant)[0]))
        )
    return found


@dataclass(frozen=True, kw_only=True)
class Scoped:
    """A precision report read for one key: its relevant files on the key's path and elsewhere."""

    key: str
    model: str
    on_path: tuple[tuple[str, str, str], ...]  # (path, category, why it is on the path)
    elsewhere: tuple[tuple[str, str], ...]  # (path, category)

    @property
    def warns(self) -> bool:
        return bool(self.on_path)

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "model": self.model,
            "warn": self.warns,
            "on_path": [{"path": p, "category": c, "why": w} for p, c, w in self.on_path],
            "elsewhere": [{"path": p, "category": c} for p, c in self.elsewhere],
        }

    @classmethod
    def from_json(cls, data: object, *, where: str) -> Scoped:
        """Read back what `to_json` wrote (a run record); RecordError names what is wrong."""
        if not isinstance(data, dict):
            raise RecordError(where, "", "not a key scope (an object expected)")
        try:
            on = [(str(r["path"]), str(r["category"]), str(r["why"])) for r in data["on_path"]]
            off = [(str(r["path"]), str(r["category"])) for r in data["elsewhere"]]
            key, model = str(data["key"]), str(data["model"])
        except (KeyError, TypeError) as exc:
            raise RecordError(where, "", f"not a key scope ({type(exc).__name__}: {exc})") from None
        return cls(key=key, model=model, on_path=tuple(on), elsewhere=tuple(off))

    def markdown(self) -> str:
        key, model = sanitize.markdown_code(self.key), sanitize.markdown_code(self.model)
        head = f"### Scoped to {key} (model {model})"
        if not self.on_path:
            lines = [head, "", "No precision-relevant change on the key's path."]
        else:
            lines = [head, "", "| file | category | on the path as |", "|---|---|---|"]
            lines += [
                f"| {sanitize.markdown_code(p, table=True)} | {sanitize.markdown(c)} | {w} |"
                for p, c, w in self.on_path
            ]
        if self.elsewhere:
            names = ", ".join(sanitize.markdown_code(p) for p, _ in self.elsewhere[:20])
            more = f" and {len(self.elsewhere) - 20} more" if len(self.elsewhere) > 20 else ""
            lines += ["", f"Elsewhere (not relevant for this key): {names}{more}."]
        return "\n".join(lines)


def scope(repo: Path, report: PrecisionReport, name: str) -> Scoped | None:
    """`report`'s relevant files split by the path of the key `name` at the report's NEW; None
    when the engine tree has no module of the key's model (nothing to scope to: every relevant
    change stays relevant)."""
    key = key_config(name)
    path = resolve(repo, report.new, key)
    if not path.models:
        return None
    relevant = [f for f in report.files if f.verdict == "relevant"]
    return Scoped(
        key=name,
        model=key.model,
        on_path=tuple(
            (f.path, f.category or "relevant", path.why(f.path))
            for f in relevant
            if path.on_path(f.path)
        ),
        elsewhere=tuple(
            (f.path, f.category or "relevant") for f in relevant if not path.on_path(f.path)
        ),
    )
