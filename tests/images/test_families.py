"""Every ROCm image family on the loopback registry, with the real tag names of
`engines/rocm-image-tags.tsv`: the newest build and the whole order equal what SOURCE.md's grammar
defines (the oracle here reads the table's own columns and PEP 440 from `packaging`), floating,
branch, variant and malformed tags are never chosen, and commit-addressed tags are ordered by the
images' `created`, one config fetch per uncached digest."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from corpus import image_tags
from packaging.version import Version
from registry_support import FaultProxy, push_image, unique_repo

from relpipe.core.reference import parse
from relpipe.images.evidence import choose_newest, load_cache
from relpipe.images.manifest import DOCKER_MANIFEST
from relpipe.images.nightly import PatternError, family, matching, newest
from relpipe.images.registry import RegistryClient
from relpipe.pipeline.cli import main as cli

SGLANG_DATED = "v<ver>-rocm<NNN>-mi3Xx-<YYYYMMDD>[-suffix]"
MALFORMED = [
    "nightly_202613010000",  # month 13
    "nightly_20260101",  # date only: an overwritten daily alias
    "nightly-",
    "v0.5.99-rocm720-mi35x-20261399",
    "v1.2.3.4.5",
    "nightly-XYZ0123",
    "latest",
    "nightly",
]


def _rows(repository: str, *classes: str) -> list[dict[str, str]]:
    return [r for r in image_tags() if r["repository"] == repository and r["tag_class"] in classes]


def _all_tags(repository: str) -> list[str]:
    return [r["tag"] for r in image_tags() if r["repository"] == repository]


def _sglang_version(tag: str) -> Version:
    return Version(tag[1:].split("-", 1)[0])


def _push_tags(client: RegistryClient, repo: str, tags: list[str], seed: int) -> None:
    """One image under every tag, in a shuffled order (the registry lists tags sorted)."""
    image = push_image(client, repo, None, seed=repo)
    shuffled = list(tags)
    random.Random(seed).shuffle(shuffled)
    for tag in shuffled:
        client.put_manifest(repo, tag, image.data, DOCKER_MANIFEST)


def _listed_order(repo: str, selector: str) -> tuple[list[str], int]:
    with RegistryClient() as client:
        tags = client.list_tags(parse(repo), page_size=25)
        pages = client.requests.get("GET tags", 0)
    return [t.tag for t in matching(tags, selector)], pages


ATOM_RELEASE = re.compile(r"atom(\d+\.\d+(?:\.\d+)*(?:\.post\d*)?)(?:_(\d+))?")
RELEASE_CLASSES = (
    "rocm<X.Y.Z>-ubuntu<V>-pytorch<V>-atom<V>[-gpu]",
    "rocm<X.Y.Z>_ubuntu<V>_py<V>_pytorch_release_<V>_atom<ver|date>[_<date>]",
)


def _atom_releases() -> list[str]:
    """SOURCE.md: by atom version, then ROCm version (then the date suffix). GPU-specific builds
    (`-MI300x`) and date-named builds (`_atom20260511`, `_atomesh_<ts>`) are other lines."""

    def key(tag: str) -> tuple[Version, Version, str]:
        rocm = tag[len("rocm") :].split("-")[0].split("_")[0]
        m = ATOM_RELEASE.search(tag)
        assert m is not None
        return Version(m[1]), Version(rocm), m[2] or ""

    tags = [r["tag"] for r in _rows("rocm/atom", *RELEASE_CLASSES)]
    mine = [t for t in tags if (m := ATOM_RELEASE.search(t)) and t.endswith(m[0])]
    return sorted(mine, key=key)


CASES: list[tuple[str, str, str, Callable[[], list[str]]]] = [
    (
        "atom-release",
        "rocm/atom",
        "rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.4_202607091539",
        _atom_releases,
    ),
    # (family selector, repository, expected newest, oracle order of the family's tags)
    (
        "atom",
        "rocm/atom-dev",
        "nightly_202610070333",
        lambda: [
            r["tag"]
            for r in sorted(
                _rows("rocm/atom-dev", "nightly_<YYYYMMDDHHMM>"),
                key=lambda r: r["date_in_tag"],
            )
        ],
    ),
    (
        "sglang:rocm=720,gpu=mi35x",
        "lmsysorg/sglang-rocm",
        "v0.5.21-rocm720-mi35x-20261006",
        lambda: [
            r["tag"]
            for r in sorted(
                (
                    r
                    for r in _rows("lmsysorg/sglang-rocm", SGLANG_DATED)
                    if "-rocm720-mi35x-" in r["tag"]
                ),
                key=lambda r: (r["date_in_tag"], _sglang_version(r["tag"]), r["tag"]),
            )
        ],
    ),
    (
        "sglang-release:rocm=720,gpu=mi35x",
        "lmsysorg/sglang",
        "v0.5.16-rocm720-mi35x",
        lambda: sorted(
            (
                r["tag"]
                for r in _rows("lmsysorg/sglang", "v<ver>-rocm<NNN>-mi3Xx[-suffix]")
                if r["tag"].endswith("-rocm720-mi35x")
            ),
            key=_sglang_version,
        ),
    ),
    (
        "sgl-dev:rocm=720,gpu=mi35x",
        "rocm/sgl-dev",
        "v0.5.17-rocm720-mi35x-20260813",
        lambda: [
            r["tag"]
            for r in sorted(
                (
                    r
                    for r in _rows("rocm/sgl-dev", SGLANG_DATED)
                    if re.fullmatch(r"v[^-]+-rocm720-mi35x-\d{8}", r["tag"])  # no variant suffix
                ),
                key=lambda r: (r["date_in_tag"], _sglang_version(r["tag"]), r["tag"]),
            )
        ],
    ),
    (
        "atom-release-gpu:gpu=MI350x",
        "rocm/atom",
        "rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1-MI350x",
        lambda: [t for t in _all_tags("rocm/atom") if t.endswith("-MI350x")],
    ),
    (
        "vllm-release",
        "vllm/vllm-openai-rocm",
        "v0.31.0",
        # `v0.16` (two parts) is a moving minor alias, not a release
        lambda: sorted(
            (r["tag"] for r in _rows("vllm/vllm-openai-rocm", "v<semver>") if r["tag"] != "v0.16"),
            key=lambda t: Version(t[1:]),
        ),
    ),
]


@pytest.mark.services
@pytest.mark.parametrize(("selector", "repository", "expected", "oracle"), CASES)
def test_family_newest_and_order_on_the_registry(
    registry: str,
    selector: str,
    repository: str,
    expected: str,
    oracle: Callable[[], list[str]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    repo = unique_repo(registry, repository.replace("/", "-"))
    tags = _all_tags(repository) + MALFORMED
    with RegistryClient() as client:
        _push_tags(client, repo, tags, seed=len(tags))
    # the Debian registry ignores `n`; the proxy pages the listing with `Link: rel="next"`
    proxy = FaultProxy(registry, paginate_tags=True)
    try:
        via = repo.replace(registry, proxy.addr)
        order, pages = _listed_order(via, selector)
        assert order == oracle() and order[-1] == expected
        assert pages == -(-len(set(tags)) // 25)  # every page, followed through `Link`
        args = ["images", "latest", via, "--pattern", selector, "--page-size", "25", "--json"]
        assert cli(args) == 0
    finally:
        proxy.close()
    out = json.loads(capsys.readouterr().out)
    assert out["tag"] == expected and out["tags-matching"] == len(order)
    assert out["tags-total"] == len(set(tags))


def test_atom_hyphen_nightlies_and_branch_builds() -> None:
    tags = [
        "nightly-202601021200",
        "nightly_202601021159",
        "nightly_202605171131-mooncake_build",
        "nightly_202606071111-Jasen-fix_dockerfile",
        "vllm-v0.10.1-nightly_20260901",
    ]
    assert [t.tag for t in matching(tags, "atom")] == [
        "nightly_202601021159",
        "nightly-202601021200",
    ]


def test_groups_must_be_chosen() -> None:
    tags = _all_tags("lmsysorg/sglang-rocm")
    with pytest.raises(PatternError, match=r"choose one of: .*sglang:rocm=720,gpu=mi35x, "):
        newest(tags, "sglang")
    with pytest.raises(PatternError, match="not a group of sglang"):
        family("sglang:cuda=12")
    assert newest(tags, "sglang:rocm=724,gpu=mi35x").tag == "v0.5.21-rocm724-mi35x-20261001"  # type: ignore[union-attr]


def test_pep440_order_within_a_day() -> None:
    tags = [
        "v0.5.10-rocm720-mi35x-20260401",
        "v0.5.10rc0-rocm720-mi35x-20260401",
        "v0.5.10.post1-rocm720-mi35x-20260401",
        "v0.5.9-rocm720-mi35x-20260401",
    ]
    order = [t.tag for t in matching(tags, "sglang")]
    assert order == sorted(tags, key=_sglang_version)


def test_atom_releases_by_atom_then_rocm_version() -> None:
    tags = _all_tags("rocm/atom")
    order = [t.tag for t in matching(tags, "atom-release")]
    assert order[-1] == "rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.4_202607091539"
    assert order[0] == "rocm7.2.0-ubuntu24.04-pytorch2.9-atom0.1.1"
    assert "rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511" not in order
    assert not {"latest", "gfx950_latest", "rocm7.2.2"} & set(order)


def test_commit_family_needs_evidence() -> None:
    with pytest.raises(PatternError, match="ordered by the image's created"):
        matching(["nightly-" + "a" * 40], "vllm")


@pytest.mark.services
@pytest.mark.parametrize(
    ("selector", "classes"),
    [
        ("vllm", ("nightly-<sha40>", "nightly-<shortsha>")),
        ("vllm-rocm:rocm=100", ("nightly-rocm<NNN>-<sha>",)),
    ],
)
def test_commit_addressed_tags_ordered_by_created(
    registry: str, selector: str, classes: tuple[str, ...], tmp_path: Path
) -> None:
    """Each commit tag is its own image, created at the day a consumer adopted it (plus the row
    number, so no two tie); the newest is the last created, never the last in tag order."""
    rows = [r for r in image_tags() if r["repository"] == "vllm/vllm-openai-rocm"]
    mine = [r for r in rows if r["tag_class"] in classes]
    repo = unique_repo(registry, "vllm-openai-rocm")
    created: dict[str, str] = {}
    base = datetime(2026, 1, 1)
    with RegistryClient() as client:
        for i, r in enumerate(mine):
            seen = r["first_seen_commit_date"]
            day = datetime.fromisoformat(seen) if seen else base
            when = (day + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.123456789Z")
            created[r["tag"]] = when
            push_image(client, repo, r["tag"], created=when, seed=r["tag"])
        _push_tags(client, repo, [r["tag"] for r in rows if r not in mine] + MALFORMED, seed=1)
    cache_path = tmp_path / "created.json"
    with RegistryClient() as client:
        choice = choose_newest(client, parse(repo), selector, page_size=30, cache_path=cache_path)
        first = dict(client.requests)
    expected = max(created, key=lambda t: created[t])
    assert choice.best is not None and choice.best.tag == expected
    assert choice.matching == len(mine)
    assert first.get("GET blob") == len(mine)  # one config fetch per uncached candidate
    assert len(load_cache(cache_path)) == len(mine)
    with RegistryClient() as client:
        again = choose_newest(client, parse(repo), selector, page_size=30, cache_path=cache_path)
        assert "GET blob" not in client.requests  # every digest cached: HEADs only
    assert again.best == choice.best


def test_each_family_names_the_engine_its_images_serve() -> None:
    from relpipe.images.nightly import engine_of

    assert engine_of("vllm/vllm-openai-rocm") == "vllm"
    assert engine_of("lmsysorg/sglang-rocm") == engine_of("lmsysorg/sglang") == "sglang"
    assert engine_of("rocm/atom-dev") == engine_of("rocm/atom") == "atom"
    assert engine_of("relpipe-test/atom-dev") == "atom"  # fixtures and unknown repositories


def test_a_repository_defaults_to_its_nightly_family() -> None:
    from relpipe.images.nightly import default_family

    assert default_family("vllm/vllm-openai-rocm") == "vllm"
    assert default_family("lmsysorg/sglang-rocm") == "sglang"
    assert default_family("rocm/atom-dev") == "atom"
    assert default_family("relpipe-test/whatever") == "atom"
