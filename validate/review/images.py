"""upstream-images: vLLM and SGLang entries run the upstream projects' images.

docs/PR_REVIEW_CHECKLIST.md: "the respective vLLM submission made using upstream
https://hub.docker.com/u/vllm docker repo, upstream SGLang https://hub.docker.com/u/lmsysorg
docker repo. The only exceptions are for new hardware, such as MI455X UALoE72, Vera Rubin NVL72,
Rubin NVL8, etc., and for new model architectures". So a key with `framework: vllm` must pin an
image under `vllm/`, `framework: sglang` one under `lmsysorg/` (each engine declaration's
`upstream-images`; `#` written for `/` counts as
`/`; a digest pin is fine). Established hardware (the review bot's list) has no exception; new
hardware (`Options.new_hardware`, configurable) is an exception, stated in the evidence; other
hardware is a WARN. The new-architecture exception needs a person: it is a FAIL that names it.
"""

from __future__ import annotations

from ...core import engines
from ...core.check import Evidence, Judgement, judged
from ...core.reference import familiar, split
from ...core.status import FAIL, NA, PASS, WARN
from .context import Review, plural
from .scope import _line_of


def upstream() -> dict[str, tuple[str, ...]]:
    """framework -> the repository prefixes its keys must pin: each engine declaration's
    `upstream-images` (vLLM's `vllm/`, SGLang's `lmsysorg/`; ATOM declares none)."""
    return {e.name: e.upstream_images for e in engines.declarations() if e.upstream_images}


def repository(image: str) -> str:
    """`docker.io/vllm/vllm-openai:tag@sha256:...` -> `vllm/vllm-openai` (`#` read as `/`)."""
    return familiar(split(image.replace("#", "/")).name).lower()


def check_images(review: Review) -> Judgement:
    prefixes = upstream()
    keys = [s for s in review.scopes if s.framework in prefixes]
    if not review.scopes:
        return judged(NA, "no config key in scope")
    if not keys:
        return judged(NA, "no vLLM or SGLang config key in scope")
    opts = review.options
    rows: list[Evidence] = []
    fails: list[str] = []
    warns: list[str] = []
    for scope in keys:
        image = str(scope.config.get("image", ""))
        line = _line_of(review.masters, scope.key, "image:")
        repo = repository(image)
        hw = str(scope.config.get("runner", "")).removeprefix("cluster:").split("-")[0].lower()
        where = Evidence.at(scope.master, line, f"{scope.key}: {image} ({scope.framework}, {hw})")
        if repo.startswith(prefixes[scope.framework]):
            continue
        rows.append(where)
        if any(hw.startswith(h) for h in opts.new_hardware):
            rows.append(Evidence(scope.key, f"exception: {hw} is new hardware"))
        elif hw in opts.established_hardware:
            fails.append(f"{scope.key} runs {repo}")
        else:
            warns.append(f"{scope.key} runs {repo} on {hw} (not a known SKU)")
    if fails:
        return judged(
            FAIL,
            f"not an upstream image on established hardware: {fails[0]}"
            + (f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""),
            rows,
        )
    if warns:
        return judged(WARN, warns[0], rows)
    return judged(PASS, f"{plural(len(keys), 'vLLM/SGLang key')} pin upstream images", rows)
