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
from `from_env` first reaps the containers that dead processes of its owner left behind
(`images.ownership`). Its result JSON is untrusted: read without following links, size-capped,
parsed strictly and checked against the engine's result envelope on the host (`images.results`).

Also owns copying a folder (e.g. `/app/ATOM` with its `.git`) out of an image through a created,
never-started container, extracting the archive so that no member or link can land outside dest
(`images.extract`).

Fixture images carry `org.relpipe.toolchain=site-packages`: they expect the host's site-packages
holding torch/triton/numpy mounted read-only at /opt/relpipe/site-packages. Real images lack the
label and use their own torch. This module never imports `engine` (the caller passes its folder).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..core import engines
from ..core.reference import Reference, parse
from .errors import ContainerError
from .extract import extract_archive
from .options import physical
from .ownership import container_labels, reap_stale
from .results import (
    OUT_DIR,
    RESULT_NAME,
    RESULT_STATUSES,
    EngineRun,
    Limits,
    one_line,
    read_result,
    tree_bytes,
)

TOOLCHAIN_LABEL = "org.relpipe.toolchain"
TOOLCHAIN_SITE_PACKAGES = "site-packages"
TOOLCHAIN_MOUNT = "/opt/relpipe/site-packages"
TOOLCHAIN_PACKAGES = ("torch", "triton", "numpy")
TOOLCHAIN_ENV = "RELPIPE_TOOLCHAIN"
GPU_ENV = "RELPIPE_GPU"
PAYLOAD_DIR = "/relpipe/payload"
DECLARATIONS_DIR = "/relpipe/declarations"  # engine declarations from outside relpipe
ENGINE_COMMANDS = ("probe", "smoke", "eval", "serve")
GPU_MODES = ("none", "rocm", "nvidia")
# An image that cannot run unprivileged says so with this label ("true"); it runs as root only
# where the user allows it (ALLOW_ROOT_ENV=1): the image's own word is not enough.
NEEDS_ROOT_LABEL = "org.relpipe.needs-root"
ALLOW_ROOT_ENV = "RELPIPE_ALLOW_ROOT_IMAGES"
UNPRIVILEGED = (65534, 65534)  # nobody:nogroup, for containers started by a root relpipe
DEFAULT_OWNER = "relpipe"  # containers of commands that name no run (diff, images probe)


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


# -- the runtime ------------------------------------------------------------------------------


@dataclass(kw_only=True)
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
                f"cannot reach docker ({one_line(str(exc), 160)}); start dockerd or set DOCKER_HOST"
            ) from None
        kwargs.setdefault("toolchain", host_toolchain())
        kwargs.setdefault("gpu", detect_gpu())
        kwargs.setdefault("owner", DEFAULT_OWNER)
        kwargs.setdefault("allow_root", os.environ.get(ALLOW_ROOT_ENV) == "1")
        runtime = cls(client=client, **kwargs)
        if reap:
            runtime.reap_stale(runtime.owner or DEFAULT_OWNER)
        return runtime

    # -- images ---------------------------------------------------------------------------

    def ensure_image(self, ref: str | Reference) -> tuple[str, dict[str, str]]:
        """Pull `ref` by digest unless present; returns (digest reference, image labels)."""
        import docker.errors

        reference = pinned(ref)
        # Under a registry mirror (images.options) dockerd pulls the same digest from the mirror.
        by_digest = physical(f"{reference.name}@{reference.digest}")
        try:
            try:
                image = self.client.images.get(by_digest)
            except docker.errors.ImageNotFound:
                image = self.client.images.pull(by_digest)
        except docker.errors.DockerException as exc:
            raise ContainerError(f"cannot pull {by_digest}: {one_line(str(exc), 200)}") from None
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
            raise ContainerError(f"cannot inspect {image}: {one_line(str(exc), 200)}") from None
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
        return container_labels(kind, self.owner)

    def reap_stale(self, owner: str) -> list[str]:
        """Remove the containers of `owner` whose creating process is gone; returns their ids
        (`images.ownership.reap_stale`)."""
        return reap_stale(self.client, owner)

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
        image, labels = self.ensure_image(ref)
        gpu = gpu or self.gpu
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        user = self._user(image, labels, out_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out_dir / RESULT_NAME)  # a stale result must never pass for a new one
        options = self._run_options(
            image,
            labels,
            argv,
            out_dir,
            mounts=mounts,
            env=env,
            gpu=gpu,
            workdir=workdir,
            user=user,
        )
        start = time.monotonic()
        with self._container(f"container for {image} failed", **options) as container:
            container.start()
            exit_code, timed_out, overflow = self._wait(container, out_dir, start + timeout_s)
            duration = time.monotonic() - start
            logs, truncated = self._logs(container)
        result, error = None, None
        if timed_out:
            error = f"killed after the {timeout_s:g}s timeout (container removed)"
        elif overflow or tree_bytes(out_dir) > self.limits.out_dir_bytes:
            error = f"output folder grew beyond {self.limits.out_dir_bytes} bytes" + (
                " (killed while running)" if overflow else ""
            )
        elif result_command is not None:
            result, error = self._checked_result(out_dir, result_command, exit_code)
        elif exit_code != 0:
            error = f"exited with {exit_code}"
        return EngineRun(
            image=image,
            argv=tuple(argv),
            exit_code=exit_code,
            timed_out=timed_out,
            duration_s=duration,
            result=result,
            error=error,
            logs=logs,
            logs_truncated=truncated,
            out_dir=str(out_dir),
        )

    def _run_options(
        self,
        image: str,
        labels: Mapping[str, str],
        argv: Sequence[str],
        out_dir: Path,
        *,
        mounts: Mapping[str, str] | None,
        env: Mapping[str, str] | None,
        gpu: str,
        workdir: str,
        user: str,
    ) -> dict[str, Any]:
        """The sandboxed `containers.create` options of a run."""
        from docker.types import LogConfig

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
        return options

    def _wait(
        self, container: Any, out_dir: Path, deadline: float
    ) -> tuple[int | None, bool, bool]:
        """Wait for a started container: (exit code or None, timed out, output overflowed).

        Waited in short slices so the output folder is measured while the container runs: a
        hostile image is killed once it writes past the cap, not at its timeout.
        """
        import docker.errors
        import requests

        while True:
            slice_s = max(min(self.limits.out_dir_poll_s, deadline - time.monotonic()), 0.01)
            try:
                status = container.wait(timeout=slice_s)
                return int(status.get("StatusCode", -1)), False, False
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                # docker-py's wait(timeout) is the HTTP read timeout: the container still runs.
                overflow = tree_bytes(out_dir) > self.limits.out_dir_bytes
                timed_out = not overflow and time.monotonic() >= deadline
                if overflow or timed_out:
                    with contextlib.suppress(docker.errors.APIError):
                        container.kill()
                    return None, timed_out, overflow

    def _checked_result(
        self, out_dir: Path, command: str, exit_code: int | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The result document of `command` and the error (None: PASS) it and the exit code give."""
        result, error = None, None
        try:
            result = read_result(out_dir, command, self.limits.result_bytes)
            expected = RESULT_STATUSES[result["status"]]
            if exit_code != expected:
                error = f"exit code {exit_code} disagrees with result status {result['status']!r}"
            elif exit_code != 0:
                error = f"{command} {result['status']}ed (exit {exit_code})"
        except ContainerError as exc:
            error = str(exc) + (f" (exit {exit_code})" if exit_code else "")
        return result, error

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
            tail += f"\n[logs unavailable: {one_line(str(exc), 160)}]".encode()
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
        engine_dir = Path(engine_dir).resolve()  # the folder itself, not a link to it (relpipe/)
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
        mounts = {str(engine_dir): f"{PAYLOAD_DIR}/relpipe/engine"}
        # Engines declared outside relpipe (RELPIPE_ENGINE_DECLARATIONS) travel with the payload:
        # each folder read-only at DECLARATIONS_DIR/<n>, named to the payload's reader.
        extra = {
            str(Path(f).resolve()): f"{DECLARATIONS_DIR}/{i}"
            for i, f in enumerate(engines.folders()[1:])
        }
        if extra:
            mounts.update(extra)
            environment[engines.DECLARATIONS_ENV] = ":".join(extra.values())
        return self.run(
            ref,
            argv,
            out_dir=out_dir,
            mounts=mounts,
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
            raise ContainerError(f"{failure}: {one_line(str(exc), 200)}") from None
        finally:
            if container is not None:
                with contextlib.suppress(docker.errors.APIError):
                    container.remove(force=True, v=True)  # with any anonymous volume
