"""What an engine's own packaging records about the installed engine (stdlib only); which files
and names is the engine's declaration's `probe` (engine/declarations/, e.g. vLLM and SGLang).

Read, never imported (importing an engine costs seconds and may fail on a host without a GPU):
* the distribution's metadata (`vllm-<v>.dist-info/METADATA`; vLLM's ROCm builds append
  `.rocm<NNN>` to the setuptools-scm local version, `0.11.1.dev12+g1a2b3c4d5.rocm700`);
* the version module the build wrote into the package, parsed with `ast` (constants only):
  vLLM's setuptools-scm `vllm/_version.py` (`version`, and `commit_id = 'g<sha>'` from
  setuptools-scm 8.2 on) or older vLLM's `vllm/commit_id.py` (`__commit__`), SGLang's
  `sglang/version.py` (`__version__`);
* PEP 610 `direct_url.json`: a VCS install's `vcs_info.commit_id`, or an editable install's
  source folder (SGLang's ROCm images install `/sgl-workspace/sglang/python` editable), whose git
  checkout then names the commit.
A fact none of these records is None with its reason in `errors`.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from . import declaration

MAX_MODULE = 64 * 1024
SHA = re.compile(r"g?([0-9a-f]{7,40})\Z")


@dataclass(frozen=True, kw_only=True)
class Packaging:
    """Where one engine's packaging keeps its version and commit."""

    dist: str
    version_modules: tuple[str, ...]  # package-relative files holding version constants
    version_names: tuple[str, ...]
    commit_names: tuple[str, ...]
    checkouts: tuple[str, ...]  # source checkouts images are known to keep


def packaging_of(engine: str) -> Packaging:
    """Where `engine`'s packaging keeps its version and commit: its declaration's `probe`
    (engine/declarations/<engine>.json)."""
    probe = declaration.section(engine, "probe")
    return Packaging(
        dist=str(probe.get("distribution", engine)),
        version_modules=tuple(probe.get("version-modules", ())),
        version_names=tuple(probe.get("version-names", ())),
        commit_names=tuple(probe.get("commit-names", ())),
        checkouts=tuple(probe.get("checkouts", ())),
    )


def module_constants(path: str) -> dict[str, str]:
    """Top-level `NAME = 'text'` (and `A = B = 'text'`) assignments of a Python file; OSError,
    SyntaxError or ValueError when unreadable, oversize or not Python."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_MODULE + 1)
    if len(data) > MAX_MODULE:
        raise ValueError(f"{path} is larger than {MAX_MODULE} bytes")
    out: dict[str, str] = {}
    for node in ast.parse(data.decode("utf-8"), filename=path).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for target in targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = value.value
    return out


def _direct_url(dist: md.Distribution) -> dict[str, Any]:
    text = dist.read_text("direct_url.json")
    if not text or len(text) > MAX_MODULE:
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _checkout_of(url: str) -> str | None:
    """The git checkout holding an editable install's `file://` folder (it or a parent)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    folder = urllib.parse.unquote(parts.path)
    for _ in range(4):
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        folder = os.path.dirname(folder)
    return None


def recorded(engine: str, errors: list[str]) -> dict[str, Any]:
    """Version, commit and candidate checkouts as `engine`'s packaging records them."""
    declared = packaging_of(engine)
    found: dict[str, Any] = {"distribution": declared.dist, "version": None, "file_version": None}
    found.update(recorded_commit=None, commit_source=None, checkouts=list(declared.checkouts))
    try:
        dist = md.distribution(declared.dist)
    except md.PackageNotFoundError:
        errors.append(f"engine version: no installed distribution named {declared.dist}")
        return found
    found["version"] = dist.version
    for rel in declared.version_modules:
        path = str(dist.locate_file(rel))
        if not os.path.isfile(path):
            continue
        try:
            names = module_constants(path)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as exc:
            errors.append(f"engine version file {path}: unreadable ({type(exc).__name__})")
            continue
        version = next((names[n] for n in declared.version_names if n in names), None)
        found["file_version"] = found["file_version"] or version
        commit = next((names[n] for n in declared.commit_names if n in names), None)
        m = SHA.match(commit or "")
        if m and found["recorded_commit"] is None:
            found["recorded_commit"], found["commit_source"] = m.group(1), rel
    url = _direct_url(dist)
    vcs = url.get("vcs_info") if isinstance(url.get("vcs_info"), dict) else None
    if vcs and isinstance(vcs.get("commit_id"), str) and SHA.match(vcs["commit_id"]):
        found["recorded_commit"], found["commit_source"] = vcs["commit_id"], "direct_url.json"
    if isinstance(url.get("url"), str):
        checkout = _checkout_of(url["url"])
        if checkout:
            found["checkouts"] = [checkout, *found["checkouts"]]
    return found
