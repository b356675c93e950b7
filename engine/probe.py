"""`python -m relpipe.engine probe`: facts about the image, as JSON, without needing torch.

Engine version from the installed distribution's metadata (vLLM and SGLang: also their version
files and PEP 610 records, `engine.packaging`) and commit from its source
checkout (`git -C DIR rev-parse HEAD`, or by reading `.git/HEAD`, loose refs and packed-refs
directly when git is missing or refuses), cross-checked with the `+g<sha>` of a setuptools-scm
version; AITER commit likewise; LMCache, torch, triton, numpy versions from metadata; ROCm from
its version file; CUDA/HIP versions and the GPU arch from torch, asked in a child process with a
timeout so a broken torch cannot take the probe down. A fact that cannot be found is null and
its reason is in `errors`; nothing is guessed. Every file read is capped.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import platform
import re
import subprocess  # not relpipe.core.process: engine/ runs in foreign images (stdlib only)
import sys
from collections.abc import Sequence
from typing import Any

from . import declaration, packaging, result

HEX = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")
SCM_SHA = re.compile(r"\+g([0-9a-f]{7,40})(?:\.|\Z)")
ROCM_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)(?:-(\w+))?\Z")
MAX_SMALL = 4096
MAX_PACKED = 16 << 20
TORCH_TIMEOUT = 120.0
TRITON_DISTS = ("triton", "pytorch-triton-rocm", "pytorch-triton", "triton-rocm")
AITER_DISTS = ("amd-aiter", "aiter")

_TORCH_FACTS = """
import json
import torch
facts = {"version": torch.__version__, "cuda": torch.version.cuda,
         "hip": getattr(torch.version, "hip", None), "gpu": None, "gpu_reason": None}
try:
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        arch = getattr(props, "gcnArchName", None) or f"sm_{props.major}{props.minor}"
        facts["gpu"] = {"arch": arch.split(":")[0], "name": props.name, "count": torch.cuda.device_count()}
    else:
        facts["gpu_reason"] = "torch sees no GPU"
except Exception as exc:
    facts["gpu_reason"] = f"GPU query failed: {type(exc).__name__}: {exc}"
print(json.dumps(facts))
"""  # noqa: E501 - source run by `python -c`; wrapping it would change the string


def _read_small(path: str, cap: int = MAX_SMALL) -> str:
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise OSError(f"{path} is larger than {cap} bytes")
    return data.decode("utf-8", errors="strict")


def _git_dir(repo: str) -> str:
    dot = os.path.join(repo, ".git")
    if os.path.isfile(dot):  # worktree or submodule: "gitdir: <path>"
        text = _read_small(dot).strip()
        if not text.startswith("gitdir:"):
            raise OSError(f"{dot} is not a gitdir link")
        target = text[len("gitdir:") :].strip()
        return target if os.path.isabs(target) else os.path.join(repo, target)
    return dot


def read_head(repo: str) -> str:
    """HEAD's commit by reading the repository files (no git binary); OSError when unreadable."""
    gitdir = _git_dir(repo)
    head = _read_small(os.path.join(gitdir, "HEAD")).strip()
    if HEX.match(head):
        return head
    if not head.startswith("ref: refs/"):
        raise OSError(f"unrecognised HEAD {head[:60]!r}")
    ref = head[len("ref: ") :]
    if ".." in ref.split("/") or "\\" in ref:
        raise OSError(f"refusing ref path {ref!r}")
    for base in (gitdir, _common_dir(gitdir)):
        loose = os.path.join(base, ref)
        if os.path.isfile(loose):
            sha = _read_small(loose).strip()
            if HEX.match(sha):
                return sha
            raise OSError(f"{loose} does not hold a commit id")
        packed = os.path.join(base, "packed-refs")
        if os.path.isfile(packed):
            with open(packed, "rb") as fh:
                data = fh.read(MAX_PACKED + 1)
            if len(data) > MAX_PACKED:
                raise OSError(f"{packed} is larger than {MAX_PACKED} bytes")
            for line in data.decode("utf-8", errors="replace").splitlines():
                parts = line.split(" ")
                if len(parts) == 2 and parts[1] == ref and HEX.match(parts[0]):
                    return parts[0]
    raise OSError(f"ref {ref} not found")


def _common_dir(gitdir: str) -> str:
    try:
        text = _read_small(os.path.join(gitdir, "commondir")).strip()
    except OSError:
        return gitdir
    return text if os.path.isabs(text) else os.path.normpath(os.path.join(gitdir, text))


def git_commit(repo: str, errors: list[str], what: str) -> str | None:
    """HEAD commit of `repo` via git, falling back to reading the files; None with a reason."""
    if not os.path.isdir(repo):
        errors.append(f"{what}: {repo} does not exist")
        return None
    why = ""
    try:
        out = subprocess.run(
            ["git", "-C", repo, "rev-parse", "HEAD"],
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, GIT_TERMINAL_PROMPT="0"),
        )
        sha = out.stdout.decode("ascii", errors="replace").strip()
        if out.returncode == 0 and HEX.match(sha):
            return sha
        why = (out.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no output"])[
            -1
        ][:200]
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"git unavailable ({type(exc).__name__})"
    try:
        return read_head(repo)
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{what}: no commit for {repo}: git: {why}; files: {exc}")
        return None


def dist_version(
    names: Sequence[str], errors: list[str], what: str
) -> tuple[str | None, str | None]:
    """(version, distribution name) of the first installed distribution of `names`."""
    for name in names:
        try:
            return md.version(name), name
        except md.PackageNotFoundError:
            continue
    errors.append(f"{what}: no installed distribution named {' or '.join(names)}")
    return None, None


def scm_sha(version: str | None) -> str | None:
    """The commit abbreviation of a setuptools-scm version such as 0.1.7.dev60+g7fc0926c6."""
    m = SCM_SHA.search(version or "")
    return m.group(1) if m else None


def engine_facts(dist: str, atom_dir: str, errors: list[str]) -> dict[str, Any]:
    version, _ = dist_version([dist], errors, "engine version")
    commit = git_commit(atom_dir, errors, "engine commit")
    short = scm_sha(version)
    if version is not None and short is None:
        errors.append(
            f"engine version {version} carries no +g<sha>; commit comes from {atom_dir} only"
        )
    if commit and short and not commit.startswith(short):
        errors.append(
            f"engine commit {commit} ({atom_dir}) does not match version {version} (+g{short})"
        )
    return {
        "name": dist,
        "version": version,
        "commit": commit,
        "version_commit": short,
        "path": atom_dir,
    }


def packaged_engine_facts(engine: str, engine_dir: str | None, errors: list[str]) -> dict[str, Any]:
    """vLLM/SGLang facts as their packaging records them (`engine.packaging`), the commit from
    a source checkout when the image keeps one (`engine_dir`, the editable install's folder, or
    the engine's usual checkout), else from the packaging's own record."""
    rec = packaging.recorded(engine, errors)
    version = rec["version"]
    recorded = rec["recorded_commit"]
    short = scm_sha(version) or (recorded if recorded and len(recorded) < 40 else None)
    candidates = [engine_dir] if engine_dir else rec["checkouts"]
    checkout = next((c for c in candidates if os.path.isdir(c)), None)
    commit, source = None, None
    if checkout is not None:
        commit = git_commit(checkout, errors, "engine commit")
        source = f"git checkout {checkout}" if commit else None
    elif recorded and len(recorded) == 40:
        commit, source = recorded, rec["commit_source"]
    elif version is not None:
        known = f"only the abbreviation {short}" if short else "no commit"
        errors.append(
            f"engine commit: {engine} {version} records {known} and no source checkout is in "
            f"the image (looked for {', '.join(candidates)})"
        )
    if commit and short and not commit.startswith(short):
        errors.append(
            f"engine commit {commit} ({source}) does not match version {version} (g{short})"
        )
    if (
        rec["file_version"]
        and version
        and not version.startswith(rec["file_version"].split("+")[0])
    ):
        errors.append(
            f"engine version {version} (metadata) differs from {rec['file_version']} (version file)"
        )
    return {
        "name": engine,
        "distribution": rec["distribution"],
        "version": version,
        "commit": commit,
        "version_commit": short,
        "commit_source": source,
        "path": checkout,
    }


def rocm_facts(path: str, errors: list[str]) -> dict[str, Any] | None:
    try:
        raw = _read_small(path, 256).strip()
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"rocm: cannot read {path} ({exc})")
        return None
    m = ROCM_VERSION.match(raw)
    if not m:
        errors.append(f"rocm: {path} holds {raw[:40]!r}, not a version")
        return None
    return {"version": m.group(1), "build": m.group(2), "file": path}


def torch_facts(errors: list[str]) -> dict[str, Any] | None:
    try:
        out = subprocess.run(
            [sys.executable, "-c", _TORCH_FACTS],
            capture_output=True,
            timeout=TORCH_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        errors.append(f"torch: import did not finish in {TORCH_TIMEOUT:g}s")
        return None
    if out.returncode != 0:
        last = (out.stderr.decode("utf-8", errors="replace").strip().splitlines() or ["no output"])[
            -1
        ]
        errors.append(f"torch: not importable ({last[:200]})")
        return None
    try:
        facts = json.loads(out.stdout.decode("utf-8")[: MAX_SMALL * 4])
    except (UnicodeDecodeError, json.JSONDecodeError):
        errors.append("torch: fact query printed no JSON")
        return None
    return facts if isinstance(facts, dict) else None


def probe(args: argparse.Namespace) -> dict[str, Any]:
    errors: list[str] = []
    # How the engine records its version and commit is its declaration's `probe.method`.
    probe_decl = declaration.section(args.engine, "probe")
    if probe_decl.get("method") == "checkout":
        dist = args.engine_dist or str(probe_decl.get("distribution", args.engine))
        checkout = args.engine_dir or args.atom_dir or str(probe_decl["checkouts"][0])
        engine = engine_facts(dist, checkout, errors)
    else:
        engine = packaged_engine_facts(args.engine, args.engine_dir, errors)
    aiter_version, aiter_dist = dist_version(AITER_DISTS, errors, "aiter version")
    aiter = {
        "commit": git_commit(args.aiter_dir, errors, "aiter commit"),
        "version": aiter_version,
        "distribution": aiter_dist,
        "path": args.aiter_dir,
    }
    lmcache, _ = dist_version(["lmcache"], errors, "lmcache")
    triton, triton_dist = dist_version(TRITON_DISTS, errors, "triton")
    numpy, _ = dist_version(["numpy"], errors, "numpy")
    tf = torch_facts(errors)
    torch = (
        None
        if tf is None
        else {"version": tf.get("version"), "cuda": tf.get("cuda"), "hip": tf.get("hip")}
    )
    gpu = None if tf is None else tf.get("gpu")
    if tf is not None and gpu is None:
        errors.append(f"gpu: {tf.get('gpu_reason') or 'unknown'}")
    elif tf is None:
        errors.append("gpu: unknown without torch")
    return result.envelope(
        "probe",
        "pass",
        engine=engine,
        aiter=aiter,
        packages={
            args.engine: engine["version"],
            "aiter": aiter_version,
            "lmcache": lmcache,
            "torch": None if torch is None else torch["version"],
            "triton": triton,
            "numpy": numpy,
        },
        python=platform.python_version(),
        torch=torch,
        triton=None if triton is None else {"version": triton, "distribution": triton_dist},
        numpy=numpy,
        rocm=rocm_facts(args.rocm_version_file, errors),
        gpu=gpu,
        errors=errors,
    )


def parser() -> argparse.ArgumentParser:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m relpipe.engine probe", description=__doc__)
    p.add_argument(
        "--engine",
        choices=declaration.names(),
        default=env("RELPIPE_ENGINE", "atom"),
        help="which engine the image serves (default: %(default)s)",
    )
    p.add_argument(
        "--engine-dir",
        default=env("RELPIPE_ENGINE_DIR"),
        help="the engine's source checkout (default: its declaration's: /app/ATOM for atom; for "
        "vllm/sglang the editable install's folder or the images' usual checkout)",
    )
    p.add_argument("--atom-dir", default=env("RELPIPE_ATOM_DIR"), help="an older --engine-dir")
    p.add_argument("--aiter-dir", default=env("RELPIPE_AITER_DIR", "/app/aiter-test"))
    p.add_argument(
        "--rocm-version-file", default=env("RELPIPE_ROCM_VERSION_FILE", "/opt/rocm/.info/version")
    )
    p.add_argument(
        "--engine-dist",
        default=env("RELPIPE_ENGINE_DIST"),
        help="distribution name of the engine (default: its declaration's, e.g. atom)",
    )
    p.add_argument("--out", help="result JSON file (default stdout)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return result.guarded("probe", args.out, lambda: probe(args))
