"""`python -m relpipe.engine probe --engine vllm|sglang` on fixture root filesystems laid out as
those images are: the distribution's metadata, the version module the build wrote (vLLM's
`vllm/_version.py` written by setuptools-scm itself, the oracle; older vLLM's `commit_id.py`),
PEP 610 `direct_url.json`, and a source checkout where the image keeps one."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from corpus import scm_python
from support import git

from relpipe.engine import packaging


def _repo(path: Path, tag: str) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "setup.py").write_text("# engine\n")
    git(path, "add", "setup.py")
    git(path, "commit", "-q", "-m", "release")
    git(path, "tag", tag)
    (path / "setup.py").write_text("# engine, one commit later\n")
    git(path, "commit", "-q", "-am", "next")
    return git(path, "rev-parse", "HEAD").strip()


def _scm_version(repo: Path, copy_to: Path) -> str:
    """setuptools-scm's own version of `repo`; its own `vllm/_version.py`, written into the
    source tree as a build does, then copied to `copy_to` (where the wheel installs it)."""
    code = (
        "import sys, setuptools_scm\n"
        "print(setuptools_scm.get_version(root=sys.argv[1], write_to='vllm/_version.py'))\n"
    )
    (repo / "vllm").mkdir(exist_ok=True)  # untracked and empty: the version stays clean
    out = subprocess.run(
        [scm_python(), "-c", code, str(repo)], capture_output=True, text=True, check=True
    )
    copy_to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(repo / "vllm" / "_version.py", copy_to)
    return out.stdout.strip()


def _dist(site: Path, name: str, version: str, direct_url: dict[str, object] | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version.split('+')[0]}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


def _probe(cli, root: Path, site: Path, *extra: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    (root / "rocm").write_text("7.2.4-77\n")
    r = cli(
        "probe",
        *extra,
        "--aiter-dir",
        str(root / "app" / "aiter"),
        "--rocm-version-file",
        str(root / "rocm"),
        extra_path=[site],
    )
    assert r.code == 0
    return r.doc  # type: ignore[no-any-return]


def test_vllm_wheel_image_records_version_and_abbreviated_commit(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sha = _repo(tmp_path / "src" / "vllm", "v0.11.0")
    site = tmp_path / "site"
    scm = _scm_version(tmp_path / "src" / "vllm", site / "vllm" / "_version.py")
    version = f"{scm}.rocm700"  # vLLM's setup.py appends the ROCm build to the local version
    _dist(site, "vllm", version)
    _dist(site, "amd-aiter", "0.1.5.post2.dev31+g1a2b3c4d5")
    nowhere = tmp_path / "vllm-workspace"
    d = _probe(cli, tmp_path, site, "--engine", "vllm", "--engine-dir", str(nowhere))
    engine = d["engine"]
    assert engine["name"] == "vllm" and engine["version"] == version  # type: ignore[index]
    assert scm.startswith("0.11.1.dev1+g") and engine["version_commit"] == sha[:9]  # type: ignore[index]
    assert sha.startswith(engine["version_commit"])  # type: ignore[index,arg-type]
    assert engine["commit"] is None  # type: ignore[index]
    assert d["packages"]["vllm"] == version and d["aiter"]["version"].startswith("0.1.5")  # type: ignore[index]
    assert d["rocm"]["version"] == "7.2.4"  # type: ignore[index]
    errors = "\n".join(d["errors"])  # type: ignore[arg-type]
    assert f"engine commit: vllm {version} records only the abbreviation {sha[:9]}" in errors
    assert "aiter commit:" in errors  # no AITER checkout in this image: null with a reason


def test_vllm_with_its_checkout_and_setuptools_scm_version_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    checkout = tmp_path / "vllm-workspace"
    sha = _repo(checkout, "v0.11.0")
    site = tmp_path / "site"
    scm = _scm_version(checkout, site / "vllm" / "_version.py")
    _dist(site, "vllm", scm + ".rocm700")
    d = _probe(cli, tmp_path, site, "--engine", "vllm", "--engine-dir", str(checkout))
    engine = d["engine"]
    assert engine["commit"] == sha and engine["commit_source"] == f"git checkout {checkout}"  # type: ignore[index]
    assert not [e for e in d["errors"] if e.startswith("engine")]  # type: ignore[attr-defined]


def test_vllm_version_file_constants_are_read_not_imported(tmp_path: Path) -> None:
    sha = _repo(tmp_path / "src", "v0.11.0")
    path = tmp_path / "_version.py"
    _scm_version(tmp_path / "src", path)
    names = packaging.module_constants(str(path))
    assert names["commit_id"] == "g" + sha[:9] and names["version"].startswith("0.11.1.dev1")
    path.write_text("import os\nos.system('false')\n__commit__ = 'abc'\n" + "#" * 70_000)
    with pytest.raises(ValueError, match="larger than"):
        packaging.module_constants(str(path))


def test_old_vllm_commit_id_and_pep610_vcs_record(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    full = "0123456789abcdef0123456789abcdef01234567"
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "commit_id.py").write_text(f'__commit__ = "{full}"\n')
    _dist(site, "vllm", "0.6.1")
    # no checkout in the image: the packaging's own full commit is the record
    d = _probe(cli, tmp_path, site, "--engine", "vllm", "--engine-dir", str(tmp_path / "none"))
    assert d["engine"]["version"] == "0.6.1"  # type: ignore[index]
    assert (d["engine"]["commit"], d["engine"]["commit_source"]) == (full, "vllm/commit_id.py")  # type: ignore[index]
    site2 = tmp_path / "site2"
    vcs = {
        "url": "https://github.com/vllm-project/vllm",
        "vcs_info": {"vcs": "git", "commit_id": full},
    }
    _dist(site2, "vllm", "0.11.0", direct_url=vcs)
    d = _probe(cli, tmp_path, site2, "--engine", "vllm")
    assert (d["engine"]["commit"], d["engine"]["commit_source"]) == (full, "direct_url.json")  # type: ignore[index]


def test_sglang_editable_install_names_its_checkout(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    checkout = tmp_path / "sgl-workspace" / "sglang"
    sha = _repo(checkout, "v0.5.6")
    (checkout / "python" / "sglang").mkdir(parents=True)
    (checkout / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.6.post2"\n')
    site = tmp_path / "site"
    url = {"url": (checkout / "python").as_uri(), "dir_info": {"editable": True}}
    _dist(site, "sglang", "0.5.6.post2", direct_url=url)
    d = _probe(cli, tmp_path, site, "--engine", "sglang")
    engine = d["engine"]
    assert (engine["name"], engine["version"], engine["commit"]) == ("sglang", "0.5.6.post2", sha)  # type: ignore[index]
    assert engine["path"] == str(checkout) and engine["version_commit"] is None  # type: ignore[index]
    assert d["packages"]["sglang"] == "0.5.6.post2"  # type: ignore[index]


def test_missing_engine_is_null_with_a_reason(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site = tmp_path / "site"
    site.mkdir()
    d = _probe(cli, tmp_path, site, "--engine", "sglang", "--engine-dir", str(tmp_path / "x"))
    assert d["engine"]["version"] is None and d["engine"]["commit"] is None  # type: ignore[index]
    assert "engine version: no installed distribution named sglang" in d["errors"]  # type: ignore[operator]
