"""Thin git helper for the commit hook: read blobs at refs or the index, pick the base, find origin.

Kept to the standard library and few processes (each `git` start costs milliseconds, and the
hook runs on every commit): blobs come from one `git cat-file --batch`, the base from at most
one `git merge-base`. Git never runs through a shell.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ...core import process
from ..errors import ValidateError

INDEX = ":"  # the pseudo-ref for the staged version of a file
GIT_TIMEOUT = 120.0  # seconds: the hook reads blobs and one merge-base, never a fetch


def git(*args: str, check: bool = True, stdin: bytes | None = None) -> process.Completed:
    """Run git; a failure with `check` raises ValidateError carrying git's first error line."""
    try:
        done = process.run(["git", *args], input=stdin, check=False, timeout=GIT_TIMEOUT)
    except process.ProcessError as exc:
        raise ValidateError(f"{exc}; install git or check the repository") from None
    if check and done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValidateError(
            f"git {' '.join(args)} failed: {detail[0] if detail else done.returncode}"
        )
    return done


def in_repository() -> bool:
    return git("rev-parse", "--git-dir", check=False).returncode == 0


def read_blobs(specs: Sequence[str]) -> list[bytes | None]:
    """Contents of `REV:path` / `:path` specs in one git process; None where it does not exist."""
    request = "".join(f"{spec}\n" for spec in specs).encode("utf-8")
    out = git("cat-file", "--batch", stdin=request).stdout
    blobs: list[bytes | None] = []
    pos = 0
    for _spec in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            blobs.append(out[pos : pos + size])
            pos += size + 1
        elif header[-1] == b"missing" or (len(header) == 3 and header[1] != b"blob"):
            if len(header) == 3:
                pos += int(header[2]) + 1
            blobs.append(None)
        else:
            raise ValidateError(
                f"unexpected `git cat-file` answer {out[:end][-80:]!r}; check the repository"
            )
    return blobs


def spec(ref: str, path: str) -> str:
    """The cat-file name of `path` (relative to the working directory) at `ref` or in the index."""
    rel = path if path.startswith(("./", "../", "/")) else f"./{path}"
    if rel.startswith("/"):
        root = git("rev-parse", "--show-toplevel").stdout.decode().strip()
        rel = os.path.relpath(rel, root)
        return f"{'' if ref == INDEX else ref}:{rel}"
    return f"{'' if ref == INDEX else ref}:{rel}"


def default_base() -> str:
    """The base a pre-commit user expects: merge-base with the upstream branch, else HEAD.

    Without an upstream, or in a shallow clone that lacks the merge-base, it is HEAD (which
    may not exist yet in a new repository: then nothing is committed and all of it is new).
    """
    merge_base = git("merge-base", "HEAD", "@{upstream}", check=False)
    if merge_base.returncode == 0 and merge_base.stdout.strip():
        return merge_base.stdout.decode().strip()
    return "HEAD"


def ref_exists(ref: str) -> bool:
    return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).returncode == 0


_SCP_URL = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")


def canonical_repo_url(url: str) -> str:
    """`git@github.com:O/R.git`, `ssh://git@github.com/O/R`, `https://github.com/O/R.git/` ->
    `https://github.com/O/R`."""
    url = url.strip()
    m = _SCP_URL.match(url)
    if m and "://" not in url:
        url = f"https://{m.group(1)}/{m.group(2)}"
    url = re.sub(r"^(?:ssh|git|http)://(?:[^@/]+@)?", "https://", url)
    url = re.sub(r"^https://[^@/]+@", "https://", url)
    url = url.rstrip("/")
    return url[:-4] if url.endswith(".git") else url


def remote_urls(root: str | None = None) -> dict[str, str]:
    """Every remote's URL, canonical (`https://github.com/O/R`), by remote name: one git call
    (in `root`, default the working directory)."""
    where = ("-C", root) if root else ()
    done = git(*where, "config", "--get-regexp", r"^remote\..*\.url$", check=False)
    out: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        key, _, url = line.partition(" ")
        name = key[len("remote.") : -len(".url")]
        if name and url.strip():
            out.setdefault(name, canonical_repo_url(url))
    return out


def current_branch() -> str | None:
    """The checked-out branch's short name; None on a detached HEAD (CI checkouts of a ref)."""
    done = git("symbolic-ref", "-q", "--short", "HEAD", check=False)
    name = done.stdout.decode("utf-8", "replace").strip()
    return name if done.returncode == 0 and name else None


def origin_url() -> str | None:
    """The `origin` remote as a canonical https URL, or None without one."""
    done = git("config", "--get", "remote.origin.url", check=False)
    url = done.stdout.decode("utf-8", "replace").strip()
    return canonical_repo_url(url) if done.returncode == 0 and url else None
