"""The bump pull request: a release's changes as one commit on a branch per config key, pushed,
and opened (or brought up to date) through GitHub's REST API.

A `Bump` is read from the benchmark repository's working tree after `relpipe release` (or
`relpipe revert`) wrote it: the changed config and lock files as a patch against HEAD, and the
appended perf-changelog entries parsed back (`changelog.entry.parse_appended`). `publish` then
1. asks GitHub for the branch's pull requests: a PR closed or merged by someone else is never
   reopened nor overwritten, `open` refuses an existing one, `update` needs one;
2. checks the labels (exactly one primary sweep label, modifiers only beside it, each one existing
   in the repository) before anything is written;
3. builds one commit on the remote's CURRENT base in a temporary worktree: the patch applied, and
   each entry re-appended at the base's end with `changelog.append.appended_bytes` (byte for byte
   the entry the release rendered, wherever main has moved), committed with the user's git
   identity, and the perf-changelog hook (`validate.gate.cli.main`) run on it; a failing hook
   leaves no branch pointing at the commit;
4. pushes with `--force-with-lease` on the branch's old value (a branch that appeared meanwhile,
   or was moved by someone else, is refused);
5. opens the PR (then labels it) or edits its title and body; if opening fails the push is undone,
   so no branch is left without its PR. A placeholder pr-link (`XXX`) becomes the PR's own link:
   on update at once, on open as soon as GitHub has numbered the PR (the commit rebuilt and pushed
   again with the lease on the one just pushed).
`--dry-run` prints the git steps and the exact REST requests, needs no token and sends nothing.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..changelog.append import appended_bytes
from ..changelog.configs.semdiff import load_yaml
from ..changelog.entry import parse_appended
from ..changelog.errors import ChangelogError
from ..core import jsoncodec, jsonload, process, sanitize
from ..core.files import write_atomic
from ..core.record import replace as replace_record
from ..validate.gate.hook import placeholders
from . import github as gh
from .errors import PipelineError
from .workspace import Workspace

if TYPE_CHECKING:
    from ..changelog.entry import Entry

PRIMARY_LABELS = ("full-sweep-fail-fast", "full-sweep-enabled", "non-canary-full-sweep-enabled")
MODIFIER_LABELS = ("all-evals", "evals-only", "agentx-fast")
DEFAULT_LABELS = ("full-sweep-enabled",)
BRANCH_PREFIX = "relpipe/bump/"
BRANCH_REVERT = "relpipe/revert/"


class PullRequestRefused(PipelineError):
    """The PR cannot be opened or updated as asked (checked refusal, exit 1)."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class Bump:
    """What the pull request carries, read from the working tree."""

    config_keys: tuple[str, ...]
    patch: bytes  # `git diff HEAD` of every changed file but the changelog
    entries: tuple[Entry, ...]  # the appended perf-changelog entries, in order
    title: str
    body: str


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where the PR goes: the local clone, its remote and base, the GitHub repository."""

    root: Path
    github_repo: str  # owner/name of the canonical repository: the PR is opened there
    remote: str = "origin"  # the canonical repository's remote: the base is fetched from it
    base: str | None = "main"  # None: the canonical repository's default branch (asked)
    branch: str = ""
    push_remote: str | None = None  # a fork's remote: the branch is pushed there
    fork_owner: str | None = None  # the fork's owner (head = owner:branch); None: asked
    api_url: str = gh.DEFAULT_API_URL
    api_deadline_s: float = gh.DEADLINE_S
    labels: tuple[str, ...] = DEFAULT_LABELS

    @property
    def repo_url(self) -> str:
        return f"https://github.com/{self.github_repo}"

    @property
    def pushes_to(self) -> str:
        return self.push_remote or self.remote

    @property
    def fork(self) -> bool:
        return self.push_remote is not None and self.push_remote != self.remote


def github_name(url: str | None) -> str | None:
    """`owner/name` of a GitHub remote URL (https, ssh or scp-like), else None."""
    if not url:
        return None
    for prefix in ("https://github.com/", "http://github.com/", "ssh://git@github.com/"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            break
    else:
        if not url.startswith("git@github.com:"):
            return None
        rest = url[len("git@github.com:") :]
    rest = rest.removesuffix("/").removesuffix(".git")
    parts = rest.split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return "/".join(parts)


def remote_urls(root: Path) -> dict[str, str]:
    """name -> fetch URL of the clone's remotes."""
    out: dict[str, str] = {}
    for line in git(root, "remote", "-v").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "(fetch)":
            out[fields[0]] = fields[1]
    return out


def canonical_repository(root: Path, given: str | None) -> str:
    """The canonical repository (`owner/name`) the PR is opened on: `--github-repo`, else the
    one the benchmark repository declares (`.relpipe.toml` `repository`)."""
    if given:
        return given
    declared = Workspace(root).checkout.repository
    name = github_name(declared)
    if name is None:
        raise PipelineError(
            "which repository is the PR for? pass --github-repo OWNER/NAME (or declare "
            '`repository = "https://github.com/OWNER/NAME"` in .relpipe.toml)'
        )
    return name


def with_fork(target: Target) -> Target:
    """The fork workflow, detected: when `--remote` (origin) is not the canonical repository,
    the branch is pushed there (the fork) and the base is fetched from the remote that is the
    canonical repository (upstream); the PR's head is `owner:branch`. A `--push-remote` given
    explicitly is used as is (its owner from its URL, else `--fork-owner`, else asked)."""
    urls = remote_urls(target.root)
    canonical = target.github_repo.lower()
    if target.push_remote is not None:
        if target.push_remote not in urls:
            raise PipelineError(f"--push-remote {target.push_remote}: no such git remote")
        owner = target.fork_owner or (github_name(urls[target.push_remote]) or "").split("/")[0]
        return replace(target, fork_owner=owner or None)
    origin = github_name(urls.get(target.remote))
    if origin is None or origin.lower() == canonical:
        return target
    upstream = next(
        (n for n, u in sorted(urls.items()) if (github_name(u) or "").lower() == canonical), None
    )
    if upstream is None:
        raise PipelineError(
            f"{target.remote} is {origin}, a fork of {target.github_repo}, and no remote is "
            f"{target.github_repo}: git remote add upstream https://github.com/"
            f"{target.github_repo}, then retry"
        )
    return replace(
        target,
        remote=upstream,
        push_remote=target.remote,
        fork_owner=target.fork_owner or origin.split("/")[0],
    )


@dataclass(frozen=True, kw_only=True)
class Outcome:
    action: str  # "opened" | "updated" | "dry-run"
    number: int | None
    url: str | None
    branch: str
    commit: str | None
    requests: tuple[str, ...] = field(default_factory=tuple)


def branch_for(config_keys: Sequence[str], prefix: str = BRANCH_PREFIX) -> str:
    """`relpipe/bump/KEY`; for several keys the first key and a hash of them all, so the same
    selection always finds its PR again."""
    if len(config_keys) == 1:
        return prefix + config_keys[0]
    digest = hashlib.sha256("\0".join(sorted(config_keys)).encode()).hexdigest()[:8]
    return f"{prefix}{config_keys[0]}-and-{len(config_keys) - 1}-more-{digest}"


def check_labels(labels: Sequence[str]) -> tuple[str, ...]:
    """Exactly one primary sweep label; modifiers only beside it; nothing else."""
    known = PRIMARY_LABELS + MODIFIER_LABELS
    for label in labels:
        if label not in known:
            raise PipelineError(
                f"unknown label {label!r}: use one of {', '.join(PRIMARY_LABELS)} "
                f"plus any of {', '.join(MODIFIER_LABELS)}"
            )
    primary = [label for label in labels if label in PRIMARY_LABELS]
    if len(primary) != 1:
        raise PipelineError(
            f"{len(primary)} primary sweep labels given ({', '.join(primary) or 'none'}): "
            f"pass exactly one --label of {', '.join(PRIMARY_LABELS)}"
        )
    return tuple(dict.fromkeys(labels))


# --- git ----------------------------------------------------------------------------------


def git(root: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> str:
    return git_bytes(root, args, stdin=stdin, check=check).decode("utf-8", "replace")


def git_bytes(
    root: Path,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> bytes:
    """git in `root` (through `core.process`: no shell, capped output, a timeout); a failure is
    one line naming git's own error."""
    try:
        done = process.run(
            ["git", "-C", str(root), *args], input=stdin, env=env, check=False, what="git"
        )
    except process.ProcessError as exc:
        raise PipelineError(f"{exc}; is git installed and on PATH?") from None
    if check and done.returncode != 0:
        detail = process.first_error(done.stderr, done.returncode)
        raise PipelineError(f"git {args[0]} failed: {detail}")
    return done.stdout


def remote_sha(root: Path, remote: str, branch: str) -> str | None:
    out = git(root, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    return out.split()[0] if out.strip() else None


def release_files(ws: Workspace) -> tuple[str, ...]:
    """What a release or revert writes: the master configs and the changelog (and the lock file
    where the team opted into one)."""
    opted = (str(ws.lock),) if ws.lock is not None else ()
    return (ws.era.masters + "/", str(ws.changelog), *opted)


def read_bump(root: Path, config_keys: Sequence[str], title: str, body: str) -> Bump:
    """The working tree's changes against HEAD: the patch and the appended changelog entries.

    Only what a release writes is taken (config files, changelog, lock file; new ones included);
    the rest of the working tree (relpipe's own `.relpipe/` state, say) is not the PR's. The patch
    is made through a temporary index and a temporary object folder (the repository's objects
    as its alternate), so neither the user's index nor `.git/objects` is written.
    """
    ws = Workspace(root)
    changelog = str(ws.changelog)
    listed = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    paths = sorted(
        {e[3:] for e in listed.split("\0") if len(e) > 3 and e[3:].startswith(release_files(ws))}
    )
    if not paths:
        raise PullRequestRefused(
            "nothing to propose: no changed config, changelog or lock file; "
            "run `relpipe release` first"
        )
    objects = git(root, "rev-parse", "--path-format=absolute", "--git-path", "objects").strip()
    with tempfile.TemporaryDirectory(prefix="relpipe-index-") as tmp:
        (Path(tmp) / "objects" / "pack").mkdir(parents=True)  # git wants an object folder's shape
        env = {
            **os.environ,
            "GIT_INDEX_FILE": str(Path(tmp) / "index"),
            "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
        }
        for args in (["read-tree", "HEAD"], ["add", "-A", "--", *paths]):
            git_bytes(root, args, env=env)
        others = [p for p in paths if p != changelog]
        patch = git_bytes(root, ["diff", "--cached", "--binary", "HEAD", "--", *others], env=env)
    entries: tuple[Entry, ...] = ()
    if changelog in paths:
        entries = appended_entries(
            git_blob(root, f"HEAD:{changelog}"), (root / changelog).read_bytes(), changelog
        )
    return Bump(
        config_keys=tuple(config_keys),
        patch=patch if others else b"",
        entries=entries,
        title=title,
        body=body,
    )


def check_notes(root: Path, bump: Bump, notes: Path) -> None:
    """The notes must be those of the release in the working tree (checked by content): they name
    every key of the bump, the image its config line pins now and the one it pinned at HEAD. A
    notes file of another release (another key, nightly or baseline) is refused in one line."""

    try:
        text = notes.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineError(f"--notes {notes}: cannot read it ({exc})") from None
    ws = Workspace(root)
    for key in bump.config_keys:
        cfg = ws.config_key(key, 1)
        try:
            head = load_yaml(git_blob(root, f"HEAD:{cfg.master}").decode("utf-8"), cfg.master)
        except (ChangelogError, UnicodeDecodeError):
            head = None
        was = head.get(key) if isinstance(head, dict) else None
        old = was.get("image") if isinstance(was, dict) else None
        wanted = [key, cfg.image] + ([old] if isinstance(old, str) and old != cfg.image else [])
        missing = next((w for w in wanted if w not in text), None)
        if missing is not None:
            raise PullRequestRefused(
                f"{notes} are not the notes of the release in the working tree: they do not "
                f"name {sanitize.terminal(missing, limit=200)}; pass that release's notes.md "
                "(or run `relpipe release` again)"
            )


def appended_entries(old: bytes, new: bytes, changelog: str) -> tuple[Entry, ...]:

    try:
        parsed = parse_appended(old, new, changelog)
    except ChangelogError as exc:
        raise PullRequestRefused(f"{exc}; the PR only appends entries") from None
    problems = [f for f in parsed.findings if f.severity == "error"]
    if problems or any(b.entry is None for b in parsed.blocks):
        raise PullRequestRefused(
            f"{changelog}: the appended text is not valid entries; run the hook to see why"
        )
    return tuple(b.entry for b in parsed.blocks if b.entry is not None)


def git_blob(root: Path, spec: str) -> bytes:
    return git_bytes(root, ["cat-file", "blob", spec], check=False)


def build_commit(
    target: Target, bump: Bump, base_sha: str, pr_number: int, labels: Sequence[str]
) -> str:
    """One commit on `base_sha` with the bump, the hook passing on it; returns its sha.

    The commit is made in a temporary worktree and referenced by no branch until it is pushed, so
    a failure here leaves nothing behind.
    """
    with tempfile.TemporaryDirectory(prefix="relpipe-pr-") as tmp:
        work = Path(tmp) / "tree"
        git(target.root, "worktree", "add", "--detach", "--quiet", str(work), base_sha)
        try:
            apply_bump(work, bump)
            git(work, "add", "-A")
            git(work, "commit", "--quiet", "--no-verify", "-m", commit_message(bump))
            sha = git(work, "rev-parse", "HEAD").strip()
            run_hook(work, target, base_sha, sha, pr_number, labels)
            return sha
        finally:
            git(target.root, "worktree", "remove", "--force", str(work), check=False)
            git(target.root, "worktree", "prune", check=False)


def apply_bump(work: Path, bump: Bump) -> None:

    if bump.patch:
        try:
            git(work, "apply", "--3way", "--whitespace=nowarn", stdin=bump.patch)
        except PipelineError as exc:
            raise PullRequestRefused(
                f"the config/lock change no longer applies on the current base ({exc}); "
                "run `relpipe release` again on an up-to-date checkout"
            ) from None
    if bump.entries:
        path = work / Workspace(work).changelog
        data = path.read_bytes() if path.exists() else b""
        try:
            for entry in bump.entries:
                data = appended_bytes(path, data, entry)
        except ChangelogError as exc:
            raise PullRequestRefused(f"{exc}; nothing pushed") from None
        write_atomic(path, data)


MARK = "Relpipe-Bump: "  # the trailer of every commit relpipe writes on a PR branch
_OLD_MARK = "Config key: "  # what relpipe's commits carried before the trailer


def commit_message(bump: Bump) -> str:
    keys = ", ".join(bump.config_keys)
    lines = [bump.title, "", f"{_OLD_MARK}{keys}", f"{MARK}{keys}"]
    return "\n".join(lines) + "\n"


def refuse_foreign_commits(
    target: Target, branch: str, tip: str, base_sha: str, number: int
) -> None:
    """Stop when the PR branch carries a commit relpipe did not write: an update rebuilds the
    branch as one commit on the base, which would drop it. relpipe stops rather than rebuilding
    on top of it: a colleague's commit may change what the release's checks saw."""
    git(target.root, "fetch", "--quiet", target.pushes_to, f"refs/heads/{branch}")
    fetched = git(target.root, "rev-parse", "FETCH_HEAD").strip()
    if fetched != tip:
        raise PullRequestRefused(
            f"{branch} moved on {target.pushes_to} while relpipe read it; run update again"
        )
    listed = git(
        target.root, "rev-list", "--format=%H%x1f%an%x1f%s%x1f%B%x1e", tip, "--not", base_sha
    )
    for record in listed.split("\x1e"):
        body = record.lstrip("\n")
        if not body.startswith("commit ") or "\n" not in body:
            continue
        fields = body.split("\n", 1)[1].split("\x1f")
        if len(fields) < 4:
            continue
        sha, author, subject, message = fields[0].strip(), fields[1], fields[2], fields[3]
        lines = message.splitlines()
        if any(line.startswith((MARK, _OLD_MARK)) for line in lines):
            continue
        said = sanitize.terminal(f'{sha[:12]} "{subject}" by {author}', limit=200)
        raise PullRequestRefused(
            f"PR #{number}'s branch {branch} carries a commit relpipe did not write ({said}); "
            "an update rewrites the branch and would drop it: fold it into the release (or ask "
            "its author to), then run update again; nothing pushed"
        )


def run_hook(
    work: Path, target: Target, base: str, head: str, pr_number: int, labels: Sequence[str]
) -> None:
    """The perf-changelog gate on base..head, as the repository's CI runs it for this PR."""
    argv = ["--base-ref", base, "--head-ref", head, "--repo-url", target.repo_url]
    # PR mode: before the PR exists its number is unknown; the gate accepts the XXX placeholder
    # for any number and checks a concrete link against the one given, as it will once it exists.
    argv += ["--pr-number", str(pr_number)]
    argv += [f"--{m}" for m in ("all-evals", "evals-only") if m in labels]
    code = "import sys; from relpipe.validate.gate.cli import main; sys.exit(main(sys.argv[1:]))"
    done = process.run(
        [sys.executable, "-c", code, *argv], cwd=work, check=False, what="the perf-changelog hook"
    )
    if done.returncode != 0:
        said = (done.stdout or done.stderr).decode("utf-8", "replace").strip().splitlines()
        first = process.one_line(said[0] if said else f"exit {done.returncode}")
        raise PullRequestRefused(
            f"the perf-changelog hook fails on the PR commit: {first}; nothing pushed"
        )


def push(target: Target, sha: str, branch: str, expected: str | None) -> None:
    """Point the remote branch at `sha` only if it is still at `expected` (None: absent)."""
    lease = f"--force-with-lease=refs/heads/{branch}:{expected or ''}"
    try:
        git(
            target.root,
            "push",
            "--quiet",
            "--porcelain",
            lease,
            target.pushes_to,
            f"{sha}:refs/heads/{branch}",
        )
    except PipelineError as exc:
        raise PullRequestRefused(
            f"{target.pushes_to} refused the push of {branch} ({exc}); nothing opened; fix the "
            "remote's permissions or branch protection and retry"
        ) from None


def undo_push(target: Target, sha: str, branch: str, previous: str | None) -> None:
    dest = f"{previous}:refs/heads/{branch}" if previous else f":refs/heads/{branch}"
    git(
        target.root,
        "push",
        "--quiet",
        f"--force-with-lease=refs/heads/{branch}:{sha}",
        target.pushes_to,
        dest,
        check=False,
    )


# --- the pull request -----------------------------------------------------------------------


def publish(
    target: Target,
    bump: Bump,
    *,
    mode: str,
    client: gh.GitHub | None,
    log: Callable[[str], None] = print,
) -> Outcome:
    """Open (`mode="open"`), update (`"update"`) or either (`"sync"`) the bump's PR."""
    labels = check_labels(target.labels)
    branch = target.branch or branch_for(bump.config_keys)
    if client is None:
        return dry_run(target, bump, branch, labels)
    if target.fork and target.fork_owner is None:
        target = replace(target, fork_owner=client.login())
    if target.base is None:
        target = replace(target, base=client.default_branch(target.github_repo))
    live = open_pull_of(client, target, branch, mode)
    previous = remote_sha(target.root, target.pushes_to, branch)
    if previous is not None and live is None:
        raise PullRequestRefused(
            f"branch {branch} already exists on {target.pushes_to} without a PR: pass --branch "
            "NAME or delete that branch"
        )
    for label in labels:
        if not client.label_exists(target.github_repo, label):
            raise PullRequestRefused(
                f"label {label!r} does not exist in {target.github_repo}: create it or pass "
                "another --label"
            )
    git(target.root, "fetch", "--quiet", target.remote, f"refs/heads/{target.base}")
    base_sha = git(target.root, "rev-parse", "FETCH_HEAD").strip()
    if previous is not None and live is not None:
        refuse_foreign_commits(target, branch, previous, base_sha, live.number)
    claimed = linked_number(target, bump)
    if live is not None:
        bump = with_pr_link(bump, target, live.number)
    number = live.number if live else claimed or 1
    sha = build_commit(target, bump, base_sha, number, labels)
    push(target, sha, branch, previous)
    log(f"pushed {sha[:12]} to {target.pushes_to} {branch} (on {target.base} {base_sha[:12]})")
    try:
        if live is not None:
            req = gh.update_pull_request(
                target.github_repo, live.number, title=bump.title, body=bump.body
            )
            pull = gh.Pull.from_json(client.send(req, ok=(200,)))
        else:
            pull = create_pull(client, target, bump, branch)
    except BaseException:  # any failure (an overflowing answer, ^C): no branch without its PR
        undo_push(target, sha, branch, previous)
        raise
    if live is not None:
        return Outcome(
            action="updated", number=pull.number, url=pull.html_url, branch=branch, commit=sha
        )
    sha = link_opened(target, bump, base_sha, sha, branch, pull.number, labels, log)
    client.send(gh.add_labels_request(target.github_repo, pull.number, labels), ok=(200,))
    if claimed is not None and claimed != pull.number:
        log(
            f"warning: the changelog entry links /pull/{claimed} but GitHub numbered the PR "
            f"#{pull.number}; correct the pr-link on the branch"
        )
    return Outcome(
        action="opened", number=pull.number, url=pull.html_url, branch=branch, commit=sha
    )


def with_pr_link(bump: Bump, target: Target, number: int) -> Bump:
    """The bump with each placeholder pr-link (`XXX`, `.../pull/XXX`) made the PR's own link."""

    link = f"{target.repo_url}/pull/{number}"
    unlinked = placeholders(target.repo_url)
    entries = tuple(
        replace_record(entry, pr_link=link) if entry.pr_link in unlinked else entry
        for entry in bump.entries
    )
    return bump if entries == bump.entries else replace(bump, entries=entries)


def link_opened(
    target: Target,
    bump: Bump,
    base_sha: str,
    sha: str,
    branch: str,
    number: int,
    labels: Sequence[str],
    log: Callable[[str], None],
) -> str:
    """Once GitHub has numbered the new PR, its placeholder pr-links become the real link: the
    commit is rebuilt with them (the hook run as PR `number`) and pushed over the one just
    pushed. The PR stays open if that fails; the warning says what to correct."""
    linked = with_pr_link(bump, target, number)
    if linked is bump:
        return sha
    try:
        final = build_commit(target, linked, base_sha, number, labels)
        push(target, final, branch, sha)
    except PipelineError as exc:
        log(f"warning: PR #{number} keeps the XXX pr-link placeholder ({exc})")
        return sha
    log(f"pushed {final[:12]} to {target.pushes_to} {branch} (pr-link of #{number})")
    return final


def open_pull_of(client: gh.GitHub, target: Target, branch: str, mode: str) -> gh.Pull | None:
    """The branch's open PR, or None; refuses what `mode` cannot do (see `publish`)."""
    pulls = client.pulls_for(target.github_repo, branch, target.fork_owner)
    live = [p for p in pulls if p.state == "open"]
    if not live and pulls:
        done = pulls[0]
        how = "merged" if done.merged else "closed"
        raise PullRequestRefused(
            f"PR #{done.number} for {branch} was {how} by someone else; relpipe never reopens or "
            f"overwrites it: delete the branch or pass --branch NAME for a new PR"
        )
    if live and mode == "open":
        raise PullRequestRefused(
            f"PR #{live[0].number} is already open for {branch}; run `relpipe pr update`"
        )
    if not live and mode == "update":
        raise PullRequestRefused(f"no open PR for {branch}; run `relpipe pr open`")
    return live[0] if live else None


def create_pull(client: gh.GitHub, target: Target, bump: Bump, branch: str) -> gh.Pull:
    """POST the PR. When the answer is lost (a 5xx after GitHub created it, then 422 "already
    exists" on the retries), the PR that now exists for the branch is the one we opened."""
    assert target.base is not None
    req = gh.create_pull_request(
        target.github_repo,
        title=bump.title,
        body=bump.body,
        head=head_of(target, branch),
        base=target.base,
        fork=target.fork,
    )
    try:
        return gh.Pull.from_json(client.send(req, ok=(201,)))
    except gh.GitHubError:
        pulls = client.pulls_for(target.github_repo, branch, target.fork_owner)
        made = [p for p in pulls if p.state == "open"]
        if made:
            return made[0]
        raise


def head_of(target: Target, branch: str) -> str:
    """The PR's `head`: `owner:branch` from a fork (GitHub needs it across repositories)."""
    return f"{target.fork_owner or '<your login>'}:{branch}" if target.fork else branch


def linked_number(target: Target, bump: Bump) -> int | None:
    """The PR number the entries' pr-links name (a release made with `--pr-number N`), if any.

    Without one the hook runs with number 1: before the PR exists its number is unknown, and the
    gate accepts the XXX placeholder whatever the number."""
    prefix = f"{target.repo_url}/pull/"
    named = {e.pr_link[len(prefix) :] for e in bump.entries if e.pr_link.startswith(prefix)}
    numbers = sorted(int(n) for n in named if n.isdigit())
    return numbers[0] if numbers else None


def dry_run(target: Target, bump: Bump, branch: str, labels: Sequence[str]) -> Outcome:
    """The git steps and the exact requests `open` would send; no token, no network."""
    repo = target.github_repo
    base = target.base or "<default branch>"
    steps = [
        f"git fetch {target.remote} refs/heads/{base}",
        f"git commit (on {target.remote}/{base}): {bump.title}",
        f"git push --force-with-lease=refs/heads/{branch}: {target.pushes_to} "
        f"<commit>:refs/heads/{branch}",
    ]
    if with_pr_link(bump, target, 0) is not bump:
        steps.append(
            f"once the PR is numbered: git commit with pr-link {target.repo_url}/pull/<number>, "
            f"git push --force-with-lease=refs/heads/{branch}:<commit> {target.pushes_to} "
            f"<linked commit>:refs/heads/{branch}"
        )
    asked = [gh.get_repo_request(repo)] if target.base is None else []
    asked += [gh.get_user_request()] if target.fork and target.fork_owner is None else []
    requests = [
        *asked,
        gh.list_pulls_request(repo, branch, target.fork_owner),
        *(gh.get_label_request(repo, label) for label in labels),
        gh.create_pull_request(
            repo,
            title=bump.title,
            body=bump.body,
            head=head_of(target, branch),
            base=base,
            fork=target.fork,
        ),
        gh.add_labels_request(repo, 0, labels),  # 0: the number GitHub assigns
    ]
    rendered = tuple(steps + [r.render(target.api_url) for r in requests])
    return Outcome(
        action="dry-run", number=None, url=None, branch=branch, commit=None, requests=rendered
    )


@dataclass(frozen=True, kw_only=True)
class PullStatus:
    branch: str
    remote_commit: str | None
    pull: gh.Pull | None

    def to_json(self) -> dict[str, Any]:
        """The fields, with the pull request as `pr`: its number, state (merged or not) and URL."""
        pull = self.pull
        pr = None
        if pull is not None:
            state = "merged" if pull.merged else pull.state
            pr = {"number": pull.number, "state": state, "url": pull.html_url}
        return {**jsoncodec.fields_to_json(self, exclude=("pull",)), "pr": pr}


def status(target: Target, config_keys: Sequence[str], client: gh.GitHub) -> PullStatus:
    branch = target.branch or branch_for(config_keys)
    pulls = client.pulls_for(target.github_repo, branch, target.fork_owner)
    live = [p for p in pulls if p.state == "open"]
    return PullStatus(
        branch=branch,
        remote_commit=remote_sha(target.root, target.pushes_to, branch),
        pull=(live + pulls)[0] if pulls else None,
    )


# --- title and body from the release record --------------------------------------------------


def release_notes(state: Path, config_keys: Sequence[str]) -> Path:
    """notes.md of the newest release record of exactly `config_keys` under the state folder."""
    found: list[tuple[float, Path]] = []
    wanted = sorted(config_keys)
    for run in (state / "releases").glob("*/run.json"):
        try:
            request = jsonload.loads(run.read_text(encoding="utf-8")).get("request", {})
        except (OSError, ValueError):
            continue
        notes = run.parent / "notes.md"
        if not isinstance(request, dict) or not notes.is_file():
            continue
        keys = request.get("config_keys") or [request.get("config_key")]  # older records: one
        if isinstance(keys, list) and sorted(map(str, keys)) == wanted:
            found.append((notes.stat().st_mtime, notes))
    if not found:
        raise PipelineError(
            f"no release record of {', '.join(config_keys)} under {state / 'releases'}: run "
            "`relpipe release` first or pass --notes FILE"
        )
    return max(found)[1]


def title_and_body(notes_path: Path) -> tuple[str, str]:
    """Title: the notes' `# ` heading; body: the bilingual notes and the validation summary."""
    text = notes_path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith("# "):
        raise PipelineError(f"{notes_path}: the first line is not a `# title`; re-run the release")
    body = rest.strip("\n") + "\n"
    summary = validation_summary(notes_path.parent / "report.json")
    if summary:
        body += "\n" + summary
    body += (
        "\n<sub>Opened by relpipe from its release record; `relpipe pr update` rewrites the "
        "branch.</sub>\n"
    )
    if len(body) > gh.MAX_BODY:
        raise PipelineError(f"{notes_path}: the PR body is over {gh.MAX_BODY} characters")
    return first[2:].strip(), body


def validation_summary(report: Path) -> str:
    """A Markdown table of the release verdict's checks (report.json beside the notes)."""
    if not report.is_file():
        return ""
    try:
        doc = jsonload.loads(report.read_text(encoding="utf-8"))
        verdict = doc["verdict"]
        rows = [
            f"| {sanitize.markdown(c['id'])} | {sanitize.markdown(c['status'])} | "
            f"{sanitize.markdown(c.get('title', ''))} |"
            for c in verdict["checks"]
        ]
        overall = sanitize.markdown(verdict["overall"])
    except (OSError, ValueError, KeyError, TypeError):
        raise PipelineError(f"{report}: not a relpipe report; re-run the release") from None
    head = [f"## Validation: {overall}", "", "| check | status | what |", "|---|---|---|"]
    return "\n".join(head + rows) + "\n"


def client_for(target: Target) -> gh.GitHub:
    token = gh.require_token(os.environ, target.api_url)
    return gh.GitHub(target.api_url, token, deadline_s=target.api_deadline_s)
