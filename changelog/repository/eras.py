"""The eras of InferenceX (SemiAnalysisAI/InferenceX), one declaration each, and their registry.

| era           | masters                        | changelog                          | until      |
|---------------|--------------------------------|------------------------------------|------------|
| `pre-2026-07` | `.github/configs/`             | `perf-changelog.yaml`              | 2026-07-01 |
| `2026-08`     | `configs/`                     | `perf-changelog.yaml`              | ~2026-09   |
| `2026-10`     | `inferencex-e2e/configs/`      | `inferencex-e2e/perf-changelog.yaml` | today    |

Facts checked against the real trees in `../shared/data/inferencex/` (`eras/2026-01-15`,
`eras/2026-03-30`, `eras/2026-07-01`, `tree/`, `tree-2026-10/`) by
tests/changelog/test_repository.py.
Adding an era is one declaration here (appended to `ERAS`) plus a fixture; nothing else in relpipe
names a path of the repository. Standard library only (the commit hook reads it).
"""

from __future__ import annotations

from ...core.record import replace
from .era import (
    CHANGELOG_NAME,
    GOLDEN_FOLDER,
    HARNESS,
    LAUNCH_FLAG,
    MASTER_SUFFIX,
    MODELS_NAME,
    RECIPE_FIELD,
    RUNNERS_NAME,
    THRESHOLDS_NAME,
    Era,
)

_CODEOWNERS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
_E2E = "inferencex-e2e"

# 2026-07-02 to about 2026-09 (`tree/`, 2026-08-22): masters at the root's configs/.
ERA_2026_08 = Era(
    name="2026-08",
    markers=(f"configs/*{MASTER_SUFFIX}",),
    changelog=CHANGELOG_NAME,
    masters="configs",
    runners=f"configs/{RUNNERS_NAME}",
    thresholds=f"utils/evals/{THRESHOLDS_NAME}",
    golden=GOLDEN_FOLDER,
    validator="utils/validate_perf_changelog.py",
    generator="utils/matrix_logic/generate_sweep_configs.py",
    models=MODELS_NAME,
    checklist="docs/PR_REVIEW_CHECKLIST.md",
    waivers="docs/waiver",
    codeowners=_CODEOWNERS,
    lock="images.lock.yaml",
    agents="AGENTS.md",
    single_recipes="benchmarks/single_node/srt-slurm-recipes",
    multi_recipes="benchmarks/multi_node/srt-slurm-recipes",
    entry_schema="2026-08",
    acceptance=(LAUNCH_FLAG, RECIPE_FIELD),
)

# Until 2026-07-01 (`eras/2026-01-15`, `eras/2026-03-30`, `eras/2026-07-01`): masters and runners
# under .github/configs/; the rest as 2026-08, where it existed (the two early trees have no
# golden_al_distribution/, docs/, MODELS.md nor validator: checks of those are N/A). Its masters
# have fields later removed: top-level `seq-len-configs` blocks (before `scenarios`), agentic
# `duration` and search-space `offloading`.
PRE_2026_07 = replace(
    ERA_2026_08,
    name="pre-2026-07",
    markers=(f".github/configs/*{MASTER_SUFFIX}",),
    masters=".github/configs",
    runners=f".github/configs/{RUNNERS_NAME}",
    master_fields=frozenset({"seq-len-configs", "duration", "offloading"}),
)

# From about 2026-09 (`tree-2026-10/`, the base of PR #3750): the benchmark project under
# inferencex-e2e/ with its Python package infx/; srt-slurm recipe rows (`srt-recipe`,
# `srt-recipe-dir`); the srt-slurm harness injects the golden acceptance length of a
# spec-decode key itself (`--set ...spec-decode-acceptance-length=<golden>`, from its
# infx/srt_slurm/synthetic_acceptance.py; the repository's changelog says no recipe sets it).
ERA_2026_10 = Era(
    name="2026-10",
    markers=(f"{_E2E}/configs/*{MASTER_SUFFIX}", f"{_E2E}/{CHANGELOG_NAME}"),
    project=_E2E,
    changelog=f"{_E2E}/{CHANGELOG_NAME}",
    masters=f"{_E2E}/configs",
    runners=f"{_E2E}/configs/{RUNNERS_NAME}",
    thresholds=f"{_E2E}/infx/evals/{THRESHOLDS_NAME}",
    golden=f"{_E2E}/infx/{GOLDEN_FOLDER}",
    validator=f"{_E2E}/infx/workflows/validate_perf_changelog.py",
    generator=f"{_E2E}/infx/matrix/generate.py",
    models=f"{_E2E}/docs/{MODELS_NAME}",
    checklist=f"{_E2E}/docs/PR_REVIEW_CHECKLIST.md",
    waivers=f"{_E2E}/docs/waiver",
    codeowners=(f"{_E2E}/.github/CODEOWNERS", *_CODEOWNERS),
    lock=f"{_E2E}/images.lock.yaml",
    agents="AGENTS.md",
    single_recipes=f"{_E2E}/benchmarks/single_node/srt-slurm-recipes",
    multi_recipes=f"{_E2E}/benchmarks/multi_node/srt-slurm-recipes",
    entry_schema="2026-10",
    acceptance=(HARNESS, LAUNCH_FLAG, RECIPE_FIELD),
    harness_golden="srt-slurm: infx/srt_slurm/synthetic_acceptance.py",
)

# The registry: every era relpipe knows, newest first (the order of messages).
ERAS: tuple[Era, ...] = (ERA_2026_10, ERA_2026_08, PRE_2026_07)
# The era of a checkout with a changelog at the root and no masters yet (a new repository).
DEFAULT = ERA_2026_08


def by_name(name: str, eras: tuple[Era, ...] = ERAS) -> Era | None:
    return next((era for era in eras if era.name == name), None)


def hook_files(hook: str, eras: tuple[Era, ...] = ERAS) -> str:
    """The `files:` pattern of the pre-commit hook `hook` in `.pre-commit-hooks.yaml`: every
    era's watched folders and files (`Era.watched`), so the hook fires in every era."""
    parts: list[str] = []
    for era in eras:
        for path in era.watched(hook):
            escaped = path.replace(".", "\\.")
            parts.append(escaped if path.endswith("/") else f"{escaped}$")
    return "^(" + "|".join(dict.fromkeys(parts)) + ")"
