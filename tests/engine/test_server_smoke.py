"""`python -m relpipe.engine server-smoke`: relpipe's own `engine serve` started by its adapter,
decoded through the API, re-checked against a recorded decode, gsm8k through the same server; and
each bad input (model folder missing or unreadable, a server that never becomes healthy, one that
answers garbage, one that stalls mid-stream) ending as FAIL with one line, its server stopped."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# A stand-in for an engine's server, started by the adapter in place of `python`: it serves
# /health and answers completions the way a broken engine would (the network boundary).
FAKE_SERVER = """#!{python}
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
MODE = {mode!r}
open({pidfile!r}, "w").write(str(os.getpid()))
if MODE == "never-healthy":
    time.sleep(600)
port = int(sys.argv[sys.argv.index("--port") + 1])

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200); self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close"); self.end_headers()
        if MODE == "garbage":
            self.wfile.write(b"data: <html>oops</html>\\n\\n"); self.wfile.flush(); return
        chunk = {{"choices": [{{"index": 0, "text": "a", "finish_reason": None}}]}}
        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\\n\\n"); self.wfile.flush()
        time.sleep(600)  # stalls mid-stream

HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "relpipe-model.json").write_text('{"seed": 0}')
    return folder


def _smoke(cli, model: Path, *extra: str, python: str = sys.executable):  # type: ignore[no-untyped-def]
    return cli(
        "server-smoke",
        "--engine",
        "relpipe",
        "--model",
        str(model),
        "--python",
        python,
        "--port",
        str(_free_port()),
        "--prompts",
        "1",
        "--prompt-bytes",
        "4",
        "--max-new",
        "3",
        *extra,
    )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_smoke_decodes_records_and_rechecks(cli, tmp_path: Path, model_dir: Path) -> None:  # type: ignore[no-untyped-def]
    gold = tmp_path / "gold.json"
    data = tmp_path / "gsm8k.jsonl"
    data.write_text('{"question": "What is 1 plus 1?", "answer": "#### 2"}\n')
    gsm = ["--dataset", str(data), "--n-shot", "0", "--max-tokens", "2", "--threshold", "0"]
    first = _smoke(cli, model_dir, "--record", str(gold), *gsm)
    assert first.code == 0, first.doc
    assert first.doc["server"]["argv"][1:4] == ["-m", "relpipe.engine", "serve"]
    assert first.doc["server_exit"] == 0  # stopped cleanly by SIGTERM
    (decoded,) = first.doc["decode"]
    assert decoded["prompt"] == "The " and len(decoded["token_ids"]) == 3
    assert first.doc["gsm8k"]["status"] == "pass" and first.doc["gsm8k"]["max_tokens"] == 2
    assert json.loads(gold.read_text())["decode"] == first.doc["decode"]
    again = _smoke(cli, model_dir, "--golden", str(gold))
    assert again.code == 0 and again.doc["checks"][1] == {
        "name": "golden",
        "ok": True,
        "file": str(gold),
        "differences": [],
    }
    # the "last qualified image" decoded something else: a cross-nightly regression
    record = json.loads(gold.read_text())
    record["decode"][0]["token_ids"] = [1, 2, 3]
    gold.write_text(json.dumps(record))
    regressed = _smoke(cli, model_dir, "--golden", str(gold))
    assert regressed.code == 1 and regressed.doc["reason"] == "failed checks: golden"
    assert regressed.doc["checks"][1]["differences"] == ["'The ': token ids differ"]


def test_missing_model_folder_fails_before_any_server(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = _smoke(cli, tmp_path / "absent")
    assert (
        r.code == 1
        and r.doc["reason"] == f"model folder {tmp_path / 'absent'}: missing or not a folder"
    )


def test_unreadable_model_file_fails(cli, model_dir: Path) -> None:  # type: ignore[no-untyped-def]
    (model_dir / "model-00001.safetensors").symlink_to(model_dir / "gone")
    r = _smoke(cli, model_dir)
    assert r.code == 1
    assert r.doc["reason"] == (
        f"model folder {model_dir}: model-00001.safetensors is unreadable"
        " (No such file or directory)"
    )


@pytest.mark.parametrize(
    ("mode", "extra", "reason"),
    [
        (
            "never-healthy",
            ["--health-timeout", "3"],
            "relpipe: not healthy at http://127.0.0.1:{port}/health after 3s",
        ),
        ("garbage", [], "server answered garbage: b'<html>oops</html>'"),
        (
            "stall",
            ["--stall-timeout", "2"],
            "server stalled mid-stream: no data for 2s after 1 chunk(s)",
        ),
    ],
)
def test_broken_servers_fail_with_one_line_and_are_stopped(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, model_dir: Path, mode: str, extra: list[str], reason: str
) -> None:
    fake = tmp_path / "fake-python"
    pidfile = tmp_path / "server.pid"
    fake.write_text(FAKE_SERVER.format(python=sys.executable, mode=mode, pidfile=str(pidfile)))
    fake.chmod(0o755)
    port = _free_port()
    r = cli(
        "server-smoke",
        "--engine",
        "relpipe",
        "--model",
        str(model_dir),
        "--python",
        str(fake),
        "--port",
        str(port),
        "--prompts",
        "1",
        "--max-new",
        "3",
        *extra,
    )
    assert r.code == 1 and r.doc["status"] == "fail"
    assert r.doc["reason"] == reason.format(port=port)
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the server's process group was stopped
