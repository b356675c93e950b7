"""Fixture nightlies laid out as the upstream vLLM and SGLang ROCm images (docs/fixtures.md).

The base and vendor layers are the ATOM fixtures' (`images.build`); the engine layer is the
engine's own layout instead of `/app/ATOM`:

* vLLM (`vllm/vllm-openai-rocm`): the source checkout `/vllm-workspace` (work tree + `.git`) and a
  built (not editable) `vllm` distribution whose version is setuptools-scm's with vLLM's ROCm
  suffix (`0.27.2.dev2+g<sha9>.rocm720`) and whose `vllm/_version.py` records `commit_id`;
* SGLang (`lmsysorg/sglang-rocm`): the checkout `/sgl-workspace/sglang` and an editable install
  of its `python/` folder (PEP 610 `direct_url.json`), versioned by `python/sglang/version.py`.

Each engine has one history of real git commits at paths of the real repositories (tests check
them against `../shared/data/engines/*-paths.txt`); a nightly holds its first `commits` of them,
so two nightlies of one family span a real commit range for the precision diff. Tags are given
by the caller (the real tag names of the family), `created` likewise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import engines
from . import fixture_repo as fx
from .build import (
    FixtureBuilder,
    FixtureImage,
    RepoBuild,
    _dist_info,
    _Planned,
    _site,
    build_repo,
)
from .errors import BuildError
from .layers import Entry


@dataclass(frozen=True, kw_only=True)
class EngineNightly:
    """One fixture nightly of an engine family: its real tag, its `created`, its history prefix."""

    tag: str
    created: str  # RFC 3339 UTC: the image config's `created`
    commits: int  # how many commits of the engine's history the image's checkout holds


def _bot(name: str) -> tuple[str, str]:
    return (f"{name} Bot", f"{name.lower()}-bot@example.invalid")


def _norm(accumulate: str) -> str:
    return (
        '"""Custom normalization layers."""\n\nimport torch\n\n\n'
        "def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:\n"
        f"    h = x.to({accumulate})\n"
        "    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
        "    return (h * weight).to(x.dtype)\n"
    )


def _readme(title: str, extra: str = "") -> str:
    return f"# {title}\n\nHow to run the benchmarks.\n{extra}"


_VLLM_NORM = "vllm/model_executor/layers/layernorm.py"
_SGLANG_NORM = "python/sglang/srt/layers/layernorm.py"
_SGLANG_VERSION = "python/sglang/version.py"  # sglang.json's fixtures.version-file

# (history, the real paths its commits touch); tests check the paths against the corpus listings.
HISTORIES: dict[str, fx.History] = {
    "vllm": fx.History(
        name="vllm",
        tag="v0.27.1",
        tag_index=0,
        next_version="0.27.2",
        commits=(
            fx.CommitSpec(
                subject="[Release] v0.27.1",
                changes=(
                    (_VLLM_NORM, _norm("x.dtype")),
                    ("benchmarks/README.md", _readme("Benchmarking vLLM")),
                    ("setup.py", "from setuptools import setup\n\nsetup()\n"),
                ),
                author=_bot("vLLM"),
            ),
            fx.CommitSpec(
                subject="[Build] Pin setuptools for ROCm wheels (#30101)",
                changes=(("setup.py", "from setuptools import setup\n\nsetup(name='vllm')\n"),),
                author=_bot("vLLM"),
            ),
            fx.CommitSpec(
                subject="[ROCm][Kernel] Accumulate RMSNorm in float32 (#30144)",
                changes=((_VLLM_NORM, _norm("torch.float32")),),
                author=_bot("vLLM"),
            ),
            fx.CommitSpec(
                subject="[Doc] Explain the ROCm benchmark flags (#30160)",
                changes=(
                    (
                        "benchmarks/README.md",
                        _readme("Benchmarking vLLM", "\nROCm: see docker/.\n"),
                    ),
                ),
                author=_bot("vLLM"),
            ),
        ),
    ),
    "sglang": fx.History(
        name="sglang",
        tag="v0.5.16",
        tag_index=0,
        next_version="0.5.17",
        commits=(
            fx.CommitSpec(
                subject="Release v0.5.16",
                changes=(
                    (_SGLANG_NORM, _norm("x.dtype")),
                    (_SGLANG_VERSION, '__version__ = "0.5.16"\n'),
                    ("docker/README.md", _readme("SGLang images")),
                ),
                author=_bot("SGLang"),
            ),
            fx.CommitSpec(
                subject="[Docker] Document the ROCm 7.2 images (#9101)",
                changes=(("docker/README.md", _readme("SGLang images", "\nROCm 7.2: rocm720.\n")),),
                author=_bot("SGLang"),
            ),
            fx.CommitSpec(
                subject="[AMD] Accumulate RMSNorm in float32 (#9144)",
                changes=((_SGLANG_NORM, _norm("torch.float32")),),
                author=_bot("SGLang"),
            ),
            fx.CommitSpec(
                subject="chore: bump version to 0.5.17 (#9160)",
                changes=((_SGLANG_VERSION, '__version__ = "0.5.17"\n'),),
                author=_bot("SGLang"),
            ),
        ),
    ),
}


def engine_paths(engine: str) -> list[str]:
    """Every path the engine's fixture history writes (tests check them against the corpus)."""
    return sorted({p for c in HISTORIES[engine].commits for p, _ in c.changes})


def _file_version(engine: str, path: str, commits: Sequence[fx.CommitSpec]) -> str:
    """The `__version__` the last of `commits` to write `path` gives it."""
    text = next((t for c in reversed(commits) for p, t in c.changes if p == path), None)
    m = re.search(r'__version__ = "([^"]+)"', text or "")
    if not m:
        raise BuildError(f"the {engine} fixture's {path} names no version")
    return m.group(1)


def engine_build(
    engine: str, site: str, commits: int, history: fx.History | None = None
) -> tuple[RepoBuild, list[Entry]]:
    """(the checkout, the engine layer's entries) of `engine` at its first `commits` commits,
    laid out as its declaration's `fixtures` say: a `built` distribution (vLLM: the version with
    its local suffix, `<dist>/_version.py` recording the commit) or an `editable` install of the
    checkout's `python/` folder versioned by its version file (SGLang). `history` is the engine's
    fixture history (default: its HISTORIES entry; an engine declared elsewhere brings its own)."""
    history = history or HISTORIES[engine]
    if not history.tag_index < commits <= len(history.commits):
        raise BuildError(
            f"{engine}: commits must be in {history.tag_index + 1}..{len(history.commits)}"
        )
    declared = engines.engine(engine)
    layout, dist = declared.fixtures, declared.distribution
    chosen = history.commits[:commits]
    repo = build_repo(history, chosen, layout.checkout)
    if layout.install == "built":
        version = repo.version + (f".{layout.local_suffix}" if layout.local_suffix else "")
        module = (
            f"__version__ = version = {version!r}\n"
            f"__commit_id__ = commit_id = 'g{repo.commit[:9]}'\n"
        )
        entries = [
            *repo.entries,
            *_dist_info(site, dist, version, None, dist),
            Entry(path=f"{site}/{dist}/_version.py", kind="file", data=module.encode()),
        ]
    else:
        if layout.version_file is None:
            raise BuildError(f"{engine}: an editable fixture needs fixtures.version-file")
        version = _file_version(engine, layout.version_file, chosen)
        where = f"/{layout.checkout}/python"
        entries = [*repo.entries, *_dist_info(site, dist, version, where, dist)]
    return RepoBuild(repo.entries, repo.commit, version), entries


class EngineFixtureBuilder(FixtureBuilder):
    """FixtureBuilder whose nightlies carry a declared engine's layout (vLLM, SGLang) under the
    family's real tags."""

    def __init__(
        self,
        engine: str,
        nightlies: Sequence[EngineNightly],
        cache_dir: Path | None = None,
        history: fx.History | None = None,
    ) -> None:
        if engine not in HISTORIES and history is None:
            raise BuildError(f"unknown engine {engine!r}; choose one of {', '.join(HISTORIES)}")
        super().__init__(cache_dir)
        self.engine = engine
        self.nightlies = tuple(nightlies)
        self.history = history

    def plan(self, count: int, variant: str) -> tuple[list[_Planned], RepoBuild]:
        base, vendor, aiter = self._common()
        planned = []
        for index, nightly in enumerate(self.nightlies):
            site = _site(self._py)
            repo, entries = engine_build(self.engine, site, nightly.commits, self.history)
            planned.append(
                self._nightly(
                    index,
                    nightly.tag,
                    nightly.created,
                    "good",
                    base,
                    vendor,
                    repo,
                    engine=self.engine,
                    entries=entries,
                )
            )
        return planned, aiter


def build_engine_fixtures(
    registry: str,
    engine: str,
    nightlies: Sequence[EngineNightly],
    cache_dir: Path | None = None,
    repository: str | None = None,
    history: fx.History | None = None,
) -> list[FixtureImage]:
    """Build and push `nightlies` of a declared `engine` ("vllm", "sglang", or one declared
    elsewhere with its own `history`) to `registry/repository` (default: its declaration's
    fixture repository, as a loopback mirror serves it)."""
    builder = EngineFixtureBuilder(engine, nightlies, cache_dir=cache_dir, history=history)
    canonical = engines.engine(engine).fixtures.repository
    return builder.build(registry, repository or canonical, len(nightlies), "good")
