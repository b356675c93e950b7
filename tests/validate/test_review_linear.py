"""Every regex `relpipe review` runs over repository text is RE2 (linear time): the master line
`---` + 2M spaces that made the top-key scan quadratic, attack-shaped input against every
pattern in validate/review/, and the RE2 top-key scan agreeing with the stdlib one it replaced."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st
from support import git

from relpipe.validate.review import scope
from relpipe.validate.review.scope import load_masters
from relpipe.validate.review.source import open_source

ATTACK = "---" + " " * 2_000_000


def _module_patterns() -> list[tuple[str, object]]:
    import relpipe.validate.review as package

    out = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if hasattr(value, "pattern") and hasattr(value, "search"):
                out.append((f"{info.name}.{name}", value))
    return out


def test_no_review_module_uses_a_backtracking_regex() -> None:
    patterns = _module_patterns()
    assert len(patterns) >= 20
    stdlib = [name for name, p in patterns if isinstance(p, re.Pattern)]
    assert stdlib == []
    for path in Path(scope.__file__).parent.glob("*.py"):
        assert not re.search(r"^import re$", path.read_text(), re.M), path.name


@pytest.mark.timeout(60)
def test_the_top_key_scan_is_linear_on_dashes_and_2m_spaces() -> None:
    assert scope._TOP_KEY.match(ATTACK) is None
    assert scope._TOP_KEY.match("---" + " " * 2_000_000 + ":").group(3) == "---"


@pytest.mark.timeout(120)
def test_a_master_with_the_attack_line_loads_in_bounded_time(tmp_path: Path) -> None:
    repo = tmp_path / "ix"
    (repo / "configs").mkdir(parents=True)
    body = ATTACK + "\ndsr1-fp4-mi355x-vllm:\n  image: a\n"
    (repo / "configs/amd-master.yaml").write_text(body)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    masters = load_masters(open_source(repo, None))
    assert masters.where["dsr1-fp4-mi355x-vllm"][:2] == ("configs/amd-master.yaml", 2)


_SHAPES = st.sampled_from(["-", " ", ":", "a", "#", "'", '"', "$", "{", "(", ",", "\\", "/", "."])


@pytest.mark.timeout(300)
@settings(max_examples=15, deadline=None)
@given(prefix=st.text(_SHAPES, max_size=6), fill=_SHAPES, suffix=st.text(_SHAPES, max_size=4))
def test_every_review_pattern_is_linear_on_attack_shaped_text(
    prefix: str, fill: str, suffix: str
) -> None:
    text = prefix + fill * 200_000 + suffix
    for _, pattern in _module_patterns():
        pattern.search(text)  # type: ignore[attr-defined]
        pattern.match(text)  # type: ignore[attr-defined]


_LINE = st.text(st.sampled_from(list("ab -_:#'\"\t.")), max_size=12)


@settings(max_examples=200, deadline=None)
@given(line=_LINE)
def test_the_re2_top_key_scan_agrees_with_the_stdlib_one(line: str) -> None:
    old = re.compile(scope._TOP_KEY.pattern)
    new, want = scope._TOP_KEY.match(line), old.match(line)
    assert (new and new.groups()) == (want and want.groups())


def test_re2_is_what_the_patterns_are() -> None:
    assert type(scope._TOP_KEY) is type(re2.compile("x"))
