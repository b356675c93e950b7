"""Fixture nightlies: reproducible ATOM-like images built in Python and pushed to a registry.

Owns everything between "a history in `images.fixture_repo`" and "a tag in a registry":
deterministic layer tars (sorted entries, uid/gid 0, normalised modes, fixed mtimes for generated
files, gzip with mtime 0), the image config (fixed `created`), the Docker v2 manifest, an on-disk
layer cache keyed by the layer's inputs, and the push through `images.registry.RegistryClient`.
The layers themselves (tars, cache, the base root filesystem) are `images.layers`.
No `docker build` and no Docker Hub: the root filesystem is the host's own Python (binary, stdlib
without tests/tk/idle/ensurepip, `ldd` closure of its libraries), the host's `git`, and the fixture
repositories made with `git fast-import` (fixed identities and dates, so SHAs are stable).

torch/triton/numpy are NOT baked in (1.6 GB per base): the image config carries the label
`org.relpipe.toolchain=site-packages`, meaning "mount the host's site-packages with torch read-only
at /opt/relpipe/site-packages"; `images.runtime` honours it (see docs/fixtures.md). The shared
libraries those packages need from the system (libstdc++, libgomp, ...) are in the base layer.

Same inputs -> same digests; a second build finds the expected manifest digest already under the
tag and pushes nothing (a cache hit).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import platform
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import engines, jsoncodec, process
from ..core.reference import InvalidReference
from . import fixture_repo as fx
from . import real_engine
from .errors import BuildError, ImageError
from .layers import (
    IMAGE_PYTHON_PREFIX,
    Entry,
    HostPython,
    Layer,
    LayerCache,
    base_entries,
    cache_key,
    entries_key,
    host_python,
)
from .manifest import (
    DOCKER_CONFIG,
    DOCKER_MANIFEST,
    Descriptor,
    render_manifest,
    sha256_digest,
)
from .registry import RegistryClient
from .runtime import TOOLCHAIN_LABEL, TOOLCHAIN_MOUNT, TOOLCHAIN_SITE_PACKAGES

LAYER_MEDIA_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"
CACHE_ENV = "RELPIPE_CACHE"
NIGHTLY_TIMES = (
    "202609281543",
    "202610011210",
    "202610040905",
    "202610070333",
    "202610100617",
    "202610131501",
)
assert len(NIGHTLY_TIMES) == fx.MAX_NIGHTLIES
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
_ATOM = engines.engine(engines.DEFAULT_ENGINE)
ATOM_CHECKOUT = _ATOM.fixtures.checkout  # "app/ATOM": the engine checkout of ATOM's fixtures


@dataclass(frozen=True, kw_only=True)
class FixtureImage:
    """One pushed fixture nightly and the facts the probe must report for it."""

    registry: str
    repository: str
    tag: str
    digest: str
    variant: str
    engine_version: str
    engine_commit: str
    aiter_version: str
    aiter_commit: str
    rocm_version: str
    lmcache_version: str
    created: str
    pushed: bool  # False: the registry already had this exact manifest under the tag (cache hit)

    @property
    def reference(self) -> str:
        """`registry/repository@digest`: what gets run."""
        return f"{self.registry}/{self.repository}@{self.digest}"

    @property
    def tagged(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"

    def to_json(self) -> dict[str, Any]:
        """`relpipe fixtures build --json`: `reference` in place of registry and repository."""
        out = jsoncodec.fields_to_json(self, exclude=("registry", "repository"))
        return {
            "tag": out.pop("tag"),
            "digest": out.pop("digest"),
            "reference": self.reference,
            **out,
        }


@dataclass(frozen=True)
class RepoBuild:
    """A fixture git repository: its files (worktree + .git), head commit and version."""

    entries: tuple[Entry, ...]
    commit: str
    version: str


# -- helpers ----------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "relpipe") / "fixtures"


def _run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> bytes:
    try:
        done = process.run(argv, cwd=cwd, env=env, input=stdin, what=" ".join(argv[:3]))
    except process.ProcessError as exc:
        raise BuildError(str(exc)) from None
    return done.stdout


# -- fixture git repositories -----------------------------------------------------------------


def _fast_import_stream(
    commits: Sequence[fx.CommitSpec], tag: str, tag_index: int, branch: str
) -> bytes:
    out = io.BytesIO()

    def data(payload: bytes) -> None:
        out.write(b"data %d\n" % len(payload) + payload + b"\n")

    for i, commit in enumerate(commits):
        when = fx.EPOCH + 3600 * i
        name, email = commit.author
        out.write(f"commit refs/heads/{branch}\nmark :{i + 1}\n".encode())
        out.write(f"author {name} <{email}> {when} +0000\n".encode())
        out.write(f"committer GitHub <noreply@github.com> {when} +0000\n".encode())
        data(commit.message.encode())
        if i:
            out.write(f"from :{i}\n".encode())
        for path, content in commit.changes:
            if content is None:
                out.write(f"D {path}\n".encode())
            else:
                out.write(f"M 100644 inline {path}\n".encode())
                data(content.encode())
        out.write(b"\n")
    out.write(f"reset refs/tags/{tag}\nfrom :{tag_index + 1}\n\n".encode())
    return out.getvalue()


def build_repo(history: fx.History, commits: Sequence[fx.CommitSpec], dest: str) -> RepoBuild:
    """A real git repository of `commits` laid out at `dest` in the image (worktree + .git)."""
    with tempfile.TemporaryDirectory(prefix="relpipe-fixture-repo-") as tmp:
        repo = Path(tmp) / "repo"
        env = real_engine.git_env(Path(tmp))
        # An empty template: no sample hooks or description whose bytes vary with git's version.
        _run(["git", "init", "-q", "--template=", "-b", history.branch, str(repo)], env=env)
        _run(["git", "-C", str(repo), "config", "core.logAllRefUpdates", "false"], env=env)
        _run(
            ["git", "-C", str(repo), "fast-import", "--quiet"],
            env=env,
            stdin=_fast_import_stream(commits, history.tag, history.tag_index, history.branch),
        )
        # read-tree writes index entries without stat data, so the index bytes are stable.
        _run(["git", "-C", str(repo), "read-tree", "HEAD"], env=env)
        commit = _run(["git", "-C", str(repo), "rev-parse", "HEAD"], env=env).decode().strip()
        entries: list[Entry] = []
        gitdir = repo / ".git"
        for dirpath, dirnames, filenames in os.walk(gitdir):
            dirnames.sort()
            for name in sorted(filenames):
                src = Path(dirpath) / name
                rel = src.relative_to(repo).as_posix()
                entries.append(
                    Entry(path=f"{dest}/{rel}", kind="file", mode=0o644, data=src.read_bytes())
                )
            for name in dirnames:  # empty folders (refs/heads, branches) matter to git
                rel = (Path(dirpath) / name).relative_to(repo).as_posix()
                entries.append(Entry(path=f"{dest}/{rel}", kind="dir", mode=0o755))
    files: dict[str, str] = {}
    for c in commits:
        for path, content in c.changes:
            if content is None:
                files.pop(path, None)
            else:
                files[path] = content
    entries += [
        Entry(path=f"{dest}/{p}", kind="file", mode=0o644, data=t.encode())
        for p, t in sorted(files.items())
    ]
    since = len(commits) - 1 - history.tag_index
    version = f"{history.next_version}.dev{since}+g{commit[:9]}"
    return RepoBuild(tuple(entries), commit, version)


def _dist_info(
    site: str, name: str, version: str, editable_path: str | None, top_level: str | None
) -> list[Entry]:
    """An installed distribution as pip writes one (editable installs get a .pth and direct_url)."""
    base = f"{site}/{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    out = [
        Entry(path=f"{base}/METADATA", kind="file", data=meta),
        Entry(path=f"{base}/INSTALLER", kind="file", data=b"pip\n"),
    ]
    files = [f"{name}-{version}.dist-info/METADATA", f"{name}-{version}.dist-info/INSTALLER"]
    if top_level:
        out.append(Entry(path=f"{base}/top_level.txt", kind="file", data=f"{top_level}\n".encode()))
        files.append(f"{name}-{version}.dist-info/top_level.txt")
    if editable_path:
        url = {"dir_info": {"editable": True}, "url": f"file://{editable_path}"}
        out.append(
            Entry(path=f"{base}/direct_url.json", kind="file", data=json.dumps(url).encode())
        )
        pth = f"__editable__.{name}-{version}.pth"
        out.append(Entry(path=f"{site}/{pth}", kind="file", data=f"{editable_path}\n".encode()))
        files += [f"{name}-{version}.dist-info/direct_url.json", pth]
    record = "".join(f"{f},,\n" for f in files) + f"{name}-{version}.dist-info/RECORD,,\n"
    out.append(Entry(path=f"{base}/RECORD", kind="file", data=record.encode()))
    return out


def _site(py: HostPython) -> str:
    return f"{IMAGE_PYTHON_PREFIX}/lib/python{py.version}/site-packages"


def vendor_entries(py: HostPython, aiter: RepoBuild) -> list[Entry]:
    """What every nightly shares: AITER, ROCm's version file, LMCache, the toolchain .pth."""
    site = _site(py)
    return [
        *aiter.entries,
        *_dist_info(site, "amd_aiter", aiter.version, "/app/aiter-test", "aiter"),
        *_dist_info(site, "lmcache", fx.LMCACHE_VERSION, None, "lmcache"),
        Entry(
            path="opt/rocm/.info/version",
            kind="file",
            data=f"{fx.ROCM_VERSION}-{fx.ROCM_BUILD}\n".encode(),
        ),
        # A path line in a .pth is appended to sys.path only when it exists, i.e. when mounted.
        Entry(
            path=f"{site}/relpipe-toolchain.pth", kind="file", data=f"{TOOLCHAIN_MOUNT}\n".encode()
        ),
    ]


def atom_entries(py: HostPython, atom: RepoBuild) -> list[Entry]:
    """ATOM's checkout and its editable install, as its declaration's `fixtures` lay it out."""
    dist = _ATOM.distribution
    return [*atom.entries, *_dist_info(_site(py), dist, atom.version, f"/{ATOM_CHECKOUT}", dist)]


# -- image assembly and push ------------------------------------------------------------------


def nightly_tag(index: int) -> str:
    return f"nightly_{NIGHTLY_TIMES[index]}"


def _created(index: int) -> str:
    when = dt.datetime.strptime(NIGHTLY_TIMES[index], "%Y%m%d%H%M").replace(tzinfo=dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def image_config(layers: Sequence[Layer], created: str, labels: dict[str, str]) -> bytes:
    doc = {
        "architecture": _ARCH.get(platform.machine(), platform.machine()),
        "os": "linux",
        "created": created,
        "config": {
            "Env": [
                "PATH=/usr/local/bin:/usr/bin:/bin",
                "LANG=C.UTF-8",
                "PYTHONDONTWRITEBYTECODE=1",
            ],
            "WorkingDir": f"/{ATOM_CHECKOUT}",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": created, "created_by": "relpipe fixtures build"} for _ in layers],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def image_manifest(config: bytes, layers: Sequence[Layer]) -> bytes:
    return render_manifest(
        DOCKER_MANIFEST,
        Descriptor(media_type=DOCKER_CONFIG, digest=sha256_digest(config), size=len(config)),
        [
            Descriptor(media_type=LAYER_MEDIA_TYPE, digest=layer.digest, size=layer.size)
            for layer in layers
        ],
    )


# engine -> (its name in the build log, the image title label); else (engine, "<engine> fixture")
_ENGINE_TITLES = {"atom": ("ATOM", "atom-dev fixture")}


@dataclass(frozen=True, kw_only=True)
class _Planned:
    index: int
    tag: str
    layers: tuple[Layer, ...]
    config: bytes
    manifest: bytes
    atom: RepoBuild
    created: str
    variant: str


class FixtureBuilder:
    """Builds fixture nightlies (layers cached on disk) and pushes them with a RegistryClient."""

    def __init__(
        self, cache_dir: Path | None = None, log: Callable[[str], None] | None = None
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.layers = LayerCache(self.cache_dir)
        self.log = log or (lambda _msg: None)
        self.layer_hits = 0
        self.layer_builds = 0
        self._py = host_python()

    def _layer(self, key: str, make: Callable[[], Iterable[Entry]], what: str) -> Layer:
        layer, hit = self.layers.get_or_build(key, make)
        if hit:
            self.layer_hits += 1
        else:
            self.layer_builds += 1
            self.log(f"built layer {what}: {layer.digest[:19]} ({layer.size / 2**20:.1f} MiB)")
        return layer

    def plan(self, count: int, variant: str) -> tuple[list[_Planned], RepoBuild]:
        """Layers, config and manifest of each nightly: everything but the push."""
        if variant not in fx.VARIANTS:
            raise BuildError(
                f"unknown fixture variant {variant!r}; choose one of {', '.join(fx.VARIANTS)}"
            )
        if not 1 <= count <= fx.MAX_NIGHTLIES:
            raise BuildError(f"--count must be between 1 and {fx.MAX_NIGHTLIES}, got {count}")
        base, vendor, aiter = self._common()
        planned = []
        for index in range(count):
            kind = variant if index == count - 1 else "good"
            atom = build_repo(fx.ATOM_HISTORY, fx.atom_commits(index, kind), ATOM_CHECKOUT)
            planned.append(
                self._nightly(index, nightly_tag(index), _created(index), kind, base, vendor, atom)
            )
        return planned, aiter

    def plan_engine(self, source: Path, revs: Sequence[str]) -> tuple[list[_Planned], RepoBuild]:
        """Nightlies whose /app/ATOM is `source` at each of `revs` (images.real_engine), tagged
        from the commits' dates."""
        commits = real_engine.engine_commits(source, revs)
        base, vendor, aiter = self._common()
        planned = []
        for index, commit in enumerate(commits):
            atom = engine_repo_build(source, commit)
            planned.append(
                self._nightly(index, commit.tag, commit.created, "good", base, vendor, atom)
            )
        return planned, aiter

    def _common(self) -> tuple[Layer, Layer, RepoBuild]:
        """The base layer (Python, git, libraries), the vendor layer (AITER ...), and AITER."""
        entries, inputs = base_entries(self._py, self.cache_dir)
        base = self._layer(cache_key("base", inputs), lambda: entries, "base (python + git + libs)")
        aiter = build_repo(fx.AITER_HISTORY, fx.AITER_COMMITS, "app/aiter-test")
        vendor_list = vendor_entries(self._py, aiter)
        vendor = self._layer(
            cache_key("vendor", entries_key(vendor_list)), lambda: vendor_list, "vendor"
        )
        return base, vendor, aiter

    def _nightly(
        self,
        index: int,
        tag: str,
        created: str,
        variant: str,
        base: Layer,
        vendor: Layer,
        atom: RepoBuild,
        engine: str = "atom",
        entries: Sequence[Entry] | None = None,
    ) -> _Planned:
        """One nightly over `base` and `vendor`: its engine layer is `entries` (by default ATOM's
        /app/ATOM and its editable install), `atom` the engine checkout the image carries."""
        engine_list = list(entries) if entries is not None else atom_entries(self._py, atom)
        name, title = _ENGINE_TITLES.get(engine, (engine, f"{engine} fixture"))
        layer = self._layer(
            cache_key(engine, entries_key(engine_list)),
            lambda: engine_list,
            f"{name} {atom.version}",
        )
        layers = (base, vendor, layer)
        labels = {
            TOOLCHAIN_LABEL: TOOLCHAIN_SITE_PACKAGES,
            "org.opencontainers.image.title": title,
            "org.opencontainers.image.version": atom.version,
            "org.opencontainers.image.revision": atom.commit,
            "org.relpipe.fixture.variant": variant,
        }
        config = image_config(layers, created, labels)
        manifest = image_manifest(config, layers)
        return _Planned(
            index=index,
            tag=tag,
            layers=layers,
            config=config,
            manifest=manifest,
            atom=atom,
            created=created,
            variant=variant,
        )

    def build(
        self,
        registry: str,
        repository: str,
        count: int = 4,
        variant: str = "good",
        client: RegistryClient | None = None,
        engine_repo: Path | None = None,
        engine_commits: Sequence[str] = (),
    ) -> list[FixtureImage]:
        """Build and push `count` nightlies (the last one of `variant`), or with `engine_repo`
        one per commit of `engine_commits` (real history); cache hits push nothing."""
        if engine_repo is not None:
            planned, aiter = self.plan_engine(engine_repo, engine_commits)
        else:
            planned, aiter = self.plan(count, variant)
        name = f"{registry}/{repository}"
        own = client is None
        reg = client if client is not None else RegistryClient()
        out: list[FixtureImage] = []
        try:
            for item in planned:
                expected = sha256_digest(item.manifest)
                pushed = self._have(reg, f"{name}:{item.tag}") != expected
                if pushed:
                    for layer in item.layers:
                        reg.upload_blob(name, layer.blob.read_bytes())
                    reg.upload_blob(name, item.config)
                    got = reg.put_manifest(name, item.tag, item.manifest, DOCKER_MANIFEST)
                    if got != expected:
                        raise BuildError(
                            f"{name}:{item.tag}: registry stored {got}, expected {expected}"
                        )
                self.log(f"{name}:{item.tag} {expected} {'pushed' if pushed else 'cache hit'}")
                out.append(
                    FixtureImage(
                        registry=registry,
                        repository=repository,
                        tag=item.tag,
                        digest=expected,
                        variant=item.variant,
                        engine_version=item.atom.version,
                        engine_commit=item.atom.commit,
                        aiter_version=aiter.version,
                        aiter_commit=aiter.commit,
                        rocm_version=fx.ROCM_VERSION,
                        lmcache_version=fx.LMCACHE_VERSION,
                        created=item.created,
                        pushed=pushed,
                    )
                )
        finally:
            if own:
                reg.close()
        return out

    @staticmethod
    def _have(client: RegistryClient, ref: str) -> str | None:
        """The digest the registry has under `ref`, None when it has none (or cannot say)."""
        try:
            return str(client.resolve(ref).digest)
        except (ImageError, InvalidReference):
            # Absent tag or repository; any other registry fault resurfaces on the push below.
            return None


def build_fixtures(
    registry: str,
    repository: str,
    count: int = 4,
    variant: str = "good",
    cache_dir: Path | None = None,
    log: Callable[[str], None] | None = None,
    client: Any = None,
    engine_repo: Path | None = None,
    engine_commits: Sequence[str] = (),
) -> list[FixtureImage]:
    """Build and push fixture nightlies `nightly_YYYYMMDDHHMM` to `registry/repository`.

    The first `count - 1` nightlies are always good; the last is of `variant` ("good", "broken":
    rms_norm numerically wrong, "hang": silu_and_mul spins forever). Same inputs, same digests.
    With `engine_repo`, one nightly per commit of `engine_commits` instead, /app/ATOM being that
    repository at the commit (`engine_repo_build`), tagged from the commit's date.
    """
    return FixtureBuilder(cache_dir, log).build(
        registry,
        repository,
        count,
        variant,
        client,
        engine_repo=engine_repo,
        engine_commits=engine_commits,
    )


def engine_repo_build(source: Path, commit: real_engine.EngineCommit) -> RepoBuild:
    """/app/ATOM from a real repository: the checkout of `commit` with its history
    (`real_engine.checkout`), and the version file `pip install -e .` makes setuptools-scm write
    (`[tool.setuptools_scm] write_to` in the commit's pyproject.toml)."""
    with tempfile.TemporaryDirectory(prefix="relpipe-engine-repo-") as tmp:
        repo = Path(tmp) / "ATOM"
        real_engine.checkout(source, commit, repo)
        entries: list[Entry] = []
        for dirpath, dirnames, filenames in os.walk(repo):
            dirnames.sort()
            for name in sorted(filenames):
                src = Path(dirpath) / name
                rel = f"{ATOM_CHECKOUT}/{src.relative_to(repo).as_posix()}"
                if src.is_symlink():
                    entries.append(Entry(path=rel, kind="symlink", target=os.readlink(src)))
                else:
                    mode = 0o755 if os.access(src, os.X_OK) else 0o644
                    entries.append(Entry(path=rel, kind="file", mode=mode, data=src.read_bytes()))
            for name in dirnames:
                src = Path(dirpath) / name
                rel = f"{ATOM_CHECKOUT}/{src.relative_to(repo).as_posix()}"
                if src.is_symlink():
                    entries.append(Entry(path=rel, kind="symlink", target=os.readlink(src)))
                else:
                    entries.append(Entry(path=rel, kind="dir", mode=0o755))
        written = _scm_write_to(repo / "pyproject.toml", commit.version)
        if written is not None:
            entries.append(
                Entry(
                    path=f"{ATOM_CHECKOUT}/{written[0]}", kind="file", mode=0o644, data=written[1]
                )
            )
    return RepoBuild(tuple(entries), commit.sha, commit.version)


def _scm_write_to(pyproject: Path, version: str) -> tuple[str, bytes] | None:
    """(path, bytes) of the version file setuptools-scm writes for `version`, if configured."""

    try:
        scm = tomllib.loads(pyproject.read_text("utf-8"))["tool"]["setuptools_scm"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = scm.get("write_to") if isinstance(scm, dict) else None
    if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/"):
        return None
    template = scm.get("write_to_template", "__version__ = version = {version!r}\n")
    if not isinstance(template, str):
        return None
    return path, template.format(version=version).encode()
