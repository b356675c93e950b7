"""Batched, injection-safe git access for the engine commit diff.

This module owns every git process the precision diff starts and the parsing of their output.
The cost model is a handful of processes per pair whatever its size (DESIGN "Performance"):
one `cat-file --batch-check` resolves both refs, one `diff --raw -z -M` lists the changed files
(beside it the same diff with `--no-renames`, which is ready long before the rename pass is),
one `log -z --raw` lists the commits and the files (and blobs) each touched, `cat-file
--batch-command` reads the blobs the classifier needs (a few reads, so that Python judges the
first files while git reads the others: `classify`), one `ls-tree` proves that watched files
exist. The diffs, log and ls-tree run concurrently because they are independent once the refs
are resolved.

Security: refs and URLs are validated before they reach git, git gets argument lists (no shell),
refs reach `cat-file` through stdin (never parsed as options), revisions are followed by `--`,
and configuration that could run programs (pager, fsmonitor, signature checks, ext transport)
is overridden on every command line. Repositories copied out of images are untrusted: their
config, hooks, alternates and grafts are replaced by `sanitize_git_dir`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...core import process
from ...core.commit import Commit
from ...core.files import file_lock
from ...core.redact import redact
from ..errors import ValidateError
from .subjects import parse_subject

SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
# What a user may pass as OLD/NEW: a ref name, a (short) sha, or rev syntax like `v1^` / `HEAD~3`.
# No leading '-' (option injection), no whitespace/control characters (stdin line injection), no
# `..` / `:` (ranges and path lookups would change what is compared).
_REF_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+@^~{}-]{0,254}")
# `0.1.7.dev60+g7fc0926c6` (setuptools-scm / versioneer): the commit is the hex after `+g`.
_VERSION_RE = re.compile(r"[0-9][0-9A-Za-z.!-]*\+g([0-9a-f]{7,64})(?:[.+][0-9A-Za-z.]*)?")
_URL_RE = re.compile(r"(?:https?|ssh|git|file)://[^\s]+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+")
# One `--raw` entry's metadata: `:old_mode new_mode old_blob new_blob STATUS`.
_RAW_RE = re.compile(
    r":[0-7]{6} [0-7]{6} [0-9a-f]{40,64} [0-9a-f]{40,64} (?:[AMDTUXB]|[RC][0-9]{0,3})"
)

# Every git command line starts with these: no pager, literal UTF-8 paths, and no configuration
# that could make a read-only command start another program.
_BASE = (
    "git",
    "--no-pager",
    "-c",
    "core.quotepath=off",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.external=",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "protocol.allow=user",
)
_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}
# Every other GIT_* variable is dropped: inside a git hook (or a user's shell) GIT_DIR,
# GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, GIT_CONFIG*, GIT_NAMESPACE ... would override
# `-C` and make git read or write another repository. These only choose how a fetch reaches a
# server (ssh program, credentials prompt, TLS trust), never which repository is used.
_TRANSPORT_ENV = frozenset(
    {
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_ASKPASS",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
    }
)


def environment() -> dict[str, str]:
    """The environment every git process gets: ours, without the caller's GIT_* overrides."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _TRANSPORT_ENV}
    return {**kept, **_ENV}


@dataclass(frozen=True, kw_only=True)
class RawChange:
    """One entry of `git diff --raw`: a file between two trees."""

    status: str  # A M D T R C (R/C without the score)
    path: str  # path in NEW (the only path for A/M/D/T)
    old_path: str | None  # path in OLD for renames/copies
    old_blob: str | None  # None for an added file
    new_blob: str | None  # None for a deleted file
    old_mode: str
    new_mode: str
    score: int | None  # similarity percentage of a rename/copy


@dataclass(frozen=True, kw_only=True)
class FileTouch:
    """One file a commit touched (from `git log --raw`), with the blobs before and after it, so
    that a commit's own change to the file can be judged (per-commit attribution)."""

    status: str
    path: str
    old_path: str | None
    old_blob: str | None = None  # None for an added file
    new_blob: str | None = None  # None for a deleted file
    old_mode: str = ""
    new_mode: str = ""

    def change(self) -> RawChange:
        """This commit's change to the file, in the shape of a `git diff --raw` entry."""
        return RawChange(
            status=self.status,
            path=self.path,
            old_path=self.old_path,
            old_blob=self.old_blob,
            new_blob=self.new_blob,
            old_mode=self.old_mode,
            new_mode=self.new_mode,
            score=None,
        )


@dataclass(frozen=True, kw_only=True)
class Log:
    """What `git log --raw OLD...NEW` says: the commits in its order, and per commit (by sha) the
    files it touched with their blobs, which only the per-commit attribution reads."""

    commits: tuple[Commit, ...]
    touches: Mapping[str, tuple[FileTouch, ...]]


def commit_of(text: str) -> str:
    """OLD/NEW as given by a user -> a rev git can resolve; version strings give their sha."""
    text = text.strip()
    match = _VERSION_RE.fullmatch(text)
    if match:
        return match.group(1)
    if not _REF_RE.fullmatch(text) or ".." in text or text.endswith((".", "/", ".lock")):
        raise ValidateError(
            f"not a commit, tag or version: {process.one_line(text)!r}; "
            "give a sha, a tag, a branch or a version like 0.1.7.dev60+g7fc0926c6"
        )
    return text


def _command(repo: Path, args: Sequence[str]) -> list[str]:
    return [*_BASE, "-C", str(repo), *args]


GIT_TIMEOUT = 1800.0  # seconds for one git command (a first clone of a large engine included)


def _check(repo: Path, args: Sequence[str], code: int, stderr: bytes, what: str) -> None:
    if code != 0:
        detail = process.first_error(stderr, code)
        raise ValidateError(f"git {what or args[0]} failed in {repo}: {detail}")


class Job:
    """One git process running in the background (`core.process`: output in unnamed temporary
    files, not pipes, so the diff's processes overlap fully: the log runs while the blobs the
    diff names are being read)."""

    def __init__(self, repo: Path, args: Sequence[str], stdin: bytes | None = None) -> None:
        self.repo, self.args = repo, list(args)
        try:
            self._proc = process.Process(
                _command(repo, args), env=environment(), input=stdin, what="git"
            )
        except process.ProcessError as exc:
            raise ValidateError(f"{exc}; install git 2.30 or newer") from None

    def result(self, what: str = "") -> bytes:
        """Wait for the process; its stdout, or a one-line ValidateError."""
        try:
            done = self._proc.wait(timeout=GIT_TIMEOUT, limit=None)
        except process.ProcessError as exc:
            raise ValidateError(f"git {what or self.args[0]} in {self.repo}: {exc}") from None
        _check(self.repo, self.args, done.returncode, done.stderr, what)
        return done.stdout

    def close(self) -> None:
        """Stop the process if it still runs, and drop its files."""
        self._proc.close()


def run(repo: Path, *args: str, stdin: bytes | None = None, what: str = "") -> bytes:
    """Run one git command in `repo`; return stdout. A failure is a one-line ValidateError."""
    return Job(repo, args, stdin).result(what)


def run_many(repo: Path, *commands: Sequence[str]) -> list[bytes]:
    """Start independent read-only git commands together and collect their stdout in order."""
    jobs: list[Job] = []
    try:
        jobs = [Job(repo, args) for args in commands]
        return [job.result() for job in jobs]
    finally:
        for job in jobs:
            job.close()


def resolve(repo: Path, refs: Sequence[str]) -> list[str]:
    """Full commit shas of `refs` (validated with `commit_of`), in one `cat-file` process."""
    revs = [commit_of(ref) for ref in refs]
    check_repository(repo)
    out = run(
        repo,
        "cat-file",
        "--batch-check",
        stdin="".join(f"{rev}^{{commit}}\n" for rev in revs).encode(),
        what="cat-file",
    )
    lines = out.decode("utf-8", "replace").splitlines()
    shas = []
    for ref, line in zip(refs, lines, strict=True):
        parts = line.split()
        if len(parts) != 3 or parts[1] != "commit" or not SHA_RE.fullmatch(parts[0]):
            state = parts[-1] if parts else "missing"
            raise ValidateError(
                f"{ref!r} is {state} in {repo}: not a commit there (fetch it, or check that the "
                "repository has full history; a commit force-pushed away is in no history)"
            )
        shas.append(parts[0])
    return shas


def rev_parse_args(refs: Sequence[str]) -> list[str]:
    """Full shas of validated revs in one `rev-parse` that can run alongside the other commands.

    `resolve` is the careful path (stdin, per-ref messages); this is the fast one for refs that
    `commit_of` already validated (no leading '-', so no option can be injected)."""
    return ["rev-parse", *(f"{commit_of(ref)}^{{commit}}" for ref in refs)]


def parse_shas(out: bytes, count: int) -> list[str]:
    shas = out.decode("ascii", "replace").split()
    if len(shas) != count or not all(SHA_RE.fullmatch(s) for s in shas):
        raise ValidateError(f"unexpected git rev-parse output {out[:200]!r}")
    return shas


def check_repository(repo: Path) -> None:
    """Fail early, in one line, when `repo` is not the top of a repository or a git directory."""
    if not (repo / "HEAD").is_file() and not (repo / ".git").exists():
        raise ValidateError(f"not a git repository: {repo}; give --repo PATH|URL|image:REF")


def _decode(raw: bytes) -> str:
    # Paths and messages are bytes in git; invalid UTF-8 becomes U+FFFD so reports stay printable.
    return raw.decode("utf-8", "replace")


def parse_diff_raw(out: bytes) -> list[RawChange]:
    """Parse `git diff --raw -z --no-abbrev` output."""
    tokens = _decode(out).split("\0")  # decoded once: see parse_log
    changes: list[RawChange] = []
    i = 0
    while i < len(tokens) and tokens[i]:
        meta = tokens[i].split()
        if len(meta) != 5 or not meta[0].startswith(":"):
            raise ValidateError(f"unexpected git diff output near {tokens[i][:80]!r}")
        old_mode, new_mode, old_blob, new_blob, status = meta
        letter, score = status[0], (int(status[1:]) if status[1:].isdigit() else None)
        if letter in "RC":
            old_path, path = tokens[i + 1], tokens[i + 2]
            i += 3
        else:
            old_path, path = None, tokens[i + 1]
            i += 2
        changes.append(
            RawChange(
                status=letter,
                path=path,
                old_path=old_path,
                old_blob=old_blob if old_blob.strip("0") else None,
                new_blob=new_blob if new_blob.strip("0") else None,
                old_mode=old_mode[1:],
                new_mode=new_mode,
                score=score,
            )
        )
    return changes


_LOG_FIELDS = 7
_LOG_FORMAT = "%H%x00%P%x00%m%x00%an%x00%aI%x00%s%x00%b%x00"


def parse_log(out: bytes) -> Log:
    """Parse `git log -z --raw --no-abbrev --format=_LOG_FORMAT` output.

    Each commit is 7 NUL-terminated fields and an empty token, then its raw entries (the first
    one's metadata carries a leading newline); the next commit starts with a bare sha. Field counts,
    not content, drive the parser, so messages may contain anything but NUL.
    """
    # Decoded once, then split: a NUL never belongs to a multi-byte sequence, so this equals
    # decoding each field (invalid UTF-8 becomes U+FFFD within its own field).
    tokens = _decode(out).split("\0")
    commits: list[Commit] = []
    touched: dict[str, tuple[FileTouch, ...]] = {}
    i, n = 0, len(tokens)
    while i < n and tokens[i]:
        if not SHA_RE.fullmatch(tokens[i]) or i + _LOG_FIELDS >= n:
            raise ValidateError(f"unexpected git log output near {tokens[i][:80]!r}")
        sha, parents, mark, author, date, subject, body = tokens[i : i + _LOG_FIELDS]
        i += _LOG_FIELDS + 1
        touches: list[FileTouch] = []
        while i < n and _RAW_RE.fullmatch(meta := tokens[i].lstrip("\n")):
            old_mode, new_mode, old_blob, new_blob, status = meta[1:].split()
            if status[0] in "RC":
                path, old_path = tokens[i + 2], tokens[i + 1]
                i += 3
            else:
                path, old_path = tokens[i + 1], None
                i += 2
            touches.append(
                FileTouch(
                    status=status[0],
                    path=path,
                    old_path=old_path,
                    old_blob=None if not old_blob.strip("0") else old_blob,
                    new_blob=None if not new_blob.strip("0") else new_blob,
                    old_mode=old_mode,
                    new_mode=new_mode,
                )
            )
        commits.append(
            _commit(
                sha,
                subject,
                body,
                parents=tuple(parents.split()),
                side="old" if mark == "<" else "new",
                author=author,
                date=date,
                files=tuple(t.path for t in touches),
            )
        )
        touched[sha] = tuple(touches)
    return Log(commits=tuple(commits), touches=touched)


def _commit(
    sha: str,
    subject: str,
    body: str,
    *,
    parents: tuple[str, ...] = (),
    side: str = "new",
    author: str = "",
    date: str = "",
    files: tuple[str, ...] = (),
) -> Commit:
    """The record of a commit git printed, with what its subject says (type, scope, PR)."""
    said = parse_subject(subject)
    return Commit(
        sha=sha,
        subject=subject,
        body=body,
        pr=said.pr,
        type=said.type,
        scope=said.scope,
        parents=parents,
        side=side,
        author=author,
        date=date,
        files=files,
    )


def diff_args(old: str, new: str, *, renames: bool = True) -> list[str]:
    """`git diff --raw` of two commits, renames detected unless `renames` is False (parse with
    `parse_diff_raw`)."""
    return [
        "diff",
        "--raw",
        "-z",
        "-M" if renames else "--no-renames",
        "--no-abbrev",
        "--no-ext-diff",
        "--no-textconv",
        "--no-relative",
        old,
        new,
        "--",
    ]


def log_args(old: str, new: str) -> list[str]:
    """`git log` of the symmetric difference OLD...NEW with the files each commit touched.

    For an ancestor pair this is exactly OLD..NEW; for release branches the commits only in OLD
    come back with side 'old'. Merges list no files (their branch commits carry them).
    """
    return [
        "log",
        "-z",
        "--left-right",
        "--raw",
        "-M",
        "--no-abbrev",
        "--no-decorate",
        "--no-show-signature",
        "--no-color",
        "--no-mailmap",
        f"--format={_LOG_FORMAT}",
        f"{old}...{new}",
        "--",
    ]


def ls_tree_args(commit: str) -> list[str]:
    """Every file path of a commit's tree (parse with `parse_paths`)."""
    return ["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit, "--"]


def history_args(commit: str) -> list[str]:
    """Sha, subject and body of every commit reachable from `commit` (parse with
    `parse_history`)."""
    return [
        "log",
        "-z",
        "--no-show-signature",
        "--no-color",
        "--format=%H%x00%s%x00%b",
        commit,
        "--",
    ]


def diff_raw(repo: Path, old: str, new: str) -> list[RawChange]:
    """Files that differ between two commits (renames detected), one process."""
    return parse_diff_raw(run(repo, *diff_args(old, new), what="diff"))


def log(repo: Path, old: str, new: str) -> Log:
    """Commits of OLD...NEW with their files (see `log_args`), one process."""
    return parse_log(run(repo, *log_args(old, new), what="log"))


def parse_paths(out: bytes) -> list[str]:
    return [_decode(t) for t in out.split(b"\0") if t]


def parse_history(out: bytes) -> list[Commit]:
    """The commits of `history_args` output (sha, subject, body and what the subject says)."""
    tokens = out.split(b"\0")
    return [
        _commit(_decode(tokens[i]).strip(), _decode(tokens[i + 1]), _decode(tokens[i + 2]))
        for i in range(0, len(tokens) - 2, 3)
    ]


def objects_args() -> list[str]:
    """`cat-file --batch-command` (give it `objects_script`, parse with `parse_objects`)."""
    # --buffer: one flush at the end instead of one per object (per-object flushes made the
    # stdin/stdout ping-pong dominate for thousands of blobs).
    return ["cat-file", "--batch-command", "--buffer"]


def objects_script(infos: Sequence[str], blobs: Sequence[str]) -> tuple[bytes, list[str]]:
    """The commands for `info` on each of `infos` (rev or `REV:path`) and the contents of every
    blob in `blobs`; and the blobs asked for, in order (duplicates dropped)."""
    wanted = list(dict.fromkeys(blobs))
    if any("\n" in name or "\r" in name for name in infos):
        raise ValidateError("object names may not contain line breaks")
    script = "".join([*(f"info {name}\n" for name in infos), *(f"contents {s}\n" for s in wanted)])
    return script.encode(), wanted


def parse_objects(
    repo: Path, out: bytes, infos: Sequence[str], wanted: Sequence[str]
) -> tuple[list[tuple[str, str] | None], dict[str, bytes]]:
    """(sha, type) or None per `infos`, and the contents of the `wanted` blobs."""
    found: list[tuple[str, str] | None] = []
    pos = 0
    for _ in infos:
        end = out.index(b"\n", pos)
        info = out[pos:end].decode("utf-8", "replace").split()
        pos = end + 1
        ok = len(info) == 3 and SHA_RE.fullmatch(info[0]) is not None
        found.append((info[0], info[1]) if ok else None)
    contents: dict[str, bytes] = {}
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3 or header[1] != b"blob":
            raise ValidateError(f"blob {sha} is missing from {repo}; the repository is incomplete")
        size = int(header[2])
        contents[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found, contents


def read_objects(
    repo: Path, infos: Sequence[str], blobs: Sequence[str]
) -> tuple[list[tuple[str, str] | None], dict[str, bytes]]:
    """One `cat-file --batch-command` process: `info` on each of `infos` (rev or `REV:path`, as
    (sha, type) or None when missing) and the contents of every blob in `blobs`."""
    script, wanted = objects_script(infos, blobs)
    out = run(repo, *objects_args(), stdin=script, what="cat-file")
    return parse_objects(repo, out, infos, wanted)


def read_blobs(repo: Path, shas: Sequence[str]) -> dict[str, bytes]:
    """Contents of many blobs in one `cat-file` process."""
    return read_objects(repo, [], shas)[1] if shas else {}


def is_shallow(repo: Path) -> bool:
    """Whether the repository is a shallow clone (its history may end before OLD)."""
    return (repo / "shallow").is_file() or (repo / ".git" / "shallow").is_file()


# --- repositories given as URLs or copied out of images ---------------------------------------


def cache_root() -> Path:
    """Where URL clones are cached: $RELPIPE_CACHE/repos or ~/.cache/relpipe/repos."""
    base = os.environ.get("RELPIPE_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "relpipe") / "repos"


def is_url(text: str) -> bool:
    return bool(_URL_RE.fullmatch(text))


def _has_commits(repo: Path, revs: Sequence[str]) -> bool:
    try:
        resolve(repo, revs)
    except ValidateError:
        return False
    return True


def open_url(url: str, refs: Sequence[str], cache: Path | None = None) -> Path:
    """A cached bare clone of `url` that contains `refs`; fetches only when one is missing.

    Branches and tags are fetched first; a sha that no ref reaches is then fetched by id (the
    server must allow it). A lock file serialises concurrent relpipe processes on one cache.
    """
    if not is_url(url) or url.startswith("-"):
        raise ValidateError(
            f"not a repository URL: {redact(url)!r}; use https://, ssh:// or file://"
        )
    import hashlib  # deferred: a diff of a local repository needs no hash

    revs = [commit_of(ref) for ref in refs]
    root = cache or cache_root()
    repo = root / hashlib.sha256(url.encode()).hexdigest()[:20]
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(
        root / f"{repo.name}.lock", timeout_s=600, what="clone cache lock", error=ValidateError
    ):
        if not (repo / "HEAD").is_file():
            tmp = root / f"{repo.name}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            run(root, "init", "--quiet", "--bare", str(tmp), what="init")
            tmp.rename(repo)
        elif _has_commits(repo, revs):
            return repo
        shown = redact(url)
        _fetch(repo, url, shown, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
        missing = [rev for rev in revs if not _has_commits(repo, [rev])]
        by_id = [rev for rev in missing if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", rev)]
        if by_id:
            _fetch(repo, url, shown, *by_id)
    resolve(repo, refs)  # a one-line error naming the ref that is still missing
    return repo


def _fetch(repo: Path, url: str, shown: str, *refspecs: str) -> None:
    try:
        run(
            repo,
            "fetch",
            "--quiet",
            "--no-write-fetch-head",
            "--end-of-options",
            url,
            *refspecs,
            what="fetch",
        )
    except ValidateError as exc:
        detail = str(exc).split(": ", 1)[-1].replace(url, shown)
        raise ValidateError(
            f"cannot fetch from {shown}: {detail}; check the URL and access"
        ) from None


_SAFE_CONFIG = "[core]\n\trepositoryformatversion = {version}\n\tbare = true\n{extensions}"


_MAX_CONFIG = 1 << 20  # an image's git config is read only for its object format


def sanitize_git_dir(git_dir: Path) -> Path:
    """Make a `.git` copied out of an image safe to read: our config, no hooks/alternates/grafts.

    The image is untrusted, so its config could name programs (fsmonitor, pager, gpg) and its
    alternates could point at host paths. Only the object format survives from the old config.
    """
    if not (git_dir / "HEAD").is_file() or not (git_dir / "objects").is_dir():
        raise ValidateError(f"{git_dir} is not a git directory; the image has no engine history")
    config = git_dir / "config"
    # Read only a regular file (not a link, folder or FIFO); whatever it was, it is replaced.
    regular = config.is_file() and not config.is_symlink()
    old = ""
    if regular:
        with open(config, "rb") as handle:
            old = handle.read(_MAX_CONFIG).decode("utf-8", "replace")
    sha256 = re.search(r"objectformat\s*=\s*sha256", old, re.IGNORECASE) is not None
    extensions = "[extensions]\n\tobjectformat = sha256\n" if sha256 else ""
    for path in (
        config,
        git_dir / "hooks",
        git_dir / "info" / "grafts",
        git_dir / "objects" / "info" / "alternates",
        git_dir / "commondir",
    ):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    config.write_text(_SAFE_CONFIG.format(version=1 if sha256 else 0, extensions=extensions))
    # Without refs/ git does not take the folder for a repository and walks up to the folders
    # above it (the user's own repository, say); an empty refs/ is enough (packed-refs holds the
    # rest). A refs that is a link or a file could point anywhere on the host: refuse it.
    for folder in (git_dir / "refs", git_dir / "refs" / "heads", git_dir / "refs" / "tags"):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise ValidateError(
                f"{git_dir}: {folder.relative_to(git_dir)} is not a folder; "
                "the image's engine history is damaged"
            )
        folder.mkdir(exist_ok=True)
    return git_dir
