"""A config key -> the files that launch it, in the era's paths: CONFIG_FILE recipes, `srt-recipe`
rows with or without `srt-recipe-dir`, single-node launch scripts, runner launchers, srt-slurm
cluster hooks, the agentic client. Pure functions shared by golden AL and the review.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..configs.schema import line_of, line_with, unknown_fields
from ..errors import ChangelogError
from .checkout import Checkout
from .detect import relative_inside
from .era import Era

_CONFIG_FILE = re.compile(r"CONFIG_FILE=([^\s\"':]+)(?::([^\s\"']+))?")


def config_file_recipes(era: Era, texts: Iterable[str]) -> list[tuple[str, str | None, str]]:
    """`CONFIG_FILE=recipes/X[:selector]` settings as (repository path, selector, the text):
    `recipes/X` is srt-slurm's name for the multinode recipes folder; other paths as written."""
    out = []
    for text in texts:
        m = _CONFIG_FILE.search(text)
        if m:
            named = m.group(1)
            path = (
                f"{era.multi_recipes}/{named[len('recipes/') :]}"
                if named.startswith("recipes/")
                else era.at(named)
            )
            out.append((path, m.group(2), text))
    return out


def srt_recipe(era: Era, cfg: Mapping[str, Any], reference: str) -> tuple[str, str | None]:
    """An `srt-recipe`/`eval-srt-recipe` row as (repository path, selector): relative to
    `<recipes>/<srt-recipe-dir>/` when the key has `srt-recipe-dir` (2026-10 schema 2), else a
    project path as written (`benchmarks/single_node/srt-slurm-recipes/...`)."""
    path, sep, selector = reference.partition(":")
    folder = cfg.get("srt-recipe-dir")
    if isinstance(folder, str) and folder:
        base = era.multi_recipes if cfg.get("multinode") is True else era.single_recipes
        full = f"{base}/{folder}/{path}"
    else:
        full = era.at(path)
    return posixpath.normpath(full), selector if sep else None


def outside(path: str) -> bool:
    """A repository-relative path that leaves the repository (absolute, or through `..`)."""
    return not relative_inside(path)


def script_candidates(
    era: Era, cfg: Mapping[str, Any], scenario: str, spec: str, hw: str
) -> list[str]:
    """The single-node launch scripts the runners try for a key, in order: `benchmarks/
    single_node/<agentic/|fixed_seq_len/><prefix>_<precision>_<hw>_<framework><_mtp>.sh`, then
    `..._<hw><_trt><_mtp>.sh` (runners/launch_mi355x-amds.sh, launch_b200-dgxc.sh)."""
    prefix, precision = str(cfg.get("model-prefix", "")), str(cfg.get("precision", ""))
    framework = str(cfg.get("framework", ""))
    subdir = "agentic/" if scenario == "agentic-coding" else "fixed_seq_len/"
    mtp = "_mtp" if spec == "mtp" else ""
    base = era.at(f"benchmarks/single_node/{subdir}{prefix}_{precision}_{hw}")
    trt = "_trt" if framework == "trt" else ""
    return list(dict.fromkeys([f"{base}_{framework}{mtp}.sh", f"{base}{trt}{mtp}.sh"]))


def runner_hardware(runner: str) -> str:
    """The hardware a runner label names (`cluster:mi355x-amds` -> mi355x)."""
    return runner.removeprefix("cluster:").split("-")[0].split("_")[0]


def cluster_hook(era: Era, runner: str) -> str | None:
    """The srt-slurm setup hook of a `cluster:` runner (2026-10)."""
    if not runner.startswith("cluster:"):
        return None
    return era.at(f"runners/srt-slurm/hooks/{runner.removeprefix('cluster:')}/setup.sh")


def agentic_client(era: Era) -> str:
    """The srt-slurm agentic benchmark client (2026-10's AgentX wrapper)."""
    return era.at("benchmarks/srt_agentic.sh")


def check_key(
    checkout: Checkout, master: Path, key: str, cfg: Mapping[str, Any], lines: list[str]
) -> list[str]:
    """Refuse a key relpipe cannot read faithfully, in one line naming the file and line: an
    `srt-recipe` row that leaves the repository or names a missing file (2026-10's validator
    rejects both too). A master field no known schema has is not refused (the repository's own
    rules are the authority on its schema): it comes back as a WARN finding at `file:line`."""
    rel = master.relative_to(checkout.root).as_posix() if master.is_absolute() else str(master)
    start = line_of(lines, 1, key)
    warnings = [
        f"{rel}:{line_of(lines, start, name)}: unknown master field {name!r}"
        f"{f' in {place}' if place else ''} of {key}; relpipe does not know what it means "
        "(run `relpipe doctor`, or list it in .relpipe.toml [tool.relpipe] extra-fields)"
        for place, name in unknown_fields(key, cfg)
        if name not in checkout.era.extra_fields and name not in checkout.era.master_fields
    ]
    for ref in _srt_refs(cfg):
        path, _ = srt_recipe(checkout.era, cfg, ref)
        where = f"{rel}:{line_with(lines, start, ref)}"
        if outside(path):
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key} leaves the repository")
        full = checkout.root / path
        if not full.resolve().is_relative_to(checkout.root.resolve()):
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key} links out of the repository")
        if not full.is_file():
            raise ChangelogError(f"{where}: srt-recipe {ref} of {key}: {path} does not exist")
    return warnings


def _srt_refs(cfg: Mapping[str, Any]) -> list[str]:
    scenarios = cfg.get("scenarios")
    out = []
    for arms in scenarios.values() if isinstance(scenarios, Mapping) else []:
        for arm in arms if isinstance(arms, list) else []:
            space = arm.get("search-space") if isinstance(arm, Mapping) else None
            for item in space if isinstance(space, list) else []:
                for name in ("srt-recipe", "eval-srt-recipe"):
                    ref = item.get(name) if isinstance(item, Mapping) else None
                    if isinstance(ref, str) and ref:
                        out.append(ref.partition(":")[0])
    return list(dict.fromkeys(out))


def cluster_hooks(era: Era) -> str:
    """The folder of srt-slurm cluster hooks (`<folder><cluster>/setup.sh`), with its `/`."""
    return era.at("runners/srt-slurm/hooks/")


def runner_launchers(era: Era, label: str) -> str:
    """The path prefix of the launchers of a runner label GitHub matches by prefix
    (`gb300-nv` runs on `gb300-nv_0`: `runners/launch_gb300-nv*.sh`)."""
    return era.at(f"runners/launch_{label}")


def runner_launcher(era: Era, node: str) -> str:
    """The launcher of one runner node (`mi355x-amds_0` -> `runners/launch_mi355x-amds.sh`)."""
    return era.at(f"runners/launch_{node.split('_')[0]}.sh")


def multinode_wrapper(era: Era, cfg: Mapping[str, Any], scenario: str, hw: str) -> str:
    """The multinode wrapper a runner launcher runs for a key: `benchmarks/multi_node[/agentic]/
    <prefix>_<precision>_<hw>_<framework>.sh` (the agentic recipe lives under agentic/)."""
    subdir = "agentic/" if scenario == "agentic-coding" else ""
    prefix, precision = cfg.get("model-prefix", ""), cfg.get("precision", "")
    return era.at(
        f"benchmarks/multi_node/{subdir}{prefix}_{precision}_{hw}_{cfg.get('framework', '')}.sh"
    )


def recipe_setup_script(era: Era, name: str) -> str:
    """A recipe's `setup_script: NAME` (srt-slurm's configs/ beside the multinode recipes)."""
    return f"{era.multi_recipes}/configs/{name}"


def project_script(era: Era, word: str) -> str | None:
    """A script a launch file names from the project root (`benchmarks/...`, `runners/...`),
    as a repository path; None when `word` is not such a path."""
    if word.startswith(("benchmarks/", "runners/")):
        return era.at(word)
    return None


def multinode_agentic_client(era: Era) -> str:
    """The multinode agentic benchmark client."""
    return era.at("benchmarks/multi_node/agentic_srt.sh")


def recipe_name(era: Era, path: str) -> str:
    """A recipe's path below its recipes folder (what masters and CONFIG_FILE name it by)."""
    for folder in (era.single_recipes, era.multi_recipes):
        if path.startswith(f"{folder}/"):
            return path[len(folder) + 1 :]
    return path
