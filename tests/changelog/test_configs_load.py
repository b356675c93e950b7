"""relpipe.changelog.configs.load on the real masters and on crafted files: strict loading, the fast
top-level key scan (checked against PyYAML), and InferenceX key resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from relpipe.changelog.configs.load import (
    load_master,
    load_masters,
    master_keys,
    resolve_key,
    resolve_keys,
)
from relpipe.changelog.errors import ChangelogError

MASTERS = ("amd-master.yaml", "nvidia-master.yaml")


@pytest.mark.parametrize("name", MASTERS)
def test_key_scan_equals_pyyaml_on_the_real_masters(corpus_dir: Path, name: str) -> None:
    path = corpus_dir / name
    loaded = load_master(path)
    assert master_keys(path) == tuple(loaded) == tuple(yaml.safe_load(path.read_bytes()))
    assert len(loaded) == {"amd-master.yaml": 56, "nvidia-master.yaml": 152}[name]


def test_load_masters_merges_and_reports_origin(corpus_dir: Path) -> None:
    masters = load_masters([corpus_dir / name for name in MASTERS])
    assert len(masters.keys) == 208
    assert masters.origin["dsr1-fp4-mi355x-atom"].name == "amd-master.yaml"
    assert masters.configs["dsr1-fp4-mi355x-atom"]["framework"] == "atom"


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        # A quoted scalar running over lines can hold a column-0 `key:` line: events decide.
        ('a:\n  x: "multi\nfake: line"\nb:\n  y: 1\n', ("a", "b")),
        ('a:\n  x: "ends in an escaped quote \\"\nfake: line"\nb:\n  y: 1\n', ("a", "b")),
        ("a:\n  x: 'doubled ''\nfake: line'\nb:\n  y: 1\n", ("a", "b")),
        ("# comment\n'quoted key':\n  x: 1\n\"dq\": {y: 2}\n", ("quoted key", "dq")),
        ("a:\n  x: |\n    fake: line\nb: {}\n", ("a", "b")),
    ],
)
def test_key_scan_never_guesses(tmp_path: Path, text: str, keys: tuple[str, ...]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert master_keys(path) == keys == tuple(yaml.safe_load(text))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a:\n  x: 1\na:\n  x: 2\n", "duplicate key `a`"),
        ("a:\n  x: 1\n  x: 2\n", "duplicate key `x`"),
        ("'a*':\n  x: 1\n", "reserved for globs"),
        ("- a\n", "must be a mapping of config keys"),
        ("a: [\n", "invalid YAML"),
    ],
)
def test_load_master_is_strict(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ChangelogError, match=message):
        load_master(path)


def test_a_key_in_two_masters_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("k:\n  x: 1\n")
    (tmp_path / "b.yaml").write_text("k:\n  x: 2\n")
    with pytest.raises(ChangelogError, match="defined in both"):
        load_masters([tmp_path / "a.yaml", tmp_path / "b.yaml"])


KEYS = ["dsr1-fp4-mi355x-atom", "dsr1-fp8-mi355x-atom", "gptoss-fp4-b200-trt", "a.b", "a?b"]


def test_resolution_follows_inferencex_semantics() -> None:
    assert resolve_keys(["dsr1-*-atom", "dsr1-fp4-mi355x-atom", "gptoss*"], KEYS) == [
        "dsr1-fp4-mi355x-atom",
        "dsr1-fp8-mi355x-atom",
        "gptoss-fp4-b200-trt",
    ]
    assert resolve_key("a.b", KEYS) == ["a.b"]  # `.` is literal
    assert resolve_key("a?b", KEYS) == ["a?b"]  # `?` is not a wildcard
    with pytest.raises(ChangelogError, match="config key `dsr1-fp4` not found"):
        resolve_key("dsr1-fp4", KEYS)  # no partial match for an exact key
    with pytest.raises(ChangelogError, match="glob `dsr1-fp4\\*-trt` matches no config key"):
        resolve_key("dsr1-fp4*-trt", KEYS)
    with pytest.raises(ChangelogError, match="glob `\\*-mi355x` matches no config key"):
        resolve_key("*-mi355x", KEYS)  # full match: a suffix glob must reach the end


@pytest.mark.timeout(60)  # backtracking (quadratic) would take hours on these lines, not ms
def test_a_hostile_master_line_is_scanned_in_linear_time(tmp_path: Path) -> None:
    """Lines of a master a PR can write (1 MB each, a quote after a comment mark so that the
    open-quote test runs): the key scan decides them at once. (350,000 nested sequences are
    more than PyYAML can parse: the strict load says so in one line.)"""
    path = tmp_path / "amd-master.yaml"
    hostile = ["  - " + "-  " * 350_000 + ' #"', "  note: " + "- " * 500_000 + "x #'"]
    path.write_text("dsr1-fp4-mi355x-atom:\n" + "\n".join(hostile) + "\nother-key:\n  x: 1\n")
    assert master_keys(path) == ("dsr1-fp4-mi355x-atom", "other-key")
    with pytest.raises(ChangelogError) as info:
        load_master(path)
    assert "\n" not in str(info.value)
