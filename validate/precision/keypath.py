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

from relpipe.validate.precision import gitio
from relpipe.validate.precision.globs import compile_globs

SPEC_METHODS = ("mtp", "eagle3", "eagle", "dspark")
PRECISIONS = ("mxfp4", "fp4", "fp8", "int4", "int8", "bf16", "fp16", "nvfp4", "w4a8", "w8a8")
MAX_MODULE = 2 * 1024 * 1024  # a Python module larger than this is not parsed (counted on path)


@dataclass(frozen=True, kw_only=True)
class Layout:
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


ATOM = Layout(
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
LAYOUTS = {"atom": ATOM}


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


def resolve(repo: Path, commit: str, key: KeyConfig, layout: Layout = ATOM) -> KeyPath:
    """The key's path in `repo` at `commit` (one `ls-tree` and one `cat-file` for the modules)."""
    sha = gitio.run(repo, "rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    listing = gitio.run(repo, "ls-tree", "-r", "-z", "--full-tree", sha, "--", layout.package)
    blobs: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob" and path.endswith(b".py"):
            blobs[path.decode("utf-8", "replace")] = parts[2].decode()
    seeds = _seeds(sorted(blobs), key, layout)
    texts = gitio.read_blobs(repo, sorted(set(blobs.values())))
    sources = {p: texts.get(s, b"") for p, s in blobs.items()}
    switches = list(layout.engine_wide)
    if key.spec_decode:
        switches += layout.spec_decode
    if key.kv_dtype and "fp8" in key.kv_dtype.lower():
        switches += layout.kv_cache
    files = _closure(seeds, sources, key, layout)
    return KeyPath(
        key=key, commit=sha, models=tuple(seeds), files=frozenset(files), switches=tuple(switches)
    )


def _model_stems(paths: Iterable[str], layout: Layout) -> dict[str, str]:
    """Model module path -> normalised stem, for every module of the models folder."""
    out = {}
    for path in paths:
        p = PurePosixPath(path)
        if str(p.parent) == layout.models and p.stem not in ("__init__", "utils"):
            out[path] = _norm(p.stem)
    return out


def _seeds(paths: Sequence[str], key: KeyConfig, layout: Layout) -> list[str]:
    """The model's module (the longest stem the model name starts with) and its draft modules."""
    model = _norm(key.model)
    stems = _model_stems(paths, layout)
    fits = [s for s in stems.values() if model.startswith(s) or s.startswith(model)]
    if not fits:
        return []
    best = max(fits, key=len) if any(model.startswith(s) for s in fits) else min(fits, key=len)
    seeds = [p for p, s in stems.items() if s == best]
    if key.spec_decode:
        method = key.spec_decode
        seeds += [p for p, s in stems.items() if s == best + _norm(method)]
        globs = layout.drafters.get(method, ())
        seeds += [p for p in paths if any(_match(g, p) for g in globs)]
    folder = _model_ops_folder(paths, best, layout)
    seeds += [p for p in paths if folder and p.startswith(folder)]
    return sorted(set(seeds))


def _model_ops_folder(paths: Sequence[str], stem: str, layout: Layout) -> str | None:
    for path in paths:
        rest = path.removeprefix(layout.model_ops + "/")
        if rest != path and "/" in rest and _norm(rest.split("/", 1)[0]) == stem:
            return f"{layout.model_ops}/{rest.split('/', 1)[0]}/"
    return None


def _closure(
    seeds: Sequence[str], sources: dict[str, bytes], key: KeyConfig, layout: Layout
) -> set[str]:
    """Every module reached from `seeds` by imports inside the package, never crossing into
    another model's modules or op folder, nor into the trees the path never enters."""
    others = _other_models(sources, seeds, layout)
    used = _variants_used(seeds, sources, layout)
    others |= {p for p in sources if p not in seeds and (_tokens(p) & set(layout.variants)) - used}
    seen = set(seeds)
    todo = list(seeds)
    while todo:
        path = todo.pop()
        if path.endswith("/__init__.py") and path not in seeds:
            # A package's __init__ runs on import, but what it re-exports is only used where a
            # module names it (those imports are followed there): its edges are not the path.
            continue
        for target in _imports(path, sources.get(path, b""), sources, layout):
            if target in seen or target in others or any(_match(g, target) for g in layout.never):
                continue
            seen.add(target)
            todo.append(target)
    return seen


def _tokens(path: str) -> set[str]:
    return set(re.split(r"[/_.]", path.removeprefix("atom/")))


def _variants_used(seeds: Sequence[str], sources: dict[str, bytes], layout: Layout) -> set[str]:
    """The variants the model's own modules name, or import a module of directly."""
    out: set[str] = set()
    for seed in seeds:
        for path in (seed, *_imports(seed, sources.get(seed, b""), sources, layout)):
            out |= _tokens(path) & set(layout.variants)
    return out


def _other_models(sources: dict[str, bytes], seeds: Sequence[str], layout: Layout) -> set[str]:
    """Modules of other models: their model modules and their model-specific op folders."""
    mine = {_norm(PurePosixPath(s).stem) for s in seeds}
    stems = _model_stems(sources, layout)
    out = {p for p, s in stems.items() if p not in seeds}
    op_dirs = {
        p.removeprefix(layout.model_ops + "/").split("/", 1)[0]
        for p in sources
        if p.startswith(layout.model_ops + "/") and p.count("/") > 2
    }
    theirs = {d for d in op_dirs if _norm(d) in set(stems.values()) - mine}
    out |= {p for p in sources if any(p.startswith(f"{layout.model_ops}/{d}/") for d in theirs)}
    return out


def _imports(path: str, source: bytes, sources: dict[str, bytes], layout: Layout) -> set[str]:
    """The package modules `path` imports (absolute and relative imports; a module too large or
    not parseable imports nothing we can see)."""
    if len(source) > MAX_MODULE:
        return set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    here = PurePosixPath(path).parent.parts
    if PurePosixPath(path).name == "__init__.py":
        here = PurePosixPath(path).parent.parts
    names: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [tuple(a.name.split(".")) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = tuple((node.module or "").split(".")) if node.module else ()
            if node.level:
                base = here[: len(here) - node.level + 1] + base
            names.append(base)
            names += [base + (a.name,) for a in node.names]
    out = set()
    for parts in names:
        if not parts or parts[0] != layout.package:
            continue
        for candidate in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
            if candidate in sources:
                out.add(candidate)
    return out
