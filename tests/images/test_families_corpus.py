"""The engine-declared tag families against the real world: every ATOM, vLLM and SGLang image of
the masters of all five InferenceX trees (2026-01-15, 2026-03-30, 2026-07-01, 2026-08 `tree/`,
2026-10) and every real tag of `engines/rocm-image-tags.tsv` is a build of some family or in one
of its engine's `never` classes (floating, branch, variant, CUDA platform, hand-named custom),
never unknown; and the families issue 32 named (rocm/sgl-dev, rocm/vllm-dev, ATOM's GPU-suffixed
releases and dated builds) select their newest by the group a user names (GPU, ROCm version)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus import image_tags, inferencex_dir
from packaging.version import Version

from relpipe.core.reference import parse
from relpipe.images.nightly import PatternError, classify, matching, newest

TREES = ("eras/2026-01-15", "eras/2026-03-30", "eras/2026-07-01", "tree", "tree-2026-10")
IMAGE = re.compile(r"^\s*image:\s*['\"]?([^'\"\s#]+)", re.M)
# The one engine image of the masters whose repository no engine declares: llm-d's vLLM build.
UNDECLARED = {"quay.io/rh-ee-imarkov/llm-d-nokube-vllm:vllm0.26"}


def _master_images(tree: Path) -> Iterator[str]:
    for master in sorted(tree.rglob("*master*.yaml")):
        yield from IMAGE.findall(master.read_text(encoding="utf-8"))


def _engine_images() -> dict[str, set[str]]:
    root = inferencex_dir()
    found: dict[str, set[str]] = {}
    for tree in TREES:
        images = {i for i in _master_images(root / tree) if re.search(r"atom|vllm|sgl|lmsys", i)}
        assert images, f"{tree}: no engine image found in its masters"
        found[tree] = images
    return found


def _classes(images: set[str]) -> dict[str, tuple[str, str | None]]:
    out = {}
    for image in images:
        ref = parse(image)
        repository = (
            ref.repository if ref.registry == "docker.io" else f"{ref.registry}/{ref.repository}"
        )
        kind = classify(repository, ref.tag or "")
        out[image] = (kind.kind, kind.family)
    return out


@pytest.fixture(scope="module")
def master_classes() -> dict[str, dict[str, tuple[str, str | None]]]:
    return {tree: _classes(images) for tree, images in _engine_images().items()}


@pytest.mark.parametrize("tree", TREES)
def test_every_engine_image_of_the_masters_is_a_family_or_classified(
    master_classes: dict[str, dict[str, tuple[str, str | None]]], tree: str
) -> None:
    unknown = {
        i.split("@", 1)[0] for i, (kind, _) in master_classes[tree].items() if kind == "unknown"
    }
    assert unknown <= UNDECLARED, f"{tree}: no family or never-class for {sorted(unknown)}"


def test_the_families_issue_32_names_are_recognised_in_the_masters(
    master_classes: dict[str, dict[str, tuple[str, str | None]]],
) -> None:
    every = {i: c for classes in master_classes.values() for i, c in classes.items()}
    by_repo: dict[str, set[tuple[str, str | None]]] = {}
    for image, cls in every.items():
        by_repo.setdefault(image.split(":", 1)[0], set()).add(cls)
    # every rocm/sgl-dev and rocm/vllm-dev image InferenceX ran is a build of a family
    assert by_repo["rocm/sgl-dev"] == {
        ("family", "sgl-dev"),
        ("family", "sgl-dev-mori"),
        ("family", "sgl-dev-dsv4"),
    }
    assert by_repo["rocm/vllm-dev"] == {("family", "vllm-dev-mori")}
    gpu = "rocm/atom:rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1-MI350x"
    dated = "rocm/atom:rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511"
    assert every[gpu] == ("family", "atom-release-gpu")
    assert every[dated] == ("family", "atom-dated")
    assert every["rocm/atom-dev:nightly_202607011530"] == ("family", "atom")
    # CUDA images are the platform class, hand-named builds custom: reported, never chosen
    assert every["vllm/vllm-openai:v0.25.0"] == ("platform", None)
    assert every["lmsysorg/sglang:v0.5.12-cu130"] == ("platform", None)
    assert every["rocm/atom-dev:MiniMax-M3-20260630"] == ("custom", None)
    assert every["vllm/vllm-openai-rocm:minimax-m3"] == ("custom", None)


# tag_class of the table -> what every tag of that class must be
EXPECTED = {
    "floating": {("floating", None)},
    "nightly_<YYYYMMDDHHMM>-<branch>": {("branch", None)},
    "nightly_<YYYYMMDDHHMM>": {("family", "atom")},
    "nightly-<sha40>": {("family", "vllm")},
    "nightly-<shortsha>": {("family", "vllm")},
    "nightly-rocm<NNN>-<sha>": {("family", "vllm-rocm")},
    "nightly-<sha40>-<suffix>": {("variant", None)},
    "rocm<NNN>-mi3Xx-<sha7>-<YYYYMMDD>-<variant>": {("family", "sgl-dev-dsv4")},
}


def test_every_real_tag_is_a_family_or_classified() -> None:
    rows = image_tags()
    assert len(rows) == 394  # SOURCE.md says 395 tags; the table has 394 rows
    seen: dict[str, set[tuple[str, str | None]]] = {}
    for row in rows:
        got = classify(row["repository"], row["tag"])
        assert got.kind != "unknown", f"{row['repository']}:{row['tag']} ({row['tag_class']})"
        seen.setdefault(row["tag_class"], set()).add((got.kind, got.family))
    for tag_class, expected in EXPECTED.items():
        assert seen[tag_class] == expected, tag_class
    # a suffix after a dated SGLang build or a MoRI day is a variant, never the line
    sgl_dated = [r["tag"] for r in rows if r["repository"] == "rocm/sgl-dev" and r["tag"][0] == "v"]
    for tag in sgl_dated:
        want = "family" if re.fullmatch(r"v[^-]+-rocm\d+-mi3[05]x-\d{8}", tag) else "variant"
        assert classify("rocm/sgl-dev", tag).kind == want, tag


def _tags(repository: str) -> list[str]:
    return [r["tag"] for r in image_tags() if r["repository"] == repository]


def test_sgl_dev_newest_per_rocm_and_gpu_by_date_then_version() -> None:
    tags = _tags("rocm/sgl-dev")
    with pytest.raises(PatternError, match=r"choose one of: .*sgl-dev:rocm=720,gpu=mi35x"):
        newest(tags, "sgl-dev")
    order = [t.tag for t in matching(tags, "sgl-dev:rocm=720,gpu=mi35x")]
    line = [t for t in tags if re.fullmatch(r"v[^-]+-rocm720-mi35x-\d{8}", t)]
    oracle = sorted(line, key=lambda t: (t.rsplit("-", 1)[1], Version(t[1:].split("-")[0]), t))
    assert order == oracle and order[-1] == "v0.5.17-rocm720-mi35x-20260813"
    mi30x = newest(tags, "sgl-dev:rocm=720,gpu=mi30x")
    assert mi30x is not None and mi30x.tag == "v0.5.8.post1-rocm720-mi30x-20260215"


def test_mori_builds_are_ordered_by_the_images_created_not_the_yearless_day() -> None:
    tags = _tags("rocm/sgl-dev")
    with pytest.raises(PatternError, match="ordered by the image's created"):
        matching(tags, "sgl-dev-mori:rocm=700,gpu=mi35x")
    # the 0.5.6.post1 line crossed New Year: 1218, 1224, then 0113
    created = {
        "sglang-0.5.6.post1-rocm700-mi35x-mori-1218": "2025-12-18T10:00:00Z",
        "sglang-0.5.6.post1-rocm700-mi35x-mori-1224": "2025-12-24T10:00:00Z",
        "sglang-0.5.6.post1-rocm700-mi35x-mori-0113": "2026-01-13T10:00:00Z",
        "sglang-0.5.8-rocm700-mi35x-mori-0210": "2026-02-10T10:00:00Z",
    }
    found = matching(
        tags, "sgl-dev-mori:rocm=700,gpu=mi35x", lambda ts: {t: created.get(t) for t in ts}
    )
    assert [t.tag for t in found] == list(created)
    rebuilds = [t.tag for t in matching(tags, "sgl-dev-mori:rocm=720,gpu=mi35x", lambda ts: {})]
    assert "sglang-0.5.9-rocm720-mi35x-mori-0227-2" in rebuilds  # a rebuild is the line
    assert "sglang-0.5.12.post1-rocm720-mi35x-mori-0529-mla" not in rebuilds  # a variant is not
    vllm = matching(_tags("rocm/vllm-dev"), "vllm-dev-mori", lambda ts: dict.fromkeys(ts, "x"))
    assert [t.tag for t in vllm] == ["vllm-0.23.1-rocm723-mi35x-mori-0625"]


def test_a_tag_names_the_line_a_user_selects_it_by() -> None:
    tags = _tags("rocm/sgl-dev")
    mori = classify("rocm/sgl-dev", "sglang-0.5.9-rocm720-mi35x-mori-0227-2")
    assert mori.selector == "sgl-dev-mori:rocm=720,gpu=mi35x"
    dated = classify("rocm/sgl-dev", "v0.5.8.post1-rocm720-mi35x-20260219")
    assert dated.selector == "sgl-dev:rocm=720,gpu=mi35x"
    found = newest(tags, dated.selector)
    assert found is not None and found.tag == "v0.5.17-rocm720-mi35x-20260813"
    gpu = classify("rocm/atom", "rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1-MI350x")
    assert gpu.selector == "atom-release-gpu:gpu=MI350x"
    assert classify("rocm/atom-dev", "nightly_202607011530").selector == "atom"
    assert classify("rocm/atom-dev", "latest").selector is None


def test_atom_gpu_releases_and_dated_builds_by_their_group() -> None:
    tags = _tags("rocm/atom")
    with pytest.raises(PatternError, match=r"choose one of: .*atom-release-gpu:gpu=MI350x"):
        newest(tags, "atom-release-gpu")
    mi350 = newest(tags, "atom-release-gpu:gpu=MI350x")
    assert mi350 is not None
    assert mi350.tag == "rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1-MI350x"
    dated = newest(tags, "atom-dated:rocm=7.2.3")
    assert dated is not None
    assert dated.tag == "rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511"
    # the version-named release line is unchanged by the new families
    release = newest(tags, "atom-release")
    assert release is not None and release.tag.endswith("_atom0.1.4_202607091539")
    assert not {"latest", "gfx950_latest", "rocm_7.2_preview_latest"} & {
        t.tag
        for fam in ("atom-release", "atom-release-gpu", "atom-dated")
        for t in matching(tags, fam)
    }
