"""GitHub's REST API for tests: Prism serving GitHub's own OpenAPI description, on loopback.

* `prism_url()`: Prism (`@stoplight/prism-cli`, npm) mocking `api.github.com.json` from
  `@octokit/openapi` (npm), both installed once with npm into a cache folder
  (`~/.cache/relpipe/prism/<versions>/`, or `$RELPIPE_PRISM_CACHE`) and started once per test
  session. Prism validates every request against GitHub's published contract (method, path,
  parameters, body schema) and answers a violating one with 422 and an `sl-violations` header.
* `GitHubDouble`: a small loopback proxy in front of Prism, the one stateful layer, kept here in
  the tests. EVERY request goes to Prism first; a request Prism rejects is recorded in
  `violations` (the tests assert there are none) and answered with Prism's 422. Only for what a
  test needs across calls does the proxy answer from its own state: the pull requests created
  through it (list by head, get, edit, label; a test can close or merge one as someone else
  would), the labels the repository has, and faults a test injects (401, 403 with rate-limit
  headers, 422, 5xx) at the network boundary.

Prism needs node and npm; where they (or the npm registry) are missing a test skips with one
line, under CI=true it fails.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from corpus import unavailable

from relpipe.core.files import file_lock

PRISM = "@stoplight/prism-cli@5.14.2"
OPENAPI = "@octokit/openapi@23.0.2"
CACHE = Path(os.environ.get("RELPIPE_PRISM_CACHE", Path.home() / ".cache/relpipe/prism"))
SPEC = "node_modules/@octokit/openapi/generated/api.github.com.json"
START_TIMEOUT_S = 180
SWEEP_LABELS = (
    "full-sweep-fail-fast",
    "full-sweep-enabled",
    "non-canary-full-sweep-enabled",
    "all-evals",
    "evals-only",
    "agentx-fast",
)


def prism_install() -> Path:
    """The npm prefix holding Prism and GitHub's description (installed once, cached)."""
    prefix = CACHE / re.sub(r"[^A-Za-z0-9.]+", "-", f"{PRISM}-{OPENAPI}").strip("-")
    CACHE.mkdir(parents=True, exist_ok=True)
    with file_lock(CACHE / "install.lock", timeout_s=900, what="prism install lock"):
        if not (prefix / ".ready").is_file():
            try:
                done = subprocess.run(
                    [
                        "npm",
                        "install",
                        "--no-audit",
                        "--no-fund",
                        "--prefix",
                        str(prefix),
                        PRISM,
                        OPENAPI,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=False,
                )
            except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
                unavailable(f"cannot install Prism with npm: {exc}")
            if done.returncode != 0:
                unavailable(f"cannot install Prism with npm: {done.stderr.strip()[-300:]}")
            (prefix / ".ready").write_text("ok\n")
    return prefix


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Prism:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


def start_prism(workdir: Path) -> Prism:
    prefix = prism_install()
    port = free_port()
    log = workdir / "prism.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(prefix / "node_modules/.bin/prism"),
                "mock",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                str(prefix / SPEC),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            unavailable(f"Prism exited with {proc.returncode}: {log.read_text()[-300:]}")
        if b"Prism is listening" in log.read_bytes():
            return Prism(f"http://127.0.0.1:{port}", proc, log)
        time.sleep(0.2)  # polling Prism's own "listening" line, not a fixed wait
    proc.kill()
    unavailable(f"Prism did not start in {START_TIMEOUT_S}s; see {log}")
    raise AssertionError("unreachable")


DRIP = "x-test-drip-s"  # the double's own note to itself, never sent


@dataclass
class Fault:
    method: str
    path: str  # regex on the path
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"message": "injected"})
    times: int = 1
    applied: bool = False  # the request takes effect, only its answer is the fault (a lost reply)
    raw: bytes | None = None  # the answer's bytes as sent (JSON json.dumps cannot write: 1e400)
    drip_s: float = 0.0  # send the answer one byte per `drip_s` seconds


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    status: int


class GitHubDouble:
    """The stateful proxy in front of Prism (see the module docstring)."""

    def __init__(self, prism_url: str) -> None:
        self.prism = httpx.Client(base_url=prism_url, timeout=60)
        self.pulls: dict[int, dict[str, Any]] = {}
        self.labels: set[str] = set(SWEEP_LABELS)
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.violations: list[str] = []
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                double.handle(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.prism.close()

    # -- what tests do as "someone else" --
    def close_pull(self, number: int, *, merged: bool = False) -> None:
        self.pulls[number]["state"] = "closed"
        self.pulls[number]["merged_at"] = "2026-11-30T00:00:00Z" if merged else None

    def sent(self, method: str, pattern: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and re.fullmatch(pattern, s.path)]

    # -- the proxy --
    def handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        raw = h.rfile.read(int(h.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in h.headers.items()}
        # Not `accept`: GitHub's `application/vnd.github+json` is served as the description's
        # `application/json`, a media type Prism's content negotiation does not know.
        forward = {k: v for k, v in headers.items() if k in ("content-type", "authorization")}
        answer = self.prism.request(h.command, h.path, content=raw, headers=forward)
        body = json.loads(raw) if raw else None
        violations = [
            v
            for v in json.loads(answer.headers.get("sl-violations", "[]"))
            if v.get("location", [""])[0] == "request"
        ]
        with self._lock:
            # A request GitHub's contract accepts gets a 2xx from Prism; anything else is a defect.
            if violations or answer.status_code >= 400:
                self.violations += [
                    f"{h.command} {parts.path}: {v['message']}" for v in violations
                ] or [f"{h.command} {parts.path}: Prism answered {answer.status_code}"]
                status, out, extra = answer.status_code, answer.content, {}
            else:
                status, out, extra = self._answer(
                    h.command, parts.path, parse_qs(parts.query), body, answer
                )
            self.seen.append(Seen(h.command, parts.path, parts.query, headers, body, status))
        drip = float(extra.pop(DRIP, "0"))
        h.send_response(status)
        h.send_header("content-type", "application/json")
        for k, v in extra.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(out)))
        h.end_headers()
        if not drip:
            h.wfile.write(out)
            return
        try:
            for i in range(len(out)):
                h.wfile.write(out[i : i + 1])
                h.wfile.flush()
                time.sleep(drip)  # the fault itself: a server that drips its answer
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def _fault_for(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.method == method and re.fullmatch(fault.path, path) and fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def _answer(
        self, method: str, path: str, query: dict[str, list[str]], body: Any, answer: httpx.Response
    ) -> tuple[int, bytes, dict[str, str]]:
        fault = self._fault_for(method, path)
        if fault is not None:
            if fault.applied:
                self._route(method, path, query, body, answer)
            out = fault.raw if fault.raw is not None else json.dumps(fault.body).encode()
            return fault.status, out, {**fault.headers, DRIP: str(fault.drip_s)}
        return self._route(method, path, query, body, answer)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any, answer: httpx.Response
    ) -> tuple[int, bytes, dict[str, str]]:
        if method == "GET" and re.fullmatch(r"/repos/[^/]+/[^/]+", path):
            # the bare remotes' default branch is main (Prism's example says master)
            return 200, json.dumps({**answer.json(), "default_branch": "main"}).encode(), {}
        m = re.fullmatch(
            r"/repos/([^/]+)/([^/]+)/(pulls|labels|issues)(?:/([^/]+))?(/labels)?", path
        )
        if m is None:
            return answer.status_code, answer.content, {}
        owner, repo, kind, item, tail = m.groups()
        if kind == "labels" and method == "GET" and item:
            if item not in self.labels:
                return 404, b'{"message": "Not Found"}', {}
            return 200, json.dumps({**answer.json(), "name": item}).encode(), {}
        if kind == "pulls":
            return self._pulls(method, owner, repo, item, query, body, answer)
        if kind == "issues" and tail and method == "POST":
            pull = self.pulls.get(int(item or 0))
            if pull is None:
                return 404, b'{"message": "Not Found"}', {}
            names = [x["name"] for x in pull["labels"]] + [
                n for n in body["labels"] if n not in pull["labels"]
            ]
            pull["labels"] = [{**answer.json()[0], "name": n} for n in dict.fromkeys(names)]
            return 200, json.dumps(pull["labels"]).encode(), {}
        return answer.status_code, answer.content, {}

    def _pulls(
        self,
        method: str,
        owner: str,
        repo: str,
        item: str | None,
        query: dict[str, list[str]],
        body: Any,
        answer: httpx.Response,
    ) -> tuple[int, bytes, dict[str, str]]:
        if method == "GET" and item is None:
            head = query.get("head", [""])[0]
            state = query.get("state", ["open"])[0]
            found = [
                p
                for p in self.pulls.values()
                if p["head"]["label"] == head and state in ("all", p["state"])
            ]
            return 200, json.dumps(found).encode(), {}
        if method == "POST" and item is None:
            # `head` is `owner:branch` from a fork, else a branch of this repository
            label = body["head"] if ":" in body["head"] else f"{owner}:{body['head']}"
            if any(
                p["head"]["label"] == label and p["state"] == "open" for p in self.pulls.values()
            ):
                return (
                    422,
                    json.dumps(
                        {
                            "message": "Validation Failed",
                            "errors": [{"message": "A pull request already exists"}],
                        }
                    ).encode(),
                    {},
                )
            number = len(self.pulls) + 1
            pull = answer.json()
            pull.update(
                number=number,
                state="open",
                title=body["title"],
                body=body.get("body"),
                merged_at=None,
                labels=[],
                html_url=f"https://github.com/{owner}/{repo}/pull/{number}",
            )
            pull["head"] = {**pull["head"], "ref": label.split(":", 1)[1], "label": label}
            pull["base"] = {**pull["base"], "ref": body["base"]}
            self.pulls[number] = pull
            return 201, json.dumps(pull).encode(), {}
        pull = self.pulls.get(int(item or 0))
        if pull is None:
            return 404, b'{"message": "Not Found"}', {}
        if method == "PATCH":
            pull.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
        return 200, json.dumps(pull).encode(), {}


def prism_session(tmp_root: Path) -> Iterator[Prism]:
    prism = start_prism(tmp_root)
    try:
        yield prism
    finally:
        prism.proc.terminate()
        try:
            prism.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prism.proc.kill()
