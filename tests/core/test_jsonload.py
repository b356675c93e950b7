"""Deeply nested JSON at every boundary (issue 27.4): one line and exit 1 or 2, never a
RecursionError (exit 3).

`core.jsonload.loads` is the one loader: a property test holds its nesting count equal to the
parser's own view over generated documents (brackets inside strings and escapes included), and
each entry point the attack run broke gets 100,000 nested arrays through the real command or the
real registry client: `review --results`, `review --facts`, `notes check --facts`, a manifest and
a tag list served by a fault-injecting proxy in front of the loopback registry, and a token from
a token server. A layering rule keeps `json.loads` out of every other module.
"""

from __future__ import annotations

import ast
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from registry_support import Fault, FaultProxy, push_image, unique_repo

from relpipe.core import jsonload, numbers
from relpipe.images.errors import ImageError
from relpipe.images.manifest import DOCKER_MANIFEST
from relpipe.images.registry import RegistryClient, RetryPolicy
from tests.support import git

DEEP = b"[" * 100_000 + b"]" * 100_000
ROOT = Path(__file__).resolve().parents[2]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-numbers.LIMIT, numbers.LIMIT)  # the bounded-number policy (test_numbers.py)
    | st.text(alphabet='[]{}"\\ab\u202e\n', max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=150, deadline=None)
@given(value=JSON, indent=st.sampled_from([None, 1]))
def test_the_nesting_count_is_the_parsers_and_documents_within_it_parse_unchanged(
    value: Any, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert jsonload.depth(text.encode()) == _depth(value)
    assert jsonload.loads(text.encode(), max_depth=_depth(value)) == value
    if _depth(value):
        with pytest.raises(jsonload.JSONLimitError, match="levels deep"):
            jsonload.loads(text, max_depth=_depth(value) - 1)


def test_deep_and_oversize_documents_are_refused_before_parsing() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested more than 64 levels deep"):
        jsonload.loads(DEEP)
    with pytest.raises(ValueError, match="over the 10-byte limit"):
        jsonload.loads(b'"' + b"x" * 10 + b'"', max_bytes=10)


def _relpipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relpipe.pipeline", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(out: subprocess.CompletedProcess[str], code: int, says: str) -> None:
    assert out.returncode == code, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "RecursionError" not in out.stdout + out.stderr
    assert out.stderr.count("\n") <= 1 and says in out.stderr + out.stdout


def test_review_results_facts_and_notes_check_refuse_deep_json(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "configs").mkdir()  # an InferenceX layout (changelog.repository), with no keys
    (repo / "configs" / "x-master.yaml").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "an empty master")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "agg_1.json").write_bytes(DEEP)
    (tmp_path / "facts.json").write_bytes(DEEP)
    (tmp_path / "notes.md").write_text("# notes\n")
    review = ["review", "--repo", str(repo), "--check"]
    # A result that cannot be read may hide a point: the pareto check FAILs naming the file
    # (issue 34.11: it was a WARN, exit 0, "no result in InferenceX's format").
    results = _relpipe(*review, "pareto", "--results", "results", "--json", cwd=tmp_path)
    assert results.returncode == 1 and "RecursionError" not in results.stdout + results.stderr
    (check,) = json.loads(results.stdout)["checks"]
    assert check["status"] == "FAIL"
    assert check["reason"] == "result file agg_1.json refused: nested more than 64 levels deep"
    assert ["agg_1.json", "refused: nested more than 64 levels deep"] in check["evidence"]
    facts = _relpipe(*review, "notes", "--facts", "facts.json", "--body", "notes.md", cwd=tmp_path)
    _one_line(facts, 2, "levels deep")
    notes = _relpipe("notes", "check", "notes.md", "--facts", "facts.json", cwd=tmp_path)
    _one_line(notes, 2, "facts file facts.json is not valid UTF-8 JSON (nested more than 64 levels")


@pytest.fixture
def proxy(registry: str) -> Iterator[FaultProxy]:
    p = FaultProxy(registry)
    yield p
    p.close()


def _client() -> RegistryClient:
    return RegistryClient(retry=RetryPolicy(attempts=1, base_s=0.01, max_s=0.01))


def test_a_deep_manifest_and_tag_list_from_the_registry_are_one_line(
    registry: str, proxy: FaultProxy
) -> None:
    repo = unique_repo(registry, "deep")
    with RegistryClient() as client:
        push_image(client, repo, "nightly_1")
    path = repo.split("/", 1)[1]
    # The tag resolves to the deep document's digest, which the GET then serves: it hashes right.
    deep = Fault("deep-json", media_type=DOCKER_MANIFEST)
    proxy.program(r"/manifests/", deep, method="HEAD")
    proxy.program(r"/manifests/", deep, method="GET")
    with _client() as client, pytest.raises(ImageError) as err:
        client.pin(f"{proxy.addr}/{path}:nightly_1")
    assert "levels deep" in str(err.value) and "\n" not in str(err.value)
    proxy.program(r"/tags/list", Fault("deep-json"), method="GET")
    with _client() as client, pytest.raises(ImageError) as err:
        client.list_tags(f"{proxy.addr}/{path}")
    assert "tag list is not valid JSON" in str(err.value)
    assert [k for _, _, k in proxy.log if k != "pass"] == ["deep-json"] * 3


class _DeepTokenRegistry:
    """A registry that asks for a Bearer token and a token server that answers DEEP: one port."""

    def __init__(self) -> None:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                if self.path.startswith("/token"):
                    outer.token_requests += 1
                    self._send(200, DEEP, [])
                else:
                    realm = f'Bearer realm="http://{outer.addr}/token",service="deep"'
                    self._send(401, b"{}", [("WWW-Authenticate", realm)])

            do_HEAD = do_GET  # noqa: N815 - http.server API

            def _send(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
                self.send_response(status)
                for k, v in [("Content-Type", "application/json"), *headers]:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        self.token_requests = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()


def test_a_deep_token_response_is_one_line() -> None:
    server = _DeepTokenRegistry()
    try:
        with _client() as client, pytest.raises(ImageError) as err:
            client.pin(f"{server.addr}/rocm/atom-dev:nightly_1")
    finally:
        server.server.shutdown()
        server.server.server_close()
    assert server.token_requests >= 1
    assert "token server response is not JSON" in str(err.value) and "\n" not in str(err.value)


def test_no_module_parses_json_but_the_bounded_loader() -> None:
    """`json.loads`/`json.load` appear only in core/jsonload.py (and the engine's own payload)."""
    offenders = []
    for layer in ("core", "pipeline", "validate", "changelog", "images"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            # doctor_probe.py runs in the benchmark repository's own interpreter (stdlib only).
            if path in (ROOT / "core" / "jsonload.py", ROOT / "pipeline" / "doctor_probe.py"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in ("loads", "load")
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "json"
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
