"""Config pin: a minimal textual edit of one key's `image:` that keeps every other byte."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from relpipe.changelog.configs.pin import ConfigPinError, edit_image, pin_image
from relpipe.changelog.errors import ChangelogError

NEW = "rocm/atom-dev:nightly_202610070333"
DIGEST = "sha256:2f605a3e" + "0" * 56


@pytest.mark.parametrize("image", [NEW, f"{NEW}@{DIGEST}"], ids=["tag", "with-digest"])
def test_corpus_bump_changes_exactly_one_line(corpus_dir: Path, tmp_path: Path, image: str) -> None:
    original = (corpus_dir / "amd-master.yaml").read_bytes()
    path = tmp_path / "amd-master.yaml"
    shutil.copyfile(corpus_dir / "amd-master.yaml", path)
    result = pin_image(path, "dsv4-fp4-mi355x-atom", image)
    assert result.changed and result.old_image == "rocm/atom-dev:nightly_202607231538"
    old_lines, new_lines = original.split(b"\n"), path.read_bytes().split(b"\n")
    assert len(old_lines) == len(new_lines)
    diff = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert diff == [result.line - 1]
    assert new_lines[diff[0]] == f"  image: {image}".encode()
    # the look-alike keys that share the prefix are untouched
    assert (
        b"dsv4-fp4-mi355x-atom-mtp:\n  image: rocm/atom-dev:nightly_202607231538"
        in path.read_bytes()
    )
    # idempotent: the second pin is a no-op and writes nothing
    mtime = path.stat().st_mtime_ns
    assert pin_image(path, "dsv4-fp4-mi355x-atom", image).changed is False
    assert path.stat().st_mtime_ns == mtime


def test_every_atom_key_of_the_real_file_bumps_exactly_its_line(corpus_dir: Path) -> None:
    """The guarantee a YAML round-trip library could not keep here (bench/yaml_roundtrip.py):
    bumping any ATOM key of the real amd-master.yaml changes its one `image:` line, nothing else."""
    import yaml

    original = (corpus_dir / "amd-master.yaml").read_text(encoding="utf-8")
    configs = yaml.safe_load(original)
    atom = [k for k, v in configs.items() if v.get("framework") == "atom"]
    assert len(atom) >= 10, atom  # the real file has 13 ATOM recipes (rocm/atom, rocm/atom-dev)
    old_lines = original.split("\n")
    for key in atom:
        new_text, result = edit_image(original, key, NEW, "amd-master.yaml")
        new_lines = new_text.split("\n")
        assert len(new_lines) == len(old_lines)
        diff = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
        assert diff == [result.line - 1], key
        assert new_lines[diff[0]] == old_lines[diff[0]].replace(result.old_image, NEW), key
        assert yaml.safe_load(new_text) == {**configs, key: {**configs[key], "image": NEW}}


def test_flow_mapping_quotes_and_comments_are_kept() -> None:
    text = (
        "# header comment\n"
        "a: {image: 'rocm/x:old', model: m}   # trailing\n"
        "b:\n"
        '  image: "rocm/x:old"  # keep me\n'
        "  model: m\n"
    )
    out, res = edit_image(text, "a", "rocm/x:new")
    assert out == text.replace("'rocm/x:old'", "'rocm/x:new'", 1) and res.line == 2
    out, res = edit_image(text, "b", "rocm/x:new")
    assert out == text.replace('"rocm/x:old"', '"rocm/x:new"') and res.line == 4


@pytest.mark.parametrize(
    ("text", "key", "image", "message"),
    [
        ("a:\n  image: x\n", "zz", "y", "not found"),
        ("a:\n  image: x\na:\n  image: y\n", "a", "y", "appears 2 times"),
        ("a:\n  model: m\n", "a", "y", "exactly one scalar 'image:'"),
        ("a:\n  image: [x]\n", "a", "y", "exactly one scalar"),
        ("a:\n  image: |\n    x\n", "a", "y", "block scalar"),
        ("a:\n  image: x\n", "a", "bad image # x", "invalid image reference"),
        ("a: [\n", "a", "y", "invalid YAML"),
        ("- a\n", "a", "y", "top level is not a mapping"),
    ],
)
def test_refusals(text: str, key: str, image: str, message: str) -> None:
    with pytest.raises(ConfigPinError, match=message) as info:
        edit_image(text, key, image)
    assert "\n" not in str(info.value)


def test_crlf_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"a:\r\n  image: x\r\n")
    with pytest.raises(ConfigPinError, match="carriage returns"):
        pin_image(path, "a", "y")
    assert path.read_bytes() == b"a:\r\n  image: x\r\n"


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_file_is_one_line_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "m.yaml"
    if kind == "directory":
        path.mkdir()
    with pytest.raises(ChangelogError) as info:
        pin_image(path, "a", "y")
    message = str(info.value)
    assert message.startswith(f"cannot read master config {path}: ") and "\n" not in message
    assert info.value.exit_code == 2
    assert not isinstance(info.value, OSError)


def test_failed_write_is_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import relpipe.changelog.configs.pin as pin_module

    def full_disk(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    # As root a read-only folder is still writable, so the failure is injected at the write.
    monkeypatch.setattr(pin_module, "write_atomic", full_disk)
    path = tmp_path / "m.yaml"
    path.write_bytes(b"a:\n  image: x\n")
    with pytest.raises(ChangelogError, match=r"^cannot write master config .*m\.yaml: No space"):
        pin_image(path, "a", "y")
    assert path.read_bytes() == b"a:\n  image: x\n"
