"""`python -m relpipe.engine launch-command ENGINE ...`: the exact server command, not run.

Prints the argv, the environment it adds and any config file it writes, as the adapter would
launch the engine (JSON with `--json`, else a shell line). Users see what will run; tests use it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence

from .. import declaration
from ..errors import EngineError
from . import declared, relpipe, server, trtllm

# Servers written as code: TensorRT-LLM (a config file, two EAGLE3 paths) and relpipe's own
# reference server. Every declared engine (engine/declarations/) launches from its declaration.
CODED: dict[str, Callable[..., server.ServerSpec]] = {
    "trtllm": trtllm.server,
    "relpipe": relpipe.server,
}


def engines() -> list[str]:
    """Every engine a server can be launched for: the declared ones and the coded ones."""
    return sorted({*declaration.names(), *CODED})


def add_launch_args(p: argparse.ArgumentParser) -> None:
    """The launch options shared by launch-command and server-smoke."""
    g = p.add_argument_group("server")
    g.add_argument("--model", required=True, metavar="PATH", help="model folder or id")
    g.add_argument("--served-model-name", metavar="NAME", help="(default: --model)")
    g.add_argument("--host", default="127.0.0.1", help="(default: %(default)s)")
    g.add_argument("--port", type=int, default=8000, help="(default: %(default)s)")
    g.add_argument("--tp", type=int, default=1, metavar="N", help="(default: %(default)s)")
    g.add_argument("--kv-dtype", choices=server.KV_DTYPES, metavar="D", help="bf16 or fp8")
    g.add_argument("--python", default="python3", help="(default: %(default)s)")
    s = p.add_argument_group("speculative decoding")
    s.add_argument("--spec", metavar="METHOD:K", help="mtp:3, eagle3:3, dspark:6")
    s.add_argument("--draft-model", metavar="PATH", help="EAGLE3 / DSpark draft checkpoint")
    s.add_argument("--al", metavar="X", help="golden acceptance length, in [1, K+1]")
    s.add_argument("--two-model", action="store_true", help="trtllm: the two-model EAGLE3 path")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m relpipe.engine launch-command", description=__doc__)
    p.add_argument("engine", choices=engines(), metavar="ENGINE")
    add_launch_args(p)
    p.add_argument("--json", action="store_true", help="print JSON (default: a shell line)")
    return p


def build(args: argparse.Namespace) -> server.ServerSpec:
    """The ServerSpec the adapter would launch for these arguments."""
    spec = server.parse_spec(args.spec, args.draft_model) if args.spec else None
    if spec is None and args.draft_model:
        raise EngineError("--draft-model needs --spec METHOD:K")
    request = server.launch(
        args.model,
        port=args.port,
        host=args.host,
        tensor_parallel=args.tp,
        kv_dtype=args.kv_dtype,
        spec=spec,
        acceptance=args.al,
        served_model_name=args.served_model_name,
        python=args.python,
    )
    if args.engine == "trtllm":
        return trtllm.server(request, two_model=args.two_model)
    if args.two_model:
        raise EngineError("--two-model applies to trtllm only")
    if args.engine in CODED:
        return CODED[args.engine](request)
    return declared.server(args.engine, request)


def shell_line(spec: server.ServerSpec) -> str:
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(spec.env.items())]
    return " ".join([*env, *(shlex.quote(a) for a in spec.argv)])


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        spec = build(args)
    except EngineError as exc:
        print(f"launch-command: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(spec.to_json(), indent=2, sort_keys=True))
    else:
        for path, text in spec.files.items():
            print(f"# {path}:\n" + "".join(f"#   {line}\n" for line in text.splitlines()), end="")
        print(shell_line(spec))
    return 0
