"""Screenshots of relpipe's HTML reports for the docs, taken by headless Chromium, never drawn.

`nox -s screenshots` runs the demo with `--screenshot docs/report.png`: the demo's release report
is rendered by Chromium, and the PNG carries text chunks saying where it came from and which
checks the report had (`relpipe-source`, `relpipe-checks`), so a test can tell a regenerated
screenshot from a stale or hand-made one (tests/test_docs_paths.py).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core import jsonload, process
from ..core.files import write_atomic
from ..images import services
from .errors import PipelineError

SIZE = (1200, 2600)  # CSS pixels: the whole release report (twelve checks and both charts)
SOURCE = "nox -s screenshots: the demo's release report in headless Chromium"
CHROMIUM_TIMEOUT_S = 120.0
_PNG = b"\x89PNG\r\n\x1a\n"


def browser() -> str:
    """Chromium (Ubuntu calls it chromium-browser), installed with apt where relpipe may."""
    return shutil.which("chromium-browser") or services.ensure_binary("chromium")


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, body) of every chunk of `png`."""
    if not png.startswith(_PNG):
        raise PipelineError("not a PNG file")
    found, at = [], len(_PNG)
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        found.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return found


def text_chunks(png: bytes) -> dict[str, str]:
    """The PNG's tEXt chunks (keyword -> text)."""
    return {
        key.decode("latin-1"): value.decode("latin-1")
        for kind, body in _chunks(png)
        if kind == b"tEXt" and b"\0" in body
        for key, _, value in [body.partition(b"\0")]
    }


def with_text(png: bytes, chunks: Mapping[str, str]) -> bytes:
    """`png` with tEXt chunks `chunks` (replacing those of the same keywords), before IEND."""
    keys = {key.encode("latin-1") for key in chunks}
    body = [
        (kind, data)
        for kind, data in _chunks(png)
        if not (kind == b"tEXt" and data.partition(b"\0")[0] in keys)
    ]
    text = [
        (b"tEXt", key.encode("latin-1") + b"\0" + value.encode("latin-1"))
        for key, value in chunks.items()
    ]
    out = _PNG
    for kind, data in body[:-1] + text + body[-1:]:  # IEND stays last
        out += (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )
    return out


def report_checks(report_json: Path) -> list[str]:
    doc = jsonload.loads(report_json.read_text(encoding="utf-8"))
    return [str(check["id"]) for check in doc["verdict"]["checks"]]


def screenshot(html: Path, png: Path, size: Sequence[int] = SIZE) -> None:
    """Render `html` (a report folder's report.html) to `png` with Chromium."""
    checks = report_checks(html.with_name("report.json"))
    with tempfile.TemporaryDirectory(prefix="relpipe-chromium-") as profile:
        shot = Path(profile) / "shot.png"
        process.run(
            [
                browser(),
                "--headless",
                "--no-sandbox",  # root in CI; the page is our own report, from a file
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                f"--screenshot={shot}",
                html.resolve().as_uri(),
            ],
            env=dict(os.environ, HOME=profile),
            timeout=CHROMIUM_TIMEOUT_S,
            what="chromium",
        )
        data = shot.read_bytes()
    tagged = with_text(data, {"relpipe-source": SOURCE, "relpipe-checks": ",".join(checks)})
    write_atomic(png, tagged)
