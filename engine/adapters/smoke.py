"""`python -m relpipe.engine server-smoke`: the engine decodes, checked through its own server.

Runs inside the image: checks the model folder, starts the engine's OpenAI-compatible server
through its adapter (the exact argv of `launch-command`), waits for health, decodes fixed prompts
greedily through `/v1/completions` (streamed, so a server that stalls mid-stream is caught by a
per-read timeout), compares the texts (and token ids where the server returns them) with those
recorded for the last qualified image (`--golden`, written by `--record`), then runs gsm8k by
InferenceX's rules through the same server, and always stops the server. Every way this can go
wrong (missing or unreadable model folder, a server that never becomes healthy, one that answers
garbage or stalls) ends as FAIL with a one-line reason, not a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import options, result
from ..errors import EngineError
from ..evals import cli as evals
from ..evals import gsm8k as suite
from ..files import read_capped
from . import command, server

MAX_EVENT_BYTES = 1 << 20
LOG_TAIL = 400


class SmokeFailed(EngineError):
    """The engine under test misbehaved: a checked FAIL (exit 1)."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class Decoded:
    prompt: str
    text: str
    token_ids: tuple[int, ...] | None  # when the server returns them (vLLM's return_token_ids)
    finish_reason: str | None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m relpipe.engine server-smoke", description=__doc__)
    p.add_argument("--engine", choices=command.engines(), required=True)
    command.add_launch_args(p)
    d = p.add_argument_group("decode")
    d.add_argument("--prompts", type=options.prompt_count, default=4, help="(default: %(default)s)")
    d.add_argument("--prompt-bytes", type=int, default=0)
    d.add_argument("--max-new", type=options.positive, default=16, help="(default: %(default)s)")
    d.add_argument("--golden", metavar="F", help="decode recorded for the last qualified image")
    d.add_argument("--record", metavar="F", help="write this decode as a golden file")
    t = p.add_argument_group("timeouts (seconds)")
    t.add_argument("--health-timeout", type=float, default=600.0, help="(default: %(default)s)")
    t.add_argument("--stall-timeout", type=float, default=120.0, help="longest silence mid-stream")
    t.add_argument("--log", metavar="F", help="server log (default: a temp file)")
    g = p.add_argument_group("gsm8k through the same server (skipped without --dataset)")
    g.add_argument("--dataset")
    g.add_argument("--fewshot")
    g.add_argument("--n-shot", type=int, default=5)
    g.add_argument("--limit", type=int, default=0)
    g.add_argument("--concurrency", type=options.positive, default=8)
    g.add_argument("--context-len", type=options.positive, default=16384)
    g.add_argument("--max-tokens", type=options.positive)
    g.add_argument("--request-timeout", type=float, default=300.0)
    g.add_argument("--threshold", type=float)
    g.add_argument("--thresholds")
    p.add_argument("--out", help="result JSON file (default stdout)")
    return p


def check_model_folder(path: str) -> None:
    """A real engine reads --model as a folder: it must exist and be listable and readable."""
    if not os.path.isdir(path):
        raise SmokeFailed(f"model folder {path}: missing or not a folder")
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise SmokeFailed(f"model folder {path}: unreadable ({exc.strerror})") from exc
    for name in sorted(names):
        full = os.path.join(path, name)
        if os.path.isdir(full):
            continue
        try:  # open and read a byte: permission bits alone say nothing to root
            with open(full, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise SmokeFailed(
                f"model folder {path}: {name} is unreadable ({exc.strerror})"
            ) from exc


def _tail(log: str) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - LOG_TAIL))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f" (log: {lines[-1][:200]})" if lines else ""


def decode(base_url: str, model: str, prompt: str, max_new: int, stall: float) -> Decoded:
    """One greedy streamed completion; SmokeFailed for an HTTP error, garbage, or a stall."""
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_new,
        "temperature": 0,
        "stream": True,
        "return_token_ids": True,  # vLLM's extension; other servers ignore it
    }
    req = urllib.request.Request(
        base_url + "/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    chunks, text, ids, finish = 0, [], [], None
    seen_ids = False
    try:
        with urllib.request.urlopen(req, timeout=stall) as resp:
            while True:
                line = resp.readline(MAX_EVENT_BYTES + 1)
                if not line:
                    raise SmokeFailed(f"stream ended without [DONE] after {chunks} chunk(s)")
                if len(line) > MAX_EVENT_BYTES:
                    raise SmokeFailed("server answered garbage: an event over 1 MiB")
                line = line.strip()
                if not line or line.startswith(b":"):
                    continue
                if not line.startswith(b"data:"):
                    raise SmokeFailed(f"server answered garbage: {line[:80]!r}")
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                try:
                    choice = json.loads(data)["choices"][0]
                    piece = choice.get("text")
                    if not isinstance(piece, str):
                        raise TypeError("text")
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    raise SmokeFailed(f"server answered garbage: {data[:80]!r}") from None
                chunks += 1
                text.append(piece)
                if isinstance(choice.get("token_ids"), list):
                    seen_ids = True
                    ids += [int(t) for t in choice["token_ids"] if isinstance(t, int)]
                finish = choice.get("finish_reason") or finish
    except urllib.error.HTTPError as exc:
        raise SmokeFailed(f"completion request: HTTP {exc.code}") from exc
    except TimeoutError as exc:
        raise SmokeFailed(
            f"server stalled mid-stream: no data for {stall:g}s after {chunks} chunk(s)"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise SmokeFailed(f"completion request: {exc}") from exc
    return Decoded(
        prompt=prompt,
        text="".join(text),
        token_ids=tuple(ids) if seen_ids else None,
        finish_reason=finish,
    )


def golden_check(path: str, decoded: Sequence[Decoded]) -> dict[str, Any]:

    try:
        gold = json.loads(read_capped(path, 4 << 20, "golden decode"))
    except json.JSONDecodeError as exc:
        raise EngineError(f"golden decode {path}: not JSON ({exc})") from exc
    if not (isinstance(gold, dict) and isinstance(gold.get("decode"), list)):
        raise EngineError(f"golden decode {path}: needs a 'decode' list")
    want = {d.get("prompt"): d for d in gold["decode"] if isinstance(d, dict)}
    differ = []
    for d in decoded:
        g = want.get(d.prompt)
        if g is None:
            differ.append(f"{d.prompt[:20]!r}: not in the golden file")
        elif g.get("text") != d.text:
            differ.append(f"{d.prompt[:20]!r}: text differs")
        elif g.get("token_ids") is not None and d.token_ids is not None:
            if list(g["token_ids"]) != list(d.token_ids):
                differ.append(f"{d.prompt[:20]!r}: token ids differ")
    return {"name": "golden", "ok": not differ, "file": path, "differences": differ}


def to_json(d: Decoded) -> dict[str, Any]:
    return {
        "prompt": d.prompt,
        "text": d.text,
        "token_ids": list(d.token_ids) if d.token_ids is not None else None,
        "finish_reason": d.finish_reason,
    }


def gsm8k(args: argparse.Namespace, base_url: str, model: str) -> dict[str, Any]:

    ns = argparse.Namespace(**vars(args))
    ns.base_url, ns.model = base_url, model
    threshold, source = evals._threshold(ns)
    report, max_tokens = evals.ask_server(ns)
    status, reason = suite.verdict(report, threshold, source)
    return {
        "status": status,
        "reason": reason,
        "threshold": {"value": threshold, "source": source},
        "max_tokens": max_tokens,
        "scores": {m: report.accuracy(m).to_json() for m in suite.METRICS},
        "errors": list(report.errors[:5]),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    check_model_folder(args.model)
    ns = argparse.Namespace(**vars(args))
    spec = command.build(ns)
    model = args.served_model_name or args.model
    texts = options.prompts(args.prompts, args.prompt_bytes)
    if args.log:
        log = args.log
    else:  # a fresh file: another run's log must not be quoted as this server's last words
        fd, log = tempfile.mkstemp(prefix=f"relpipe-{args.engine}-server-", suffix=".log")
        os.close(fd)
    started = time.monotonic()
    proc = server.start(spec, log)
    try:
        try:
            server.wait_healthy(spec, proc, args.health_timeout)
        except EngineError as exc:
            raise SmokeFailed(f"{exc}{_tail(log)}") from None
        healthy_s = time.monotonic() - started
        decoded = [decode(spec.base_url, model, t, args.max_new, args.stall_timeout) for t in texts]
        checks: list[dict[str, Any]] = []
        empty = [d.prompt[:20] for d in decoded if not d.text]
        checks.append({"name": "decodes", "ok": not empty, "empty": empty})
        if args.golden:
            checks.append(golden_check(args.golden, decoded))
        if args.record:
            result.write_file(
                {"schema": 1, "engine": args.engine, "decode": [to_json(d) for d in decoded]},
                args.record,
            )
        evaluated = gsm8k(args, spec.base_url, model) if args.dataset else None
    finally:
        code = server.shutdown(proc)
    failed = [c["name"] for c in checks if not c["ok"]]
    if evaluated is not None and evaluated["status"] != "pass":
        failed.append("gsm8k")
    reasons = [f"failed checks: {', '.join(failed)}"] if failed else []
    if evaluated is not None and evaluated["reason"]:
        reasons.append(f"gsm8k: {evaluated['reason']}")
    return result.envelope(
        "server-smoke",
        "fail" if failed else "pass",
        reason="; ".join(reasons) or None,
        engine=args.engine,
        server=spec.to_json(),
        server_exit=code,
        healthy_after_s=round(healthy_s, 3),
        checks=checks,
        decode=[to_json(d) for d in decoded],
        gsm8k=evaluated,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return result.guarded("server-smoke", args.out, lambda: run(args))
