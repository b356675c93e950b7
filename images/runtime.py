"""Container runtime: run the relpipe engine payload inside an image pulled by digest, safely.

Owns the contract between the host and a container: references are pulled by digest only (a tag
can move; what gets run must be the bytes that were qualified); `engine/` is bind-mounted
read-only at /relpipe/payload/engine and an output folder read-write at /relpipe/out; the container
gets no network, no new privileges, no capabilities, a read-only root with a tmpfs /tmp, memory
and pids limits, capped logs, and a wall-clock timeout after which it is killed, removed and
reported FAIL. It never runs as root unless the image is labelled as needing it and the user allows
that (a root relpipe runs containers as nobody); every VOLUME the image declares is a bounded
tmpfs, not a writable anonymous volume, and containers are removed with their volumes. The output
folder is measured while the container runs, which is killed once it passes its cap. A runtime
from `from_env` first reaps the containers that dead processes of its owner left behind. Its
result JSON is untrusted: read without following links, size-capped, parsed strictly and checked
against the engine's result envelope on the host.

Also owns copying a folder (e.g. `/app/ATOM` with its `.git`) out of an image through a created,
never-started container, extracting the archive so that no member or link can land outside dest.

Fixture images carry `org.relpipe.toolchain=site-packages`: they expect the host's site-packages
holding torch/triton/numpy mounted read-only at /opt/relpipe/site-packages. Real images lack the
label and use their own torch. This module never imports `engine` (the caller passes its folder).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from relpipe.core import jsonload
from relpipe.images.errors import ImageError
from relpipe.images.reference import Reference, parse

TOOLCHAIN_LABEL = "org.relpipe.toolchain"
TOOLCHAIN_SITE_PACKAGES = "site-packages"
TOOLCHAIN_MOUNT = "/opt/relpipe/site-packages"
TOOLCHAIN_PACKAGES = ("torch", "triton", "numpy")
TOOLCHAIN_ENV = "RELPIPE_TOOLCHAIN"
GPU_ENV = "RELPIPE_GPU"
PAYLOAD_DIR = "/relpipe/payload"
OUT_DIR = "/relpipe/out"
RESULT_NAME = "result.json"
ENGINE_COMMANDS = ("probe", "smoke", "eval", "serve")
GPU_MODES = ("none", "rocm", "nvidia")
RESULT_STATUSES = {"pass": 0, "fail": 1, "error": 2}
MIB = 1 << 20
# Labels on every container relpipe creates: who made it (owner: a run or session id the caller
# names; host + pid + the pid's start time: the creating process), and what for (engine|extract).
RUN_LABEL = "org.relpipe.run"
OWNER_LABEL = "org.relpipe.owner"
KIND_LABEL = "org.relpipe.kind"
HOST_LABEL = "org.relpipe.host"
PID_LABEL = "org.relpipe.pid"
PID_START_LABEL = "org.relpipe.pid-start"
# An image that cannot run unprivileged says so with this label ("true"); it runs as root only
# where the user allows it (ALLOW_ROOT_ENV=1): the image's own word is not enough.
NEEDS_ROOT_LABEL = "org.relpipe.needs-root"
ALLOW_ROOT_ENV = "RELPIPE_ALLOW_ROOT_IMAGES"
UNPRIVILEGED = (65534, 65534)  # nobody:nogroup, for containers started by a root relpipe
DEFAULT_OWNER = "relpipe"  # containers of commands that name no run (diff, images probe)


class ContainerError(ImageError):
    """A container could not be created, run or read (environment error unless said otherwise)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Limits:
    """Resource and size caps of one container run (defaults fit the tiny engine model on CPU)."""

    mem: str = "4g"
    pids: int = 1024
    tmpfs_size: str = "1g"
    log_bytes: int = 64 * 1024  # kept from each end of the logs
    result_bytes: int = 4 * MIB
    out_dir_bytes: int = 64 * MIB
    out_dir_poll_s: float = 0.2  # how often the output folder is measured while a container runs
    volumes: int = 16  # image-declared VOLUMEs mounted (as bounded tmpfs); more are refused
    volume_size: str = "64m"  # each declared VOLUME's tmpfs
    archive_bytes: int = 2048 * MIB
    archive_members: int = 200_000


@dataclass(frozen=True)
class EngineRun:
    """One container run: what ran, how it ended, and the validated result (or why not)."""

    image: str  # registry/repository@sha256:... that ran
    argv: tuple[str, ...]
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    duration_s: float
    result: dict[str, Any] | None
    error: str | None  # one line; None means PASS
    logs: str
    logs_truncated: bool
    out_dir: str

    @property
    def passed(self) -> bool:
        return self.error is None

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def require(self) -> dict[str, Any]:
        """The result document, or a one-line checked failure (exit 1)."""
        if self.error is not None or self.result is None:
            raise ContainerError(self.error or "no result", 1)
        return self.result


def host_toolchain() -> Path | None:
    """The host folder whose `torch`, `triton` and `numpy` fixtures mount (env override, else
    found)."""
    named = os.environ.get(TOOLCHAIN_ENV)
    if named:
        return Path(named)
    # find_spec locates a top-level package without importing it (images/ never imports torch).
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def detect_gpu() -> str:
    """`rocm` when /dev/kfd exists, `nvidia` when nvidia-smi does, else `none` (env wins)."""
    named = os.environ.get(GPU_ENV)
    if named:
        if named not in GPU_MODES:
            raise ContainerError(f"{GPU_ENV}={named!r} is not one of {', '.join(GPU_MODES)}")
        return named
    if Path("/dev/kfd").exists():
        return "rocm"
    if shutil.which("nvidia-smi"):
        return "nvidia"
    return "none"


def pinned(ref: str | Reference) -> Reference:
    """The reference, refused unless it names a digest (tags move; digests are what was
    qualified)."""
    reference = parse(ref)
    if reference.digest is None:
        raise ContainerError(
            f"refusing to run {ref} by tag: pin it to a digest first "
            f"(relpipe images pin {ref}) and pass {reference.name}@sha256:..."
        )
    return reference


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# -- result documents -------------------------------------------------------------------------


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key!r}")
        doc[key] = value
    return doc


def parse_result(data: bytes, command: str, cap: int = Limits.result_bytes) -> dict[str, Any]:
    """Validate an untrusted engine result document; raises a one-line checked error."""
    if len(data) > cap:
        raise ContainerError(f"{command} result is larger than {cap} bytes; refusing to read it", 1)
    try:
        doc = jsonload.loads(
            data.decode("utf-8"), parse_constant=_no_constants, object_pairs_hook=_no_duplicates
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ContainerError(
            f"{command} result is not valid JSON: {_one_line(str(exc), 120)}", 1
        ) from None
    if not isinstance(doc, dict):
        raise ContainerError(f"{command} result is not a JSON object", 1)
    if doc.get("schema") != 1 or isinstance(doc.get("schema"), bool):
        raise ContainerError(f"{command} result has schema {doc.get('schema')!r}, expected 1", 1)
    if doc.get("command") != command:
        raise ContainerError(f"{command} result names command {str(doc.get('command'))[:40]!r}", 1)
    if doc.get("status") not in RESULT_STATUSES:
        raise ContainerError(f"{command} result has status {str(doc.get('status'))[:40]!r}", 1)
    if command == "probe":
        _check_probe(doc)
    return doc


def _check_probe(doc: dict[str, Any]) -> None:
    for key, kind in (("engine", dict), ("packages", dict), ("errors", list)):
        if not isinstance(doc.get(key), kind):
            raise ContainerError(f"probe result field {key!r} must be a {kind.__name__}", 1)
    if not all(isinstance(e, str) for e in doc["errors"]):
        raise ContainerError("probe result 'errors' must be a list of strings", 1)


def read_result(out_dir: Path, command: str, cap: int) -> dict[str, Any]:
    """Read out_dir/result.json without following links or blocking on FIFOs; then validate."""
    path = out_dir / RESULT_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ContainerError(
            f"{command} wrote no result ({OUT_DIR}/{RESULT_NAME} missing)", 1
        ) from None
    except OSError as exc:
        raise ContainerError(
            f"{command} result is not a readable regular file ({exc.strerror})", 1
        ) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ContainerError(f"{command} result is not a regular file", 1)
        data = fh.read(cap + 1)
    return parse_result(data, command, cap)


def _tree_bytes(root: Path) -> int:
    """Bytes a folder costs the disk: the larger of size and allocated blocks per file, plus a
    block per entry, so neither sparse files nor a flood of empty files slip under a cap."""
    total = 0
    for dirpath, dirs, files in os.walk(root):  # os.walk does not follow links by default
        total += 512 * len(dirs)
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                total += max(st.st_size, st.st_blocks * 512) + 512
    return total


# -- safe archive extraction ------------------------------------------------------------------


def _member_path(name: str, root: str) -> PurePosixPath | None:
    """Path of a member relative to the archive root; None for the root itself; error if unsafe."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] != root or name.startswith("/"):
        raise ContainerError(f"archive member {name[:120]!r} is outside {root!r}; refusing", 1)
    rest = parts[1:]
    if any(p in ("..", "") or "\x00" in p for p in rest):
        raise ContainerError(f"archive member {name[:120]!r} escapes its folder; refusing", 1)
    return PurePosixPath(*rest) if rest else None


def _data_filter(member: tarfile.TarInfo, rel: PurePosixPath | None, root: str, top: Path) -> None:
    """tarfile's own `data` filter on the member as it will land under `top`: the second line of
    defence behind the checks of `extract_archive` (absolute or escaping names and links,
    special files)."""
    name = str(rel) if rel is not None else "."
    link = member.linkname
    if member.islnk():  # hard links name a member of the archive, under its root
        origin = _member_path(link, root)
        link = str(origin) if origin is not None else "."
    try:
        tarfile.data_filter(member.replace(name=name, linkname=link, deep=False), str(top))
    except tarfile.FilterError as exc:
        raise ContainerError(
            f"archive member {member.name[:120]!r} is refused by tarfile's data filter "
            f"({type(exc).__name__}); refusing",
            1,
        ) from None


def extract_archive(stream: IO[bytes], dest: Path, root: str, limits: Limits = Limits()) -> None:
    """Extract a `get_archive` tar whose members live under `root/` into `dest` (must not exist).

    Only folders, regular files, hard links to earlier files (copied) and symlinks are accepted.
    Containment is checked before anything is created: a member may not lie under a symlink
    member (`a -> ../../..` then `a/x` is refused, whatever comes first), every member's folder
    must already be a real folder inside dest (a member without its parent is refused), and
    tarfile's `data` filter checks each member too. Files are written first and symlinks last,
    each into a real folder inside dest, so nothing is ever written through a link; every symlink
    must then resolve inside dest, else everything is removed (fail closed).
    """
    if dest.exists() or dest.is_symlink():
        raise ContainerError(f"{dest} already exists; extract into a new path", 2)
    dest.mkdir(parents=True)
    top = dest.resolve()
    links: list[tuple[Path, str]] = []
    link_paths: set[PurePosixPath] = set()
    written: dict[PurePosixPath, Path] = {}
    folders: set[PurePosixPath] = set()  # every folder some member lies in
    total = count = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                count += 1
                if count > limits.archive_members:
                    raise ContainerError(
                        f"archive has more than {limits.archive_members} members", 1
                    )
                rel = _member_path(member.name, root)
                target = top if rel is None else top.joinpath(*rel.parts)
                if rel is not None:
                    # Any member under a link (earlier or later in the stream) would be written
                    # through it: refuse before creating anything.
                    under = any(p in link_paths for p in rel.parents)
                    if under or (member.issym() and rel in folders):
                        raise ContainerError(
                            f"archive member {member.name[:120]!r} lies under a symlink member "
                            f"or is a symlink over earlier members; refusing",
                            1,
                        )
                    folders.update(rel.parents)
                    _check_parents(top, target)
                _data_filter(member, rel, root, top)
                if member.isdir():
                    if rel is not None:
                        target.mkdir(mode=0o755, exist_ok=True)
                elif member.isreg():
                    total += member.size
                    if total > limits.archive_bytes:
                        raise ContainerError(
                            f"archive is larger than {limits.archive_bytes} bytes", 1
                        )
                    src = tar.extractfile(member)
                    assert src is not None
                    if rel is None:  # the path in the image is a file: dest becomes that file
                        target.rmdir()
                    _write_file(target, src, 0o755 if member.mode & 0o111 else 0o644)
                    if target.stat().st_size != member.size:  # a stream cut inside a file
                        raise ContainerError(
                            f"archive member {member.name[:120]!r} is truncated; refusing", 1
                        )
                    written[rel or PurePosixPath(".")] = target
                elif member.islnk():
                    origin = _member_path(member.linkname, root)
                    if rel is None or origin not in written:
                        raise ContainerError(
                            f"hard link {member.name[:120]!r} points at "
                            f"{member.linkname[:120]!r}, not an earlier file; refusing",
                            1,
                        )
                    with written[origin].open("rb") as src_fh:
                        _write_file(target, src_fh, written[origin].stat().st_mode & 0o777)
                    written[rel] = target
                elif member.issym():
                    if rel is None:
                        raise ContainerError("archive root is a symlink; refusing", 1)
                    links.append((target, member.linkname))
                    link_paths.add(rel)
                else:
                    raise ContainerError(
                        f"archive member {member.name[:120]!r} is a device, FIFO "
                        "or other special file; refusing",
                        1,
                    )
        for target, linkname in links:
            if os.path.isabs(linkname) or os.path.lexists(target):
                raise ContainerError(
                    f"symlink {target.relative_to(top)} -> {linkname[:120]} is "
                    "absolute or collides with another member; refusing",
                    1,
                )
            _check_parents(top, target)  # never create a link through another link
            os.symlink(linkname, target)
        for target, linkname in links:
            resolved = Path(os.path.realpath(target))
            if resolved != top and top not in resolved.parents:
                raise ContainerError(
                    f"symlink {target.relative_to(top)} -> {linkname[:120]} "
                    "resolves outside the destination; refusing",
                    1,
                )
    except tarfile.TarError as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ContainerError(f"archive is not a valid tar stream: {exc}; refusing", 1) from None
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _check_parents(top: Path, target: Path) -> None:
    """Refuse a path whose folders are not all real folders inside `top` (lstat, no following):
    a member whose parent is missing, a file, or a link is never created."""
    current = target.parent
    while current != top:
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            mode = None
        if mode is None or not stat.S_ISDIR(mode):
            what = "a link" if mode is not None and stat.S_ISLNK(mode) else "not a folder"
            raise ContainerError(
                f"archive path {target.relative_to(top)} needs {current.relative_to(top)}, "
                f"which is {what} (a member without its parent folder); refusing",
                1,
            )
        current = current.parent


def _write_file(target: Path, src: IO[bytes], mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(target, flags, mode & 0o755)
    except FileExistsError:
        raise ContainerError(f"archive has {target.name!r} twice; refusing", 1) from None
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


# -- container ownership ----------------------------------------------------------------------


def process_start(pid: int) -> str | None:
    """The start time of `pid` in clock ticks since boot (/proc), None where it cannot be read.

    With the pid it names one process for good: a pid reused by a later process starts later.
    """
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    fields = stat_line.rpartition(")")[2].split()  # the command name may hold spaces and ')'
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5); state is field 3


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether the process `pid` (started at `started`, when known) still runs on this host.

    Errs towards alive: a pid that exists but cannot be signalled, or whose start time cannot be
    read, counts as alive, so a doubtful container is never removed.
    """
    if pid <= 0:
        return True  # not a pid we wrote; leave it alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if started is None:
        return True
    now = process_start(pid)
    if now is None:
        return not Path("/proc/self/stat").exists()  # no /proc at all: cannot tell, so alive
    # A pid that exists but started at another time is a later process reusing the number.
    return now == started


# -- the runtime ------------------------------------------------------------------------------


@dataclass
class Runtime:
    """A docker client plus the host paths and policy that every run uses."""

    client: Any
    toolchain: Path | None = None
    gpu: str = "none"
    limits: Limits = field(default_factory=Limits)
    python: str = "python3"
    # "uid:gid" inside the container; default: the caller's (it owns the outputs), or nobody when
    # the caller is root, so that a container never runs as root unless the image needs it.
    user: str | None = None
    owner: str | None = None  # run or session id put on every container (see reap_stale)
    allow_root: bool = False  # run images labelled NEEDS_ROOT_LABEL as root (else refuse them)

    @classmethod
    def from_env(
        cls, docker_host: str | None = None, *, reap: bool = True, **kwargs: Any
    ) -> Runtime:
        """DOCKER_HOST (or `docker_host`), RELPIPE_TOOLCHAIN / found torch, RELPIPE_GPU / detected.

        The owner defaults to DEFAULT_OWNER; with `reap`, the containers that dead processes of
        the same owner left behind (an interrupted diff, probe or qualification) are removed.
        """
        import docker
        import requests

        try:
            if docker_host:
                client = docker.DockerClient(base_url=docker_host, timeout=120)
            else:
                client = docker.from_env(timeout=120)
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise ContainerError(
                f"cannot reach docker ({_one_line(str(exc), 160)}); "
                "start dockerd or set DOCKER_HOST"
            ) from None
        kwargs.setdefault("toolchain", host_toolchain())
        kwargs.setdefault("gpu", detect_gpu())
        kwargs.setdefault("owner", DEFAULT_OWNER)
        kwargs.setdefault("allow_root", os.environ.get(ALLOW_ROOT_ENV) == "1")
        runtime = cls(client, **kwargs)
        if reap:
            runtime.reap_stale(runtime.owner or DEFAULT_OWNER)
        return runtime

    # -- images ---------------------------------------------------------------------------

    def ensure_image(self, ref: str | Reference) -> tuple[str, dict[str, str]]:
        """Pull `ref` by digest unless present; returns (digest reference, image labels)."""
        import docker.errors
        from relpipe.images.options import physical

        reference = pinned(ref)
        # Under a registry mirror (images.options) dockerd pulls the same digest from the mirror.
        by_digest = physical(f"{reference.name}@{reference.digest}")
        try:
            try:
                image = self.client.images.get(by_digest)
            except docker.errors.ImageNotFound:
                image = self.client.images.pull(by_digest)
        except docker.errors.DockerException as exc:
            raise ContainerError(f"cannot pull {by_digest}: {_one_line(str(exc), 200)}") from None
        repo_digests = image.attrs.get("RepoDigests") or []
        if by_digest not in repo_digests:
            raise ContainerError(
                f"docker has no {by_digest} after pulling (has {repo_digests[:3]}); refusing", 1
            )
        labels = (image.attrs.get("Config") or {}).get("Labels") or {}
        return by_digest, dict(labels)

    def _toolchain_mounts(self, labels: Mapping[str, str]) -> dict[str, dict[str, str]]:
        wanted = labels.get(TOOLCHAIN_LABEL)
        if wanted is None:
            return {}
        if wanted != TOOLCHAIN_SITE_PACKAGES:
            raise ContainerError(
                f"image label {TOOLCHAIN_LABEL}={wanted[:40]!r} is not supported "
                f"(only {TOOLCHAIN_SITE_PACKAGES!r})",
                1,
            )
        site = self.toolchain
        if site is None or not all((site / p).is_dir() for p in TOOLCHAIN_PACKAGES):
            raise ContainerError(
                "the image expects torch/triton/numpy mounted from the host, "
                f"but {site or 'nothing'} "
                f"has not all of them; set {TOOLCHAIN_ENV} to a site-packages folder that does"
            )
        return {str(site): {"bind": TOOLCHAIN_MOUNT, "mode": "ro"}}

    def _gpu_options(self, gpu: str) -> dict[str, Any]:
        if gpu == "none":
            return {}
        if gpu == "rocm":
            devices = [d for d in ("/dev/kfd", "/dev/dri") if Path(d).exists()]
            if len(devices) != 2:
                raise ContainerError("gpu=rocm needs /dev/kfd and /dev/dri on the host")
            groups = sorted(
                {os.stat(p).st_gid for p in [Path("/dev/kfd"), *Path("/dev/dri").iterdir()]}
            )
            return {
                "devices": [f"{d}:{d}:rwm" for d in devices],
                "group_add": [str(g) for g in groups],
            }
        if gpu == "nvidia":
            from docker.types import DeviceRequest

            return {"device_requests": [DeviceRequest(count=-1, capabilities=[["gpu"]])]}
        raise ContainerError(f"unknown gpu mode {gpu!r}; choose one of {', '.join(GPU_MODES)}")

    # -- privileges -----------------------------------------------------------------------

    def _user(self, image: str, labels: Mapping[str, str], out_dir: Path) -> str:
        """The uid:gid a container runs as; never 0 unless the image needs it and that is allowed.

        A root relpipe hands the output folder to the unprivileged user, which must write it.
        """
        if labels.get(NEEDS_ROOT_LABEL, "").lower() == "true":
            if not self.allow_root:
                raise ContainerError(
                    f"{image} is labelled {NEEDS_ROOT_LABEL}=true (it runs only as root); "
                    f"set {ALLOW_ROOT_ENV}=1 to allow that",
                    2,
                )
            return "0:0"
        if self.user is not None:
            return self.user
        if os.getuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        uid, gid = UNPRIVILEGED
        os.chown(out_dir, uid, gid)
        return f"{uid}:{gid}"

    def _volume_tmpfs(self, image: str, mounted: set[str]) -> dict[str, str]:
        """A bounded tmpfs over each VOLUME the image declares: docker would otherwise create a
        writable anonymous volume there (despite the read-only root) that outlives the run."""
        import docker.errors

        try:
            config = self.client.images.get(image).attrs.get("Config") or {}
        except docker.errors.DockerException as exc:
            raise ContainerError(f"cannot inspect {image}: {_one_line(str(exc), 200)}") from None
        declared = sorted(str(v) for v in (config.get("Volumes") or {}))
        if len(declared) > self.limits.volumes:
            raise ContainerError(
                f"{image} declares {len(declared)} volumes, over the limit of "
                f"{self.limits.volumes}; refusing",
                1,
            )
        options = f"rw,nosuid,nodev,mode=1777,size={self.limits.volume_size}"
        return {path: options for path in declared if path not in mounted and path != "/tmp"}

    # -- ownership ------------------------------------------------------------------------

    def container_labels(self, kind: str) -> dict[str, str]:
        """Labels of a container this process creates for `kind` (engine | extract)."""
        pid = os.getpid()
        labels = {
            RUN_LABEL: "1",
            KIND_LABEL: kind,
            HOST_LABEL: socket.gethostname(),
            PID_LABEL: str(pid),
        }
        started = process_start(pid)
        if started is not None:
            labels[PID_START_LABEL] = started
        if self.owner:
            labels[OWNER_LABEL] = self.owner
        return labels

    def reap_stale(self, owner: str) -> list[str]:
        """Remove the containers of `owner` whose creating process is gone; returns their ids.

        Only containers labelled with this owner and created on this host are looked at, and one
        is removed only when its creating pid no longer runs (or now names a later process): the
        containers of a live process (another shard of the same run, say) and of other owners are
        never touched. Meant for the start of a run, to clean up after a killed one.
        """
        import docker.errors
        import requests

        if not owner:
            raise ContainerError("reap_stale needs an owner (a run or session id)")
        host = socket.gethostname()
        filters = {"label": [f"{OWNER_LABEL}={owner}", f"{HOST_LABEL}={host}"]}
        try:
            # The low-level listing carries the labels itself: the high-level list inspects
            # each container afterwards and fails on one removed in between by its own client.
            listed = self.client.api.containers(all=True, filters=filters)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise ContainerError(
                f"cannot list containers of {owner}: {_one_line(str(exc), 200)}"
            ) from None
        removed = []
        for entry in listed:
            labels = entry.get("Labels") or {}
            cid = str(entry.get("Id", ""))
            # The filter matched already; check again so a lying listing removes nothing.
            if not cid or labels.get(OWNER_LABEL) != owner or labels.get(HOST_LABEL) != host:
                continue
            try:
                pid = int(labels.get(PID_LABEL, ""))
            except ValueError:
                continue  # no pid: not ours to judge
            if process_alive(pid, labels.get(PID_START_LABEL)):
                continue
            try:
                self.client.api.remove_container(cid, force=True, v=True)
            except docker.errors.NotFound:
                continue  # removed meanwhile (its own client, or another reaper)
            except docker.errors.APIError as exc:
                raise ContainerError(
                    f"cannot remove stale container {cid[:12]} of {owner}: "
                    f"{_one_line(str(exc), 200)}"
                ) from None
            removed.append(cid)
        return removed

    # -- running --------------------------------------------------------------------------

    def run(
        self,
        ref: str | Reference,
        argv: Sequence[str],
        *,
        out_dir: Path,
        mounts: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 600.0,
        gpu: str | None = None,
        workdir: str = "/tmp",
        result_command: str | None = None,
    ) -> EngineRun:
        """Run `argv` in the image under the sandbox; `mounts` are host path -> container path (ro).

        With `result_command`, out_dir/result.json must hold a valid result of that engine command
        whose status agrees with the exit code; otherwise only the exit code decides.
        """
        import docker.errors
        import requests
        from docker.types import LogConfig

        image, labels = self.ensure_image(ref)
        gpu = gpu or self.gpu
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        user = self._user(image, labels, out_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out_dir / RESULT_NAME)  # a stale result must never pass for a new one
        volumes = {
            str(Path(h).resolve()): {"bind": c, "mode": "ro"} for h, c in (mounts or {}).items()
        }
        volumes.update(self._toolchain_mounts(labels))
        volumes[str(out_dir.resolve())] = {"bind": OUT_DIR, "mode": "rw"}
        environment = {
            "HOME": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TMPDIR": "/tmp",
            # git refuses repositories owned by another uid unless told they are safe.
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": "*",
        }
        if gpu == "none":
            environment["TRITON_INTERPRET"] = "1"  # no GPU: Triton kernels run in its interpreter
        environment.update(env or {})
        options: dict[str, Any] = dict(
            image=image,
            command=list(argv),
            detach=True,
            environment=environment,
            volumes=volumes,
            working_dir=workdir,
            network_mode="none",
            security_opt=["no-new-privileges"],
            cap_drop=["ALL"],
            read_only=True,
            tmpfs={
                "/tmp": f"rw,nosuid,nodev,mode=1777,size={self.limits.tmpfs_size}",
                **self._volume_tmpfs(image, {v["bind"] for v in volumes.values()}),
            },
            mem_limit=self.limits.mem,
            memswap_limit=self.limits.mem,
            pids_limit=self.limits.pids,
            user=user,
            ipc_mode="private",
            log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
            labels=self.container_labels("engine"),
        )
        options.update(self._gpu_options(gpu))
        start = time.monotonic()
        timed_out = False
        exit_code: int | None = None
        overflow = False
        with self._container(f"container for {image} failed", **options) as container:
            container.start()
            deadline = start + timeout_s
            # Waited in short slices so the output folder is measured while the container runs:
            # a hostile image is killed once it writes past the cap, not at its timeout.
            while True:
                slice_s = max(min(self.limits.out_dir_poll_s, deadline - time.monotonic()), 0.01)
                try:
                    status = container.wait(timeout=slice_s)
                    exit_code = int(status.get("StatusCode", -1))
                    break
                except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                    # docker-py's wait(timeout) is the HTTP read timeout: the container still runs.
                    overflow = _tree_bytes(out_dir) > self.limits.out_dir_bytes
                    timed_out = not overflow and time.monotonic() >= deadline
                    if overflow or timed_out:
                        with contextlib.suppress(docker.errors.APIError):
                            container.kill()
                        break
            duration = time.monotonic() - start
            logs, truncated = self._logs(container)
        result, error = None, None
        if timed_out:
            error = f"killed after the {timeout_s:g}s timeout (container removed)"
        elif overflow or _tree_bytes(out_dir) > self.limits.out_dir_bytes:
            error = f"output folder grew beyond {self.limits.out_dir_bytes} bytes" + (
                " (killed while running)" if overflow else ""
            )
        elif result_command is not None:
            try:
                result = read_result(out_dir, result_command, self.limits.result_bytes)
                expected = RESULT_STATUSES[result["status"]]
                if exit_code != expected:
                    error = (
                        f"exit code {exit_code} disagrees with result status {result['status']!r}"
                    )
                elif exit_code != 0:
                    error = f"{result_command} {result['status']}ed (exit {exit_code})"
            except ContainerError as exc:
                error = str(exc) + (f" (exit {exit_code})" if exit_code else "")
        elif exit_code != 0:
            error = f"exited with {exit_code}"
        return EngineRun(
            image,
            tuple(argv),
            exit_code,
            timed_out,
            duration,
            result,
            error,
            logs,
            truncated,
            str(out_dir),
        )

    def _logs(self, container: Any) -> tuple[str, bool]:
        """Head and tail of the logs (each at most limits.log_bytes); True when some were
        dropped."""
        import docker.errors

        cap = self.limits.log_bytes
        head = bytearray()
        tail = bytearray()
        dropped = False
        try:
            for chunk in container.logs(stream=True, stdout=True, stderr=True, follow=False):
                if len(head) < cap:
                    take = chunk[: cap - len(head)]
                    head += take
                    chunk = chunk[len(take) :]
                if chunk:
                    tail += chunk
                    if len(tail) > cap:
                        del tail[: len(tail) - cap]
                        dropped = True
        except docker.errors.APIError as exc:
            # Logs are evidence, not the verdict (exit code + result decide): say they are missing.
            tail += f"\n[logs unavailable: {_one_line(str(exc), 160)}]".encode()
            dropped = True
        text = head.decode(errors="replace")
        if tail:
            text += ("\n[... logs truncated ...]\n" if dropped else "") + tail.decode(
                errors="replace"
            )
        return text, dropped

    def run_engine(
        self,
        ref: str | Reference,
        command: str,
        args: Sequence[str] = (),
        *,
        engine_dir: Path,
        out_dir: Path,
        timeout_s: float = 600.0,
        gpu: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> EngineRun:
        """`python -m relpipe.engine COMMAND ARGS --out /relpipe/out/result.json` inside the
        image."""
        if command not in ENGINE_COMMANDS:
            raise ContainerError(
                f"unknown engine command {command!r}; choose {', '.join(ENGINE_COMMANDS)}"
            )
        engine_dir = Path(engine_dir)
        if not (engine_dir / "__main__.py").is_file():
            raise ContainerError(f"{engine_dir} is not the engine package folder (no __main__.py)")
        argv = [
            self.python,
            "-m",
            "relpipe.engine",
            command,
            *args,
            "--out",
            f"{OUT_DIR}/{RESULT_NAME}",
        ]
        environment = {"PYTHONPATH": PAYLOAD_DIR, **(env or {})}
        return self.run(
            ref,
            argv,
            out_dir=out_dir,
            mounts={str(engine_dir): f"{PAYLOAD_DIR}/relpipe/engine"},
            env=environment,
            timeout_s=timeout_s,
            gpu=gpu,
            workdir=PAYLOAD_DIR,
            result_command=command,
        )

    # -- copying out --------------------------------------------------------------------------

    def extract_path(self, ref: str | Reference, path_in_image: str, dest: Path) -> Path:
        """Copy a folder (or file) out of the image into `dest` (which must not exist)."""
        import docker.errors

        if not path_in_image.startswith("/") or ".." in PurePosixPath(path_in_image).parts:
            raise ContainerError(
                f"path in image must be absolute without '..', got {path_in_image!r}"
            )
        image, _labels = self.ensure_image(ref)
        root = PurePosixPath(path_in_image).name
        failure = f"cannot copy {path_in_image} out of {image}"
        # Created, never started: nothing in the image runs to produce the copy.
        with self._container(
            failure,
            image=image,
            command=["true"],
            network_mode="none",
            labels=self.container_labels("extract"),
        ) as box:
            try:
                chunks, _stat = box.get_archive(path_in_image)
            except docker.errors.NotFound:
                raise ContainerError(f"{path_in_image} does not exist in {image}", 1) from None
            with tempfile.TemporaryFile() as spool:
                size = 0
                for chunk in chunks:
                    size += len(chunk)
                    if size > self.limits.archive_bytes:
                        raise ContainerError(
                            f"{path_in_image} in {image} is larger than "
                            f"{self.limits.archive_bytes} bytes",
                            1,
                        )
                    spool.write(chunk)
                spool.seek(0)
                extract_archive(spool, Path(dest), root, self.limits)
        return Path(dest)

    @contextlib.contextmanager
    def _container(self, failure: str, **options: Any) -> Iterator[Any]:
        """A created container, removed whatever happens; a Docker error becomes one line
        `failure: reason` (ContainerError)."""
        import docker.errors

        container = None
        try:
            container = self.client.containers.create(**options)
            yield container
        except docker.errors.DockerException as exc:
            raise ContainerError(f"{failure}: {_one_line(str(exc), 200)}") from None
        finally:
            if container is not None:
                with contextlib.suppress(docker.errors.APIError):
                    container.remove(force=True, v=True)  # with any anonymous volume
