"""The qualification plan: every input of a run, fixed before any stage runs (run.json).

`make_plan` pins the image under test and its baseline (digests re-hashed by `images.registry`),
reads the config key and thresholds of the benchmark repository, and fixes every input of every
later stage; the run id is the hash of that plan (`Plan.run_id`). The stages that run it are in
`pipeline.stages`; the containers they run in, in `pipeline.containers`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsoncodec
from ..core.pin import Pin
from ..core.reference import parse
from ..core.status import PASS
from ..images import lock
from ..images.archive import pin_or_archived
from ..images.registry import Pinned, RegistryClient
from ..validate import golden_al
from ..validate.errors import ValidateError
from .errors import PipelineError
from .outputs import ConfigScope, Resolved
from .runrecord import RunRecord, digest_of, relpipe_version
from .workspace import Point, Workspace

DEFAULT_SUITES = ("decode-parity",)
DEFAULT_MAX_BATCH = 4
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True, kw_only=True)
class Options:
    """How a qualification runs (the CLI's options); part of the plan, so of the run id."""

    suites: tuple[str, ...] = DEFAULT_SUITES
    max_batch: int = DEFAULT_MAX_BATCH
    timeout_s: float = DEFAULT_TIMEOUT_S
    gpu: str = "auto"
    dataset: str | None = None  # GSM8K-format JSONL on the host, mounted into the container
    rules: str | None = None  # precision rules file
    max_new: int = 8  # tokens decoded per prompt by smoke and decode-parity
    kv_dtypes: tuple[str, ...] = ("fp32", "bf16", "fp8")
    prompt_bytes: int = 0  # truncate the fixed prompts (0: whole); small values keep CPU runs short
    n_shot: int = 5  # gsm8k few-shot examples (taken from the head of the dataset)
    eval_limit: int = 0  # gsm8k: score at most N problems (0: all)
    # Fixed at plan time, so that shards on other hosts check the very same dataset bytes.
    dataset_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Every input of a qualification, fixed before any stage runs (run.json)."""

    image: Resolved
    baseline: Resolved | None
    config: ConfigScope | None
    thresholds: Mapping[str, Any]  # utils/evals/thresholds.yaml as read (InferenceX's shape)
    golden: Mapping[str, str | None] | None  # tree hashes of golden_al_distribution/ and configs/
    options: Options
    workspace: str | None

    def to_json(self) -> dict[str, Any]:
        """run.json: the fields but the workspace (where the plan runs is not what it is) and
        the relpipe version, an input of the run id."""
        fields = jsoncodec.fields_to_json(self, exclude=("workspace",))
        return {"kind": "qualify", **fields, "relpipe": relpipe_version()}

    @property
    def run_id(self) -> str:
        return digest_of(self.to_json())[:32]

    @classmethod
    def from_json(
        cls, data: Any, workspace: str | None = None, *, where: str = "qualification plan"
    ) -> Plan:
        if not isinstance(data, Mapping) or data.get("kind") != "qualify":
            raise PipelineError("not a qualification plan (run.json of `relpipe qualify --plan`)")
        try:
            return jsoncodec.fields_from_json(cls, {**data, "workspace": workspace}, where=where)
        except jsoncodec.RecordError as exc:
            raise PipelineError(
                f"malformed qualification plan ({exc.detail}); re-run `relpipe qualify --plan`"
            ) from None

    @property
    def points(self) -> tuple[Point, ...]:
        if self.config:
            return self.config.points
        return (Point("default", 1, 1),)

    @property
    def title(self) -> str:
        key = f" for {self.config.key}" if self.config else ""
        return f"qualify {self.image.ref}{key}"


def resolved(pin: Pinned) -> Resolved:
    """The resolve result of one image; `verified` because `RegistryClient.pin` re-hashes every
    byte.
    """
    return Resolved(
        ref=pin.ref,
        pinned=str(pin.reference),
        digest=pin.digest,
        verified=True,
        media_type=pin.media_type,
        platform=pin.platform,
        platform_digest=pin.platform_digest,
        created=pin.created,
    )


def make_plan(
    image: str,
    baseline: str | None,
    config_key: str | None,
    ws: Workspace | None,
    options: Options,
    client: RegistryClient,
    pinned: Mapping[str, Pin] | None = None,
) -> Plan:
    """Pin the image (and the baseline: `pinned` = the config key's image, locked digest first)."""
    config = None
    thresholds: Mapping[str, Any] = {}
    golden = None
    if config_key:
        if ws is None:
            raise PipelineError("--config-key needs a benchmark repository (--repo PATH)")
        ck = ws.config_key(config_key, options.max_batch)
        config = ConfigScope(
            status=PASS,
            key=ck.key,
            master=ck.master,
            image=ck.image,
            framework=ck.framework,
            model_prefix=ck.model_prefix,
            points=ck.points,
            warnings=ck.warnings,
        )
    if ws is not None:
        thresholds = ws.thresholds()
        golden = {
            "files": ws.tree_hash(ws.era.golden),
            "key": config.key if config else None,
            # everything C9 reads for the key (masters, its recipes and launch scripts)
            "sources": golden_inputs(ws, config.key) if config else None,
        }
    if baseline == "pinned":
        if config is None:
            raise PipelineError(
                "--baseline pinned needs --config-key K (the baseline is K's pinned image)"
            )
        baseline = locked_ref(pinned or {}, config.image)
    # A pin upstream has deleted is taken from the archive its pin names (images.archive).
    pins = [pin_or_archived(client, image, pinned)]
    pins += [pin_or_archived(client, baseline, pinned)] if baseline else []
    return Plan(
        image=resolved(pins[0]),
        baseline=resolved(pins[1]) if baseline else None,
        config=config,
        thresholds=thresholds,
        golden=golden,
        options=options,
        workspace=str(ws.root) if ws else None,
    )


def locked_ref(pinned: Mapping[str, Pin], ref: str) -> str:
    """`ref` at the digest relpipe pinned for it (what was benchmarked), else `ref` itself."""
    entry = lock.lookup(pinned, ref)
    if entry is None:
        return ref
    # Pinning `tag@digest` re-hashes the pinned digest: a tag that moved does not move the baseline.
    return str(parse(ref).with_digest(entry.digest))


def golden_inputs(ws: Workspace, key: str) -> str | None:
    """Hash of what C9 reads for `key` (None without golden files: C9 is then N/A)."""

    if not (ws.root / ws.era.golden).is_dir():
        return None
    try:
        return golden_al.inputs_digest(ws.root, [key])
    except ValidateError as exc:
        raise PipelineError(str(exc)) from exc


def file_sha256(path: str | None) -> str | None:

    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise PipelineError(f"cannot read --dataset {path}: {exc.strerror}") from exc


def open_record(state: Path, plan: Plan, out: Path | None = None) -> RunRecord:
    record = RunRecord(out or state / "runs" / plan.run_id, cache=state / "cache" / "stages")
    record.write_inputs(plan.to_json())
    return record
