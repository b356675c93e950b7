"""GitHub's REST API, the few calls a bump pull request needs: find, open, edit and label a PR.

httpx (already the `images` extra's HTTP client) rather than PyGithub or githubkit: four endpoints
do not justify a generated client of GitHub's thousand, and httpx gives what matters here directly:
an `httpx.Auth` that attaches the token only to the configured API origin (`TokenAuth`), a retry
transport for 5xx answers (`RetryTransport`, go-containerregistry's `retry.go` shape), explicit
timeouts, and one client reused. Every request is built as an `ApiRequest` first, so `--dry-run`
prints exactly what would be sent, and the tests validate every sent request against GitHub's own
OpenAPI description (Prism, tests/github_api.py).

Credentials: `GITHUB_TOKEN`, then `GH_TOKEN`, then gh's stored login (`hosts.yml` under
`$GH_CONFIG_DIR` or ~/.config/gh) for the API's host. A token is never logged, never put in an
error, and never sent to any origin but the configured API URL.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..core import instant, jsonload, sanitize
from ..core.errors import require
from ..core.yamlload import load_yaml
from .errors import PipelineError

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
RETRY_STATUSES = (500, 502, 503, 504)
TIMEOUT_S = 30.0  # connect, and each read or write
DEADLINE_S = 120.0  # one whole request: retries, waits and the answer's last byte
MAX_ANSWER = 16 * 1024 * 1024  # a list of 100 pull requests is about 2 MB
MAX_BODY = 65536  # GitHub's limit on a PR body, in characters
MAX_NUMBER = 2**31 - 1  # GitHub's issue and PR numbers are 32-bit
_DEADLINE = "relpipe.deadline"  # the request extension the retry transport reads


class GitHubError(PipelineError):
    """The API refused or failed a request; the message names what to do (exit 2)."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True)
class ApiRequest:
    """One REST call: what `--dry-run` prints and what the client sends, the same bytes."""

    method: str
    path: str  # below the API URL, starting with /
    params: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None

    def render(self, api_url: str) -> str:
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in self.params.items())
        line = f"{self.method} {api_url.rstrip('/')}{self.path}{'?' + query if query else ''}"
        if self.body is None:
            return line
        return f"{line}\n{sanitize.json_text(self.body, indent=2, sort_keys=True)}"


@dataclass(frozen=True, kw_only=True)
class Pull:
    """The fields of a pull request relpipe reads."""

    number: int
    state: str  # "open" | "closed"
    merged: bool
    html_url: str
    head_ref: str

    @classmethod
    def from_json(cls, raw: Any) -> Pull:
        try:
            number = raw["number"]
            # bool is an int, and 1e400 parses as a float (inf): neither is a PR number
            if isinstance(number, bool) or not isinstance(number, int):
                raise TypeError(number)
            if not 1 <= number <= MAX_NUMBER:
                raise ValueError(number)
            return cls(
                number=number,
                state=str(raw["state"]),
                merged=raw.get("merged_at") is not None,
                html_url=str(raw["html_url"]),
                head_ref=str(raw["head"]["ref"]),
            )
        except (KeyError, TypeError, ValueError):
            raise GitHubError(
                "GitHub answered a pull request without a number (1 to 2**31-1), state, html_url "
                "or head; check --api-url"
            ) from None


def _repo_path(repo: str) -> str:
    owner, _, name = repo.partition("/")
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"


def list_pulls_request(repo: str, head: str, head_owner: str | None = None) -> ApiRequest:
    """The PRs of `repo` whose head is `head_owner:head` (a fork's owner, else `repo`'s)."""
    owner = head_owner or repo.split("/", 1)[0]
    return ApiRequest(
        method="GET",
        path=f"{_repo_path(repo)}/pulls",
        params={"head": f"{owner}:{head}", "state": "all", "per_page": "100"},
    )


def create_pull_request(
    repo: str, *, title: str, body: str, head: str, base: str, fork: bool = False
) -> ApiRequest:
    """POST a PR; from a fork `head` is `owner:branch` and the maintainers may push to it."""
    fields: dict[str, Any] = {"title": title, "body": body, "head": head, "base": base}
    if fork:
        fields["maintainer_can_modify"] = True
    return ApiRequest(method="POST", path=f"{_repo_path(repo)}/pulls", body=fields)


def get_repo_request(repo: str) -> ApiRequest:
    return ApiRequest(method="GET", path=_repo_path(repo))


def get_user_request() -> ApiRequest:
    return ApiRequest(method="GET", path="/user")


def update_pull_request(repo: str, number: int, *, title: str, body: str) -> ApiRequest:
    return ApiRequest(
        method="PATCH",
        path=f"{_repo_path(repo)}/pulls/{number}",
        body={"title": title, "body": body},
    )


def add_labels_request(repo: str, number: int, labels: Sequence[str]) -> ApiRequest:
    return ApiRequest(
        method="POST",
        path=f"{_repo_path(repo)}/issues/{number}/labels",
        body={"labels": list(labels)},
    )


def get_label_request(repo: str, name: str) -> ApiRequest:
    return ApiRequest(method="GET", path=f"{_repo_path(repo)}/labels/{quote(name, safe='')}")


# --- credentials ---------------------------------------------------------------------------


def gh_host(api_url: str) -> str:
    """The host gh stores a login under for `api_url` (api.github.com is github.com's API)."""
    host = urlsplit(api_url).hostname or ""
    return "github.com" if host == "api.github.com" else host


def token_from(env: Mapping[str, str], api_url: str, home: Path | None = None) -> str | None:
    """GITHUB_TOKEN, GH_TOKEN, else gh's stored login for the API's host; None when none."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if env.get(name, "").strip():
            return env[name].strip()
    config = Path(env["GH_CONFIG_DIR"]) if env.get("GH_CONFIG_DIR") else None
    if config is None:
        config = (home or Path.home()) / ".config" / "gh"
    hosts = config / "hosts.yml"
    if not hosts.is_file():
        return None

    doc = load_yaml(hosts.read_text(encoding="utf-8"), str(hosts), error=GitHubError)
    entry = doc.get(gh_host(api_url)) if isinstance(doc, dict) else None
    token = entry.get("oauth_token") if isinstance(entry, dict) else None
    return token.strip() if isinstance(token, str) and token.strip() else None


def require_token(env: Mapping[str, str], api_url: str) -> str:
    token = token_from(env, api_url)
    if token is None:
        raise GitHubError(
            f"no GitHub token for {gh_host(api_url)}: set GITHUB_TOKEN or GH_TOKEN, or run "
            "`gh auth login` (or pass --dry-run to print the requests without sending them)"
        )
    return token


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, parts.hostname or "", parts.port or default


# --- the client ----------------------------------------------------------------------------


def _auth_class() -> type:
    httpx = require("httpx", "images")

    class TokenAuth(httpx.Auth):  # type: ignore[misc,name-defined]
        """Bearer token on requests to the API's own origin only (scheme, host and port)."""

        def __init__(self, token: str, api_url: str) -> None:
            self._token = token
            self._origin = _origin(api_url)

        def auth_flow(self, request: Any) -> Any:
            if _origin(str(request.url)) == self._origin:
                request.headers["Authorization"] = f"Bearer {self._token}"
            yield request

        def __repr__(self) -> str:  # never the token
            return f"TokenAuth(origin={self._origin!r})"

    return TokenAuth


def _retry_class() -> type:
    httpx = require("httpx", "images")

    class RetryTransport(httpx.BaseTransport):  # type: ignore[misc,name-defined]
        """Retries 5xx answers (GitHub's transient errors), honouring Retry-After, `tries` times."""

        def __init__(
            self,
            inner: Any,
            tries: int = 4,
            backoff_s: float = 1.0,
            sleep: Callable[..., Any] = time.sleep,
        ) -> None:
            self._inner, self._tries, self._backoff, self._sleep = inner, tries, backoff_s, sleep

        def handle_request(self, request: Any) -> Any:
            deadline = request.extensions.get(_DEADLINE, float("inf"))
            for attempt in range(self._tries):
                response = self._inner.handle_request(request)
                if response.status_code not in RETRY_STATUSES or attempt == self._tries - 1:
                    return response
                after = response.headers.get("retry-after", "")
                delay = min(float(after) if after.isdigit() else self._backoff * 2**attempt, 60.0)
                if time.monotonic() + delay >= deadline:  # no wait past the request's deadline
                    return response
                response.read()
                response.close()
                self._sleep(delay)
            raise AssertionError("unreachable")

        def close(self) -> None:
            self._inner.close()

    return RetryTransport


class GitHub:
    """One httpx client for one API URL; methods send `ApiRequest`s and parse the answers."""

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        transport: Any = None,
        backoff_s: float = 1.0,
        deadline_s: float = DEADLINE_S,
    ) -> None:
        httpx = require("httpx", "images")
        self.api_url = api_url.rstrip("/")
        self.deadline_s = deadline_s
        inner = transport or httpx.HTTPTransport(retries=1)
        self._client = httpx.Client(
            base_url=self.api_url,
            auth=_auth_class()(token, self.api_url),
            transport=_retry_class()(inner, backoff_s=backoff_s),
            timeout=min(TIMEOUT_S, deadline_s),
            follow_redirects=False,
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "relpipe",
            },
        )

    def __enter__(self) -> GitHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def send(self, req: ApiRequest, *, ok: Sequence[int] = (200, 201)) -> Any:
        """Send `req` and parse the answer, all within one deadline (`deadline_s`): a server that
        drips its answer a byte at a time is cut off there, not after minutes of slow reads."""
        httpx = require("httpx", "images")
        where = f"{req.method} {self.api_url}{req.path}"
        deadline = time.monotonic() + self.deadline_s
        request = self._client.build_request(
            req.method,
            req.path,
            params=dict(req.params),
            json=req.body,
            extensions={_DEADLINE: deadline},
        )
        try:
            response = self._client.send(request, stream=True)
            try:
                content = _read_within(response, deadline)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            raise GitHubError(
                f"{where}: {type(exc).__name__}; check --api-url and the network, then retry"
            ) from None
        except _Late:
            raise GitHubError(
                f"{where}: no whole answer within the {self.deadline_s:g} s deadline of one "
                "request; retry later (or raise --api-deadline)"
            ) from None
        except _TooLarge:
            raise GitHubError(
                f"{where}: the answer is over {MAX_ANSWER} bytes; check --api-url"
            ) from None
        if response.status_code not in ok:
            raise api_error(req, self.api_url, response.status_code, response.headers, content)
        if response.status_code == 404:
            return None
        try:
            return jsonload.loads(content)
        except ValueError:
            raise GitHubError(f"{where}: the answer is not JSON; check --api-url") from None

    def pulls_for(self, repo: str, branch: str, head_owner: str | None = None) -> list[Pull]:
        raw = self.send(list_pulls_request(repo, branch, head_owner), ok=(200,))
        if not isinstance(raw, list):
            raise GitHubError("GitHub's pull list is not a list; check --api-url")
        return [p for p in map(Pull.from_json, raw) if p.head_ref == branch]

    def default_branch(self, repo: str) -> str:
        raw = self.send(get_repo_request(repo), ok=(200,))
        name = raw.get("default_branch") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name or len(name) > 255:
            raise GitHubError(f"GitHub named no default branch of {repo}; pass --base BRANCH")
        return name

    def login(self) -> str:
        raw = self.send(get_user_request(), ok=(200,))
        name = raw.get("login") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name or len(name) > 100:
            raise GitHubError("GitHub named no login for the token; pass --fork-owner OWNER")
        return name

    def label_exists(self, repo: str, name: str) -> bool:
        return self.send(get_label_request(repo, name), ok=(200, 404)) is not None


class _Late(Exception):
    """The request's deadline passed before its answer's last byte."""


class _TooLarge(Exception):
    """The answer is over MAX_ANSWER bytes."""


def _read_within(response: Any, deadline: float) -> bytes:
    """The answer's bytes, checking the deadline and the size cap after every chunk (each read
    is itself bounded by the client's read timeout)."""
    chunks: list[bytes] = []
    size = 0
    if time.monotonic() > deadline:
        raise _Late
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER:
            raise _TooLarge
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise _Late
    return b"".join(chunks)


def api_error(
    req: ApiRequest, api_url: str, status: int, headers: Mapping[str, str], content: bytes
) -> GitHubError:
    """One line naming what went wrong and what to do; GitHub's own words sanitised."""
    where = f"{req.method} {api_url}{req.path}"
    message = ""
    try:
        doc = jsonload.loads(content)
        parts = [str(doc.get("message", ""))] + [
            str(e.get("message") or e.get("code") or "")
            for e in doc.get("errors") or []
            if isinstance(e, dict)
        ]
        message = "; ".join(p for p in parts if p)
    except (ValueError, AttributeError):
        pass
    said = f" ({sanitize.terminal(message, limit=300)})" if message else ""
    if status == 401:
        return GitHubError(
            f"{where}: 401 bad credentials{said}; set GITHUB_TOKEN/GH_TOKEN to a valid token "
            "or run `gh auth login`"
        )
    if status in (403, 429) and (headers.get("x-ratelimit-remaining") == "0" or status == 429):
        # A reset no calendar holds (99999999999999999999) is "later", never an overflow.
        reset = instant.from_epoch(headers.get("x-ratelimit-reset", ""))
        when = reset.strftime("%H:%M:%S UTC") if reset is not None else "later"
        return GitHubError(f"{where}: {status} rate limit exhausted; retry after {when}")
    wait = headers.get("retry-after", "")
    if status == 403 and wait.isdigit():
        seconds = f"{int(wait)} s" if len(wait) <= 6 else "a while"
        return GitHubError(f"{where}: 403 secondary rate limit{said}; retry in {seconds}")
    if status == 403:
        return GitHubError(
            f"{where}: 403 forbidden{said}; the token needs pull-requests: write and "
            "contents: write on the repository"
        )
    if status == 404:
        return GitHubError(f"{where}: 404 not found; check --repo and that the token can see it")
    if status == 422:
        return GitHubError(f"{where}: 422 GitHub refused the request{said}; fix it and retry")
    if status >= 500:
        return GitHubError(f"{where}: {status} from GitHub after retries; retry later")
    return GitHubError(f"{where}: unexpected {status}{said}; check --api-url")


def env_token(api_url: str) -> str:
    return require_token(os.environ, api_url)
