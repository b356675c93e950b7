"""`python -m relpipe.engine serve`: OpenAI-compatible endpoints, plain and streaming, bad requests;
plus the adapters' health check and shutdown driving it as a real server process."""

from __future__ import annotations

import json
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support import source_root

from relpipe.engine.adapters import server as srv
from relpipe.engine.serve import Streamer


def _post(url: str, body: object, raw: bytes | None = None) -> tuple[int, bytes]:
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The engine server started and stopped through the adapters' launch/health/shutdown."""
    port = _free_port()
    spec = srv.ServerSpec(
        engine="relpipe",
        argv=(sys.executable, "-m", "relpipe.engine", "serve", "--port", str(port)),
        env={"PYTHONPATH": str(source_root())},
        port=port,
    )
    log = tmp_path_factory.mktemp("serve") / "log"
    proc = srv.start(spec, str(log))
    srv.wait_healthy(spec, proc, timeout=60)
    yield spec
    assert srv.shutdown(proc, grace=20) == 0  # SIGTERM is a clean stop
    assert not srv.healthy(spec)


def test_completion_plain_and_stop(served: srv.ServerSpec) -> None:
    code, body = _post(served.base_url + "/v1/completions", {"prompt": "Hello", "max_tokens": 8})
    doc = json.loads(body)
    assert code == 200 and doc["object"] == "text_completion" and doc["model"] == "relpipe-tiny"
    text = doc["choices"][0]["text"]
    assert doc["usage"] == {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}
    assert doc["choices"][0]["finish_reason"] == "length"
    stop = text[2:4]
    code, body = _post(
        served.base_url + "/v1/completions", {"prompt": "Hello", "max_tokens": 8, "stop": [stop]}
    )
    cut = json.loads(body)["choices"][0]
    assert cut["text"] == text[: text.find(stop)] and cut["finish_reason"] == "stop"


def test_streaming_equals_plain(served: srv.ServerSpec) -> None:
    plain = json.loads(
        _post(served.base_url + "/v1/completions", {"prompt": "abc", "max_tokens": 6})[1]
    )
    code, body = _post(
        served.base_url + "/v1/completions", {"prompt": "abc", "max_tokens": 6, "stream": True}
    )
    events = [line[6:] for line in body.decode().split("\n\n") if line.startswith("data: ")]
    assert code == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == plain["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_chat_plain_and_streaming(served: srv.ServerSpec) -> None:
    msgs = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    doc = json.loads(_post(served.base_url + "/v1/chat/completions", msgs)[1])
    assert (
        doc["object"] == "chat.completion" and doc["choices"][0]["message"]["role"] == "assistant"
    )
    body = _post(served.base_url + "/v1/chat/completions", {**msgs, "stream": True})[1].decode()
    chunks = [json.loads(e[6:]) for e in body.split("\n\n") if e.startswith("data: {")]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[0]["object"] == "chat.completion.chunk"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == doc["choices"][0]["message"]["content"]


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        ({"prompt": "", "max_tokens": 4}, 400, "prompt must be a non-empty string"),
        ({"prompt": "a", "max_tokens": 0}, 400, "max_tokens must be an integer in 1..4096"),
        ({"prompt": "a", "stop": [""]}, 400, "stop must be a string or a list"),
        ({"prompt": "a", "stream": "yes"}, 400, "stream must be a boolean"),
        (b"{not json", 400, "body is not JSON"),
    ],
)
def test_bad_requests_get_400(
    served: srv.ServerSpec, body: object, code: int, message: str
) -> None:
    raw = body if isinstance(body, bytes) else None
    got, data = _post(served.base_url + "/v1/completions", body, raw)
    assert got == code and json.loads(data)["error"]["message"].startswith(message)


def test_models_and_unknown_routes(served: srv.ServerSpec) -> None:
    with urllib.request.urlopen(served.base_url + "/v1/models", timeout=10) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "relpipe-tiny"
    assert _post(served.base_url + "/v1/embeddings", {})[0] == 404


def test_streamer_holds_back_a_possible_stop_prefix() -> None:
    pieces: list[str] = []
    s = Streamer(["STOP"], pieces.append)
    assert not any(s.feed(t) for t in b"abcST")
    assert "".join(pieces) == "ab"  # "cST" could still begin "STOP"
    assert s.feed(ord("O")) is False and s.feed(ord("P")) is True
    s.finish()
    assert "".join(pieces) == "abc" and s.stopped


def test_health_wait_fails_for_a_server_that_exits(tmp_path: Path) -> None:
    spec = srv.ServerSpec(
        engine="relpipe", argv=(sys.executable, "-c", "raise SystemExit(3)"), port=_free_port()
    )
    proc = srv.start(spec, str(tmp_path / "log"))
    with pytest.raises(srv.EngineError, match="server exited with code 3 before it was healthy"):
        srv.wait_healthy(spec, proc, timeout=30)
