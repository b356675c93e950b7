"""The engine declarations and their two readers: the host's (`core/engines.py`, typed and
validated) and the payload's (`engine/declaration.py`, stdlib only) read the same files in the
same order and agree on what the payload acts on; a malformed declaration is refused in one line
naming the file and the field; and no other module reads the declarations' folder."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from relpipe.core import engines
from relpipe.core.errors import RelpipeError
from relpipe.engine import declaration, packaging

ROOT = Path(__file__).resolve().parent.parent.parent
ATOM = json.loads((engines.BUILTIN_DIR / "atom.json").read_text())


def test_both_readers_see_the_same_engines_and_probe_layouts() -> None:
    assert engines.names() == declaration.names() == ("atom", "sglang", "vllm")
    for engine in engines.declarations():
        found = packaging.packaging_of(engine.name)
        assert found.dist == engine.distribution
        assert found.checkouts[0] == engine.checkout or engine.probe_method == "checkout"
        assert isinstance(declaration.section(engine.name, "launch").get("argv"), list)


def test_each_engine_declares_what_every_layer_reads() -> None:
    atom, sglang, vllm = (engines.engine(n) for n in ("atom", "sglang", "vllm"))
    assert (atom.title, sglang.title, vllm.title) == ("ATOM", "SGLang", "vLLM")
    assert atom.checkout == "/app/ATOM" and [c.name for c in atom.components] == ["aiter"]
    assert (vllm.rules, sglang.rules, atom.rules) == ("vllm", "sglang", "atom")
    assert vllm.upstream_images == ("vllm/",) and sglang.upstream_images == ("lmsysorg/",)
    assert engines.of_framework("dynamo-sglang") is sglang
    assert engines.of_framework("atom-disagg") is atom and engines.of_framework("trt") is None
    assert {f.name for f in sglang.families} >= {"sgl-dev", "sgl-dev-mori"}
    assert {f.name for f in atom.families} >= {"atom-release-gpu", "atom-dated"}


def _write(folder: Path, doc: dict[str, object], name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name or doc['name']}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, r"unknown field 'colour'"),
        ({"schema": 2}, r"schema must be 1"),
        ({"frameworks": []}, r"frameworks must not be empty"),
        ({"probe": {"method": "guess", "distribution": "x"}}, r"probe.method must be one of"),
        ({"acceptance": [{"name": "X", "form": "env", "kind": "al"}]}, r"acceptance\[0\]: form"),
        (
            {"never": [{"class": "old", "why": "w", "repositories": ["a"], "patterns": ["b"]}]},
            r"never\[0\].class 'old'",
        ),  # fmt: skip
        ({"source": {"checkout": "/x", "rules": "../x_rules.yaml"}}, r"not a file next to"),
        (
            {"families": {"f": {"repositories": ["r"], "patterns": ["p"]}}},
            r"families.f.order must",
        ),  # fmt: skip
    ],
)
def test_a_malformed_declaration_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, object], message: str
) -> None:
    doc = {**ATOM, "name": "bad", "families": {}, "never": [], **change}
    path = _write(tmp_path / "decl", doc)
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(path.parent))
    with pytest.raises(engines.DeclarationError, match=message) as caught:
        engines.declarations()
    assert isinstance(caught.value, RelpipeError) and caught.value.exit_code == 2
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_name_declared_twice_or_not_its_files_stem_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "twice", {**ATOM, "families": {}})
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(path.parent))
    with pytest.raises(engines.DeclarationError, match="'atom' is already declared in"):
        engines.declarations()
    other = _write(tmp_path / "stem", {**ATOM, "name": "toy"}, name="other")
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(other.parent))
    with pytest.raises(engines.DeclarationError, match="must be lower-case .* and the file's stem"):
        engines.declarations()
    monkeypatch.setenv(engines.DECLARATIONS_ENV, str(tmp_path / "missing"))
    with pytest.raises(engines.DeclarationError, match="is not a folder"):
        engines.declarations()


def test_only_the_two_readers_name_the_declarations_folder() -> None:
    readers = {"core/engines.py", "engine/declaration.py"}
    found = set()
    for layer in ("core", "engine", "images", "validate", "pipeline", "changelog"):
        for path in (ROOT / layer).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(
                isinstance(n, ast.Constant) and n.value == "declarations" for n in ast.walk(tree)
            ):
                found.add(path.relative_to(ROOT).as_posix())
    assert found == readers
