"""images.lock.yaml: deterministic rendering, strict parsing, atomic update, facts merge."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from relpipe.core.reference import parse
from relpipe.images.lock import LockError, load, lookup, merge_facts, parse_lock, render, update
from relpipe.images.registry import Pinned

D1, D2, D3 = ("sha256:" + c * 64 for c in "123")


def _pin(ref: str, digest: str = D1, platform_digest: str = D2) -> Pinned:
    return Pinned(
        ref=ref,
        reference=parse(ref).with_digest(digest),
        digest=digest,
        media_type="application/vnd.oci.image.index.v1+json",
        platform="linux/amd64",
        platform_digest=platform_digest,
        config_digest=D3,
        created="2026-10-07T03:33:00Z",
        labels=(),
        env=(),
        resolved_at="2026-11-29T00:00:00Z",
    )


EXPECTED = f"""\
# images.lock.yaml: written by `relpipe images pin`; digests are verified, do not edit by hand.
docker.io/rocm/atom-dev:nightly_202610070333:
  digest: {D1}
  platform: linux/amd64
  platform-digest: {D2}
  media-type: application/vnd.oci.image.index.v1+json
  resolved-at: '2026-11-29T00:00:00Z'
  created: '2026-10-07T03:33:00Z'
  facts:
    engine:
      name: atom
      version: 0.1.7.dev60+g7fc0926c6
    rocm: 7.2.4
docker.io/rocm/atom-dev:nightly_202610080000:
  digest: {D3}
  platform: linux/amd64
  platform-digest: {D2}
  media-type: application/vnd.oci.image.index.v1+json
  resolved-at: '2026-11-29T00:00:00Z'
  created: '2026-10-07T03:33:00Z'
  facts: {{}}
"""


def test_update_merge_and_deterministic_render(tmp_path: Path) -> None:
    lock = tmp_path / "images.lock.yaml"
    update(lock, [_pin("rocm/atom-dev:nightly_202610080000", D3)])
    update(lock, [_pin("rocm/atom-dev:nightly_202610070333")])
    merge_facts(
        lock,
        "rocm/atom-dev:nightly_202610070333",
        D2,
        {"rocm": "7.2.4", "engine": {"version": "0.1.7.dev60+g7fc0926c6", "name": "atom"}},
    )
    assert lock.read_text() == EXPECTED
    entries = load(lock)
    assert render(entries) == EXPECTED  # parse(render) round-trips byte for byte
    entry = lookup(entries, "docker.io/rocm/atom-dev:nightly_202610070333")
    assert entry is not None and str(entry.reference()).endswith("@" + D1)
    # re-pinning the same digest keeps facts; a new digest drops them (facts belong to a digest)
    update(lock, [_pin("rocm/atom-dev:nightly_202610070333")])
    assert load(lock)["docker.io/rocm/atom-dev:nightly_202610070333"].facts["rocm"] == "7.2.4"
    update(lock, [_pin("rocm/atom-dev:nightly_202610070333", D3)])
    assert load(lock)["docker.io/rocm/atom-dev:nightly_202610070333"].facts == {}


def test_merge_facts_refuses_other_digest_and_unknown_entry(tmp_path: Path) -> None:
    lock = tmp_path / "images.lock.yaml"
    update(lock, [_pin("rocm/atom-dev:nightly_202610070333")])
    before = lock.read_bytes()
    with pytest.raises(LockError, match="re-pin first"):
        merge_facts(lock, "rocm/atom-dev:nightly_202610070333", D3, {"rocm": "x"})
    with pytest.raises(LockError, match="no entry for"):
        merge_facts(lock, "rocm/atom-dev:other", D1, {"rocm": "x"})
    assert lock.read_bytes() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x {digest: 1}\nb: *x\n", "aliases are not allowed"),
        (f"x:1:\n  digest: {D1}\nx:1:\n  digest: {D1}\n", "duplicate key"),
        ("- a\n", "top level must be a mapping"),
        ("docker.io/library/x:1:\n  digest: sha256:abc\n", "digest must be sha256"),
        (
            f"x:1:\n  digest: {D1}\n  platform-digest: {D1}\n  media-type: m\n  resolved-at: t\n",
            "not normalised",
        ),
        (
            f"docker.io/library/x:1:\n  digest: {D1}\n  platform-digest: {D1}\n"
            "  media-type: m\n  resolved-at: t\n  extra: 1\n",
            "unknown fields",
        ),
        ("key: [unclosed\n", "invalid YAML"),
    ],
)
def test_parse_rejects_bad_lock_files(text: str, message: str) -> None:
    with pytest.raises(LockError, match=message) as info:
        parse_lock(text.encode())
    assert "\n" not in str(info.value)


def _worker(args: tuple[str, int]) -> None:
    path, i = args
    update(path, [_pin(f"r/x:t{i:02d}")])


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    lock = tmp_path / "images.lock.yaml"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_worker, [(str(lock), i) for i in range(12)])
    assert sorted(load(lock)) == [f"docker.io/r/x:t{i:02d}" for i in range(12)]
    assert not list(tmp_path.glob(".images.lock.yaml.*.tmp"))
