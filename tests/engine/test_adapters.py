"""Engine adapters against the real sources: every ATOM flag relpipe emits is checked against
ATOM's own argument definitions (parsed with `ast` from a clone of ATOM's history, never
imported), and each adapter against the InferenceX launch script it follows (flags, values,
environment). Plus the acceptance-length rules and `launch-command`."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import source_root

from relpipe.engine.adapters import declared, server, trtllm
from relpipe.engine.adapters.server import acceptance_length, accepted_drafts, launch, parse_spec
from relpipe.engine.errors import EngineError


def _declared(name: str):  # type: ignore[no-untyped-def]
    """The declared engine's launcher (engine/declarations/NAME.json)."""
    return lambda request: declared.server(name, request)


atom_server, vllm_server, sglang_server = (_declared(n) for n in ("atom", "vllm", "sglang"))

SCRIPTS = Path("benchmarks/single_node/agentic")


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    choices: tuple[str, ...] | None
    type: str | None
    action: str | None


def _options(tree: ast.AST) -> dict[str, Option]:
    """`--flag` -> its add_argument definition, for every add_argument call under `tree`."""
    found: dict[str, Option] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        flags = tuple(
            a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value)[:2] == "--"
        )
        kw = {k.arg: k.value for k in node.keywords}
        choices = None
        if "choices" in kw:
            try:
                choices = tuple(str(c) for c in ast.literal_eval(kw["choices"]))
            except ValueError:
                choices = None  # computed choices (e.g. list(DP_LB_STRATEGIES)): not checked
        typ = kw["type"].id if isinstance(kw.get("type"), ast.Name) else None
        action = None
        if isinstance(kw.get("action"), ast.Constant):
            action = str(kw["action"].value)
        elif isinstance(kw.get("action"), ast.Attribute):
            action = kw["action"].attr
        for flag in flags:
            found[flag] = Option(flags, choices, typ, action)
    return found


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"{path}: no function {name}")


@pytest.fixture(scope="module")
def atom_cli(atom_repo: Path) -> dict[str, Option]:
    """ATOM's server CLI as its entrypoint builds it: EngineArgs.add_cli_args + api_server.main."""
    entry = ast.parse((atom_repo / "atom/entrypoints/openai_server.py").read_text())
    imported = {
        node.module
        for node in ast.walk(entry)
        if isinstance(node, ast.ImportFrom) and any(a.name == "main" for a in node.names)
    }
    assert "atom.entrypoints.openai.api_server" in imported
    main = _function(atom_repo / "atom/entrypoints/openai/api_server.py", "main")
    assert "EngineArgs.add_cli_args(parser)" in ast.unparse(main)
    engine_args = _function(atom_repo / "atom/model_engine/arg_utils.py", "add_cli_args")
    return {**_options(engine_args), **_options(main)}


def _launches() -> list[server.Launch]:
    return [
        launch("/models/m", port=8888, host="0.0.0.0", tensor_parallel=8, kv_dtype="fp8"),
        launch("/models/m", kv_dtype="bf16", spec=parse_spec("mtp:3"), acceptance="2.49"),
        launch(
            "/models/m",
            spec=parse_spec("eagle3:3", "Inferact/MiniMax-M3-EAGLE3"),
            acceptance=2.78,
            served_model_name="minimax",
        ),
        launch(
            "/models/m", spec=parse_spec("dspark:6", "Inferact/Kimi-K3-DSpark"), acceptance=3.75
        ),
        launch("/models/m", spec=parse_spec("mtp:1")),
    ]


@pytest.mark.parametrize("request_", _launches())
def test_every_atom_flag_exists_in_atoms_real_parser(
    atom_cli: dict[str, Option], request_: server.Launch
) -> None:
    argv = list(atom_server(request_).argv)
    assert argv[:3] == ["python3", "-m", "atom.entrypoints.openai_server"]
    rest = argv[3:]
    while rest:
        flag = rest.pop(0)
        assert flag in atom_cli, f"ATOM has no {flag}"
        opt = atom_cli[flag]
        if opt.action in ("store_true", "BooleanOptionalAction"):
            continue
        value = rest.pop(0)
        if opt.choices is not None:
            assert value in opt.choices, f"{flag} {value}: not one of {opt.choices}"
        if opt.type == "int":
            int(value)
        elif opt.type == "float":
            float(value)


def test_atom_keeps_the_acceptance_length_only_with_a_method(atom_repo: Path) -> None:
    """Why relpipe always passes --method and --num-speculative-tokens with an AL."""
    source = (atom_repo / "atom/model_engine/arg_utils.py").read_text()
    tests = [ast.unparse(n.test) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.If)]
    assert "self.method and self.num_speculative_tokens > 0" in tests
    argv = atom_server(_launches()[1]).argv
    assert argv[argv.index("--method") + 1] == "mtp"
    assert argv[argv.index("--num-speculative-tokens") + 1] == "3"
    assert argv[argv.index("--spec-decode-acceptance-length") + 1] == "2.49"


def _array(text: str, name: str, occurrence: int = -1) -> list[str]:
    """The words of the bash array `NAME=( ... )` (its last definition by default)."""
    blocks = re.findall(rf"{name}=\(\n(.*?)\n\s*\)", text, re.S)
    return shlex.split(blocks[occurrence], comments=True)


def test_atom_matches_inferencex_kimik3_dspark_launch(inferencex_tree: Path) -> None:
    text = (inferencex_tree / SCRIPTS / "kimik3_fp4_mi355x_atom_mtp.sh").read_text()
    # CONC=1: 6 draft tokens, AL 3.75 (the script's own golden comment and assignment)
    assert "SPEC_DECODE_AL=3.75\n    NUM_SPEC_TOKENS=6" in text
    words = [
        w.replace("$NUM_SPEC_TOKENS", "6").replace("$SPEC_DECODE_AL", "3.75")
        for w in _array(text, "SPEC_ARGS")
    ]
    request_ = launch(
        "/m",
        kv_dtype="fp8",
        spec=parse_spec("dspark:6", "Inferact/Kimi-K3-DSpark"),
        acceptance="3.75",
    )
    ours = atom_server(request_).argv
    cmd = _array(text, "ATOM_CMD")
    assert list(ours[ours.index("--method") :]) == words
    assert ours[ours.index("--kv_cache_dtype") + 1] == cmd[cmd.index("--kv_cache_dtype") + 1]
    assert cmd[:3] == ["python", "-m", "atom.entrypoints.openai_server"]
    for flag in (
        "--model",
        "--host",
        "--server-port",
        "--tensor-parallel-size",
        "--kv_cache_dtype",
    ):
        assert flag in cmd and flag in ours


def _flags(paths: list[Path]) -> set[str]:
    return {f for p in paths for f in re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", p.read_text())}


@pytest.mark.parametrize(
    ("engine", "globs", "adapter"),
    [
        ("atom", [f"{SCRIPTS}/*atom*.sh"], atom_server),
        ("vllm", [f"{SCRIPTS}/*mtp.sh"], vllm_server),
        # the EAGLE3 draft flag appears in InferenceX's multi-node SGLang model table
        (
            "sglang",
            [f"{SCRIPTS}/*sglang*.sh", "benchmarks/multi_node/amd_utils/models.yaml"],
            sglang_server,
        ),
        ("trtllm", [f"{SCRIPTS}/*trt*.sh"], trtllm.server),
    ],
)
def test_no_flag_inferencex_never_passes(inferencex_tree: Path, engine, globs, adapter) -> None:  # type: ignore[no-untyped-def]
    known = _flags(sorted(p for g in globs for p in inferencex_tree.glob(g)))
    for request_ in _launches():
        if engine == "sglang" and request_.spec and request_.spec.method == "dspark":
            continue
        if engine == "trtllm" and request_.spec and request_.spec.method == "dspark":
            continue
        flags = {a for a in adapter(request_).argv if a.startswith("--")}
        assert flags <= known, f"{engine}: {sorted(flags - known)} not in InferenceX's scripts"


def test_vllm_speculative_config_matches_inferencex(inferencex_tree: Path) -> None:
    text = (inferencex_tree / SCRIPTS / "minimaxm3_fp8_mi300x_mtp.sh").read_text()
    line = next(
        ln for ln in text.splitlines() if "SPEC_CONFIG=" in ln and "synthetic_acceptance" in ln
    )
    raw = line.split('SPEC_CONFIG="', 1)[1].rsplit('"', 1)[0].replace('\\"', '"')
    for var, value in (
        ("$DRAFT_MODEL", "Inferact/MiniMax-M3-EAGLE3-GQA"),
        ("$NUM_SPEC_TOKENS", "3"),
        ("$SYNTHETIC_ACCEPT_LEN", "2.78"),
    ):
        assert f"{var[1:]}={value}" in text or f'{var[1:]}="{value}"' in text
        raw = raw.replace(var, value)
    theirs = json.loads(raw)
    request_ = launch(
        "/m", spec=parse_spec("eagle3:3", "Inferact/MiniMax-M3-EAGLE3-GQA"), acceptance="2.78"
    )
    argv = vllm_server(request_).argv
    ours = json.loads(argv[argv.index("--speculative-config") + 1])
    assert set(ours) <= set(theirs)
    assert {k: theirs[k] for k in ours} == ours
    assert '"synthetic_acceptance_length": 2.78}' in argv[argv.index("--speculative-config") + 1]


def test_vllm_eagle3_without_draft_model_is_refused() -> None:
    with pytest.raises(EngineError, match="--spec eagle3 needs --draft-model"):
        parse_spec("eagle3:3")


def test_sglang_matches_inferencex_qwen_mtp(inferencex_tree: Path) -> None:
    text = (inferencex_tree / SCRIPTS / "qwen3.5_fp8_b200_sglang_mtp.sh").read_text()
    env = dict(re.findall(r"export (SGLANG_SIMULATE_ACC_\w+)=(\S+)", text))
    cmd = _array(text, "SGLANG_CMD")
    request_ = launch(
        "/m", kv_dtype="fp8", spec=parse_spec("mtp:3"), acceptance=env["SGLANG_SIMULATE_ACC_LEN"]
    )
    spec = sglang_server(request_)
    assert spec.env == env
    argv = list(spec.argv)
    for flag in (
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--kv-cache-dtype",
    ):
        assert argv[argv.index(flag) + 1] == cmd[cmd.index(flag) + 1], flag
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert sglang_server(launch("/m", spec=parse_spec("mtp:3"))).env == {}  # eval runs: no forcing


def test_trtllm_matches_inferencex_minimax_eagle3(inferencex_tree: Path) -> None:
    text = (inferencex_tree / SCRIPTS / "minimaxm3_fp4_b300_trt_mtp.sh").read_text()
    forced = re.search(r"export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=(\S+)", text)
    assert forced and "golden AL 2.78" in text
    cmd = _array(text, "TRTLLM_CMD")
    request_ = launch(
        "/m", kv_dtype="fp8", spec=parse_spec("eagle3:3", "/drafts/eagle3"), acceptance="2.78"
    )
    spec = trtllm.server(request_)
    assert spec.env == {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": forced.group(1)}
    assert list(spec.argv[: cmd.index("trtllm-serve") + 1]) == cmd[: cmd.index("trtllm-serve") + 1]
    config = spec.files[spec.argv[spec.argv.index("--config") + 1]]
    for line in ("decoding_type: Eagle3", "max_draft_len: 3", 'dtype: "fp8"'):
        assert line in config
    assert "decoding_type: Eagle3\n    max_draft_len: 3" in text
    with pytest.raises(
        EngineError, match="reads TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS as an integer"
    ):
        trtllm.server(request_, two_model=True)
    integral = launch("/m", spec=parse_spec("eagle3:3", "/d"), acceptance="3")
    assert trtllm.server(integral, two_model=True).env == {
        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "2"
    }


def _golden_values(corpus_dir: Path) -> list[str]:
    values = []
    for path in sorted((corpus_dir / "golden_al_distribution").glob("*.yaml")):
        for line in path.read_text().splitlines():
            key, _, value = line.strip().partition(":")
            if key.isdigit() and value.strip():
                values.append(value.strip())
    return values


def test_golden_acceptance_lengths_convert_exactly(corpus_dir: Path) -> None:
    values = _golden_values(corpus_dir)
    assert len(values) > 20
    for text in values:
        assert acceptance_length(text) == (text.rstrip("0").rstrip(".") if "." in text else text)
        whole, _, frac = text.partition(".")
        expected = (
            f"{int(whole) - 1}.{frac}".rstrip("0").rstrip(".") if frac else str(int(whole) - 1)
        )
        assert accepted_drafts(text) == expected
    assert accepted_drafts(2.27) == "1.27" and accepted_drafts("3") == "2"


@pytest.mark.parametrize(
    ("al", "k", "message"),
    [
        ("0.5", 3, r"must be in \[1, 4\] \(K = 3"),
        ("4.01", 3, r"must be in \[1, 4\]"),
        ("abc", 3, "is not a number"),
        ("nan", 3, r"must be in \[1, 4\]"),
    ],
)
def test_acceptance_length_is_checked_against_k(al: str, k: int, message: str) -> None:
    with pytest.raises(EngineError, match=message):
        launch("/m", spec=parse_spec(f"mtp:{k}"), acceptance=al)
    assert launch("/m", spec=parse_spec(f"mtp:{k}"), acceptance=str(k + 1)).acceptance == str(k + 1)


def test_launch_requests_are_validated() -> None:
    with pytest.raises(EngineError, match="--al needs --spec"):
        launch("/m", acceptance="2")
    with pytest.raises(EngineError, match="port 70000 is not in 1..65535"):
        launch("/m", port=70000)
    with pytest.raises(EngineError, match="--kv-dtype 'fp8_e4m3'"):
        launch("/m", kv_dtype="fp8_e4m3")
    with pytest.raises(EngineError, match="expected METHOD:K"):
        parse_spec("medusa:3")
    with pytest.raises(EngineError, match="mtp takes no --draft-model"):
        parse_spec("mtp:3", "/d")


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.engine", "launch-command", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(source_root()), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_launch_command_prints_argv_and_env_without_running() -> None:
    done = _command(
        "sglang",
        "--model",
        "/m",
        "--tp",
        "4",
        "--kv-dtype",
        "fp8",
        "--spec",
        "mtp:3",
        "--al",
        "3.39",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["argv"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert doc["env"]["SGLANG_SIMULATE_ACC_LEN"] == "3.39" and doc["files"] == {}
    line = _command("atom", "--model", "/m", "--spec", "mtp:3", "--al", "2.49").stdout
    assert line.startswith("python3 -m atom.entrypoints.openai_server --model /m")
    bad = _command("atom", "--model", "/m", "--spec", "mtp:3", "--al", "4.5", "--json")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == (
        "launch-command: acceptance length '4.5' must be in [1, 4] (K = 3 speculative tokens)\n"
    )
