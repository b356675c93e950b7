"""The noxfile's set-up (issue 36): with uv, the indexes, find-links and constraints pip is
configured with are passed to `uv pip install` (uv reads neither pip.conf nor PIP_*), and pip's
own settings are what real `pip config list` reports. nox itself is not needed: the noxfile is
loaded with a stand-in `nox` module, and its functions are called as nox would."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _noxfile(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = types.ModuleType("nox")

    def session(*args: Any, **kwargs: Any) -> Any:
        return args[0] if args and callable(args[0]) else (lambda fn: fn)

    fake.session = session  # type: ignore[attr-defined]
    fake.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    fake.Session = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", fake)
    spec = importlib.util.spec_from_file_location("relpipe_noxfile", ROOT / "noxfile.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Session:
    def __init__(self, backend: str) -> None:
        self.venv_backend = backend
        self.env: dict[str, str] = {}


def test_uv_gets_the_indexes_pip_is_configured_with(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    noxfile = _noxfile(monkeypatch)
    assert noxfile.nox.options.default_venv_backend == "uv|virtualenv"
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = https://mirror.example/simple\n"
        "extra-index-url = file:///opt/a/simple file:///opt/b/simple\n"
        f"constraint = {tmp_path / 'c.txt'}\ncert = /etc/ssl/x.pem\n"
    )
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)  # the machine's own (PIP_CERT, PIP_INDEX_URL, ...) override files
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")  # a variable overrides the files
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    session = _Session("uv")
    assert noxfile._uv_options(session) == [
        "--index-strategy",
        "unsafe-best-match",
        "--index-url",
        "https://mirror.example/simple",
        "--extra-index-url",
        "file:///opt/a/simple",
        "--extra-index-url",
        "file:///opt/b/simple",
        "--find-links",
        "/opt/wheels",
        "--constraint",
        str(tmp_path / "c.txt"),
    ]
    assert session.env == {"SSL_CERT_FILE": "/etc/ssl/x.pem"}
    assert noxfile._uv_options(_Session("virtualenv")) == []  # pip reads its own settings


def test_without_pip_settings_uv_keeps_its_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    noxfile = _noxfile(monkeypatch)
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    session = _Session("uv")
    assert noxfile._uv_options(session) == ["--index-strategy", "unsafe-best-match"]
    assert session.env == {}
