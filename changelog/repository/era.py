"""What one era of the benchmark repository is: the `Era` record every declaration fills in.

An era is a span of time in which the repository kept its files in one place and by one set of
rules. Its declaration (`changelog/repository/eras.py`) says:

- how it is detected: `markers`, repository paths (a `*` in the last part matches any name) of
  which at least one exists in a checkout of that era and in no other era's checkout;
- every path relpipe reads or writes (repository-relative POSIX paths, below);
- the master schema of its time (`master_fields`: fields its masters have beyond the schema
  `changelog/configs/schema.py` knows) and the changelog entry schema (`entry_schema`);
- the pr-link placeholder policy (`placeholders`: when its validator accepts `XXX` links);
- the files each pre-commit hook watches (`watched`, built from the paths);
- where a key's golden acceptance length comes from (`acceptance`);
- which of its own programs is the authority (`validator`, `generator`).

Standard library only (the commit hook reads it).
"""

from __future__ import annotations

from ...core.record import Record

CHANGELOG_NAME = "perf-changelog.yaml"
MASTER_SUFFIX = "-master.yaml"
RUNNERS_NAME = "runners.yaml"
THRESHOLDS_NAME = "thresholds.yaml"
GOLDEN_FOLDER = "golden_al_distribution"  # <model>_<method>.yaml: thinking_on/off -> K -> AL
MODELS_NAME = "MODELS.md"

# Where a key's golden acceptance length comes from (`Era.acceptance`, in order of precedence):
LAUNCH_FLAG = "launch-flag"  # a flag or variable in the key's launch script or master settings
RECIPE_FIELD = "recipe-field"  # a field of the key's srt-slurm recipe
HARNESS = "harness"  # the benchmark harness injects the golden curve's value itself

# The pr-link placeholder policy (`Era.placeholders`):
PLACEHOLDERS_ON_PULL_REQUESTS = "pull-requests"  # `XXX` links pass on a PR run, never on main

# The pre-commit hooks relpipe ships (`.pre-commit-hooks.yaml`), by id.
HOOK_GATE = "validate-perf-changelog"
HOOK_REVIEW = "relpipe-review"
HOOK_REQUIRED = "relpipe-changelog-required"
HOOKS = (HOOK_GATE, HOOK_REVIEW, HOOK_REQUIRED)


class Era(Record):
    """One era of the benchmark repository: repository-relative POSIX paths of everything
    relpipe reads or writes there, and the rules of that time."""

    name: str
    markers: tuple[str, ...]  # detection: one of these exists (see the module docstring)
    masters: str  # folder of *-master.yaml
    runners: str
    changelog: str
    thresholds: str
    golden: str  # golden AL folder (golden_al_distribution/)
    validator: str  # the repository's own validate_perf_changelog.py ("" when it has none)
    generator: str  # the repository's own sweep generator ("" when relpipe does not know one)
    models: str  # MODELS.md
    checklist: str
    waivers: str  # folder of <PR>.md
    codeowners: tuple[str, ...]  # first existing wins
    lock: str  # relpipe's images.lock.yaml
    agents: str  # AGENTS.md
    single_recipes: str  # srt-slurm recipes of single-node keys
    multi_recipes: str  # srt-slurm recipes of multinode keys (CONFIG_FILE=recipes/X)
    project: str = ""  # the folder the launch paths (benchmarks/, runners/) are under
    entry_schema: str = "2026-08"  # the changelog entry schema (changelog/entry/)
    master_fields: frozenset[str] = frozenset()  # master fields of its time beyond schema.py's
    placeholders: str = PLACEHOLDERS_ON_PULL_REQUESTS
    acceptance: tuple[str, ...] = (LAUNCH_FLAG, RECIPE_FIELD)
    # the program that injects the golden acceptance length when `acceptance` has HARNESS
    # (a path of the harness' own repository, for messages)
    harness_golden: str = ""
    # master fields this checkout adds to the era's schema (`[tool.relpipe] extra-fields`)
    extra_fields: tuple[str, ...] = ()

    def at(self, rel: str) -> str:
        """A path of the project (`benchmarks/...`, `runners/...`) from the checkout root."""
        return f"{self.project}/{rel}" if self.project else rel

    @property
    def benchmarks(self) -> str:
        """The folder of launch scripts and recipes."""
        return self.at("benchmarks")

    @property
    def runner_scripts(self) -> str:
        """The folder of runner launchers and srt-slurm hooks."""
        return self.at("runners")

    def is_master(self, path: str) -> bool:
        """`path` is a master config: a `*-master.yaml` directly in the masters folder."""
        folder, _, name = path.rpartition("/")
        return folder == self.masters and name.endswith(MASTER_SUFFIX)

    def may_launch(self, path: str) -> bool:
        """Whether a changed file can be on a key's launch path (anything but the changelog,
        Markdown, docs and `.github/`): a change of only such files and masters needs only
        the keys whose master block changed."""
        docs = (".github/", "docs/", self.at("docs/"), self.at(".github/"))
        return not (path == self.changelog or path.endswith(".md") or path.startswith(docs))

    def watched(self, hook: str) -> tuple[str, ...]:
        """What the pre-commit hook `hook` watches in this era: folders (ending in `/`) and
        files. `validate-perf-changelog` the changelog; `relpipe-changelog-required` every
        benchmark-affecting file and the changelog; `relpipe-review` those, MODELS.md and the
        waivers."""
        if hook == HOOK_GATE:
            return (self.changelog,)
        affecting = (
            f"{self.masters}/",
            f"{self.benchmarks}/",
            f"{self.runner_scripts}/",
            self.changelog,
        )
        if hook == HOOK_REQUIRED:
            return affecting
        if hook == HOOK_REVIEW:
            return (*affecting, self.models, f"{self.waivers}/")
        raise ValueError(f"unknown hook {hook!r}; known: {', '.join(HOOKS)}")
