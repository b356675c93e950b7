"""relpipe.images.runtime against a real dockerd and registry: digest-only pulls, the sandbox,
timeouts, untrusted results and logs, and copying `/app/ATOM` out of a fixture nightly."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from relpipe.images.build import FixtureImage, build_fixtures
from relpipe.images.errors import ContainerError, ImageError
from relpipe.images.results import OUT_DIR, EngineRun, Limits, parse_result
from relpipe.images.runtime import Runtime, pinned

pytestmark = pytest.mark.services
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def nightlies(registry: str, fixture_cache: Path) -> list[FixtureImage]:
    repo = f"relpipe-test-runtime/atom-{uuid.uuid4().hex[:8]}"
    return build_fixtures(registry, repo, count=2, cache_dir=fixture_cache)


def _py(
    runtime: Runtime, image: FixtureImage, code: str, out: Path, timeout_s: float = 120, **kw: Any
) -> EngineRun:
    """`python3 -c code` in the image by digest; `kw` as for `Runtime.run`."""
    return runtime.run(
        image.reference, ["python3", "-c", code], out_dir=out, timeout_s=timeout_s, **kw
    )


def _envelope(status: str = "pass") -> str:
    return json.dumps(
        {
            "schema": 1,
            "command": "probe",
            "status": status,
            "engine": {},
            "packages": {},
            "errors": [],
        }
    )


# -- references -------------------------------------------------------------------------------


def test_a_tag_only_reference_is_refused_with_one_line() -> None:
    with pytest.raises(ImageError) as err:
        pinned("127.0.0.1:5000/rocm/atom-dev:nightly_202609281543")
    assert "refusing to run" in str(err.value) and "\n" not in str(err.value)
    assert err.value.exit_code == 2
    assert pinned("127.0.0.1:5000/r@sha256:" + "a" * 64).digest == "sha256:" + "a" * 64


# -- result documents -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema": 1, "command": "probe", "status": NaN}', "not valid JSON"),
        (b'{"schema": 1, "schema": 1}', "duplicate key"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"schema": 2, "command": "probe", "status": "pass"}', "schema 2"),
        (b'{"schema": 1, "command": "smoke", "status": "pass"}', "names command"),
        (b'{"schema": 1, "command": "probe", "status": "maybe"}', "status 'maybe'"),
        (b'{"schema": 1, "command": "probe", "status": "pass", "engine": []}', "'engine' must be"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        (b" " * (Limits.result_bytes + 1), "larger than"),
    ],
)
def test_bad_results_give_one_line_errors(data: bytes, needle: str) -> None:
    with pytest.raises(ContainerError) as err:
        parse_result(data, "probe")
    assert needle in str(err.value)
    assert "\n" not in str(err.value) and err.value.exit_code == 1


def test_a_valid_probe_envelope_parses() -> None:
    assert parse_result(_envelope().encode(), "probe")["status"] == "pass"


# -- containers -------------------------------------------------------------------------------


def test_a_valid_result_passes_and_the_image_has_python_git_and_its_facts(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    image = nightlies[-1]
    code = (
        "import json, subprocess, importlib.metadata as md\n"
        "head = subprocess.run(['git', '-C', '/app/ATOM', 'rev-parse', 'HEAD'],"
        " capture_output=True,"
        " text=True, check=True).stdout.strip()\n"
        f"doc = {_envelope()}\n"
        "doc['engine'] = {'commit': head, 'version': md.version('atom')}\n"
        f"json.dump(doc, open('{OUT_DIR}/result.json', 'w'))\n"
    )
    run = _py(runtime, image, code, tmp_path, result_command="probe")
    assert run.passed, (run.error, run.logs)
    assert run.result is not None
    assert run.result["engine"] == {"commit": image.engine_commit, "version": image.engine_version}


def test_the_container_has_no_network_and_cannot_write_outside_out(
    runtime: Runtime, nightlies: list[FixtureImage], registry: str, tmp_path: Path
) -> None:
    host, port = registry.rsplit(":", 1)
    code = f"""
import errno, os, socket
print("ifaces", sorted(os.listdir("/sys/class/net")))
try:
    socket.create_connection(("{host}", {port}), timeout=3)
    print("connect ok")
except OSError as exc:
    print("connect failed", exc.errno)
for path in ["/evil", "/app/ATOM/evil", "/usr/local/evil", "/relpipe/payload/evil",
             "/opt/relpipe/site-packages/evil", "/relpipe/out/ok"]:
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError as exc:
        print("denied", path, errno.errorcode[exc.errno])
"""
    payload = tmp_path / "payload"
    payload.mkdir()
    out = tmp_path / "out"
    run = _py(runtime, nightlies[0], code, out, mounts={str(payload): "/relpipe/payload"})
    assert run.passed, (run.error, run.logs)
    assert "ifaces ['lo']" in run.logs
    assert "connect failed" in run.logs and "connect ok" not in run.logs
    for path in [
        "/evil",
        "/app/ATOM/evil",
        "/usr/local/evil",
        "/relpipe/payload/evil",
        "/opt/relpipe/site-packages/evil",
    ]:
        assert f"denied {path} EROFS" in run.logs
    assert "wrote /relpipe/out/ok" in run.logs
    assert sorted(p.name for p in out.iterdir()) == ["ok"]
    assert list(payload.iterdir()) == []


def test_a_hanging_container_is_killed_removed_and_fails(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    run = _py(
        runtime,
        nightlies[0],
        "import time\nprint('spinning', flush=True)\ntime.sleep(3600)",
        tmp_path,
        timeout_s=3,
    )
    assert run.timed_out and not run.passed and run.verdict == "FAIL"
    assert run.exit_code is None and run.duration_s < 30
    assert "timeout" in (run.error or "") and "spinning" in run.logs
    leftovers = runtime.client.containers.list(all=True, filters={"label": "org.relpipe.run"})
    assert [c.id for c in leftovers if c.attrs["Config"]["Image"] == run.image] == []


def test_ten_mib_of_garbage_gives_one_line_and_bounded_logs(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    code = (
        "import os, sys\n"
        "junk = os.urandom(5 << 20)\n"
        "sys.stdout.buffer.write(junk); sys.stdout.flush()\n"
        f"open('{OUT_DIR}/result.json', 'wb').write(junk + os.urandom(5 << 20))\n"
    )
    run = _py(runtime, nightlies[0], code, tmp_path, result_command="probe")
    assert not run.passed and run.error is not None
    assert "larger than" in run.error and "\n" not in run.error
    assert run.logs_truncated and len(run.logs) < 4 * Limits.log_bytes


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        (f"open('{OUT_DIR}/result.json', 'w').write('{{\"schema\": 1, ')", "not valid JSON"),
        ("import os\nos.symlink('/etc/passwd', '" + OUT_DIR + "/result.json')", "regular file"),
        ("pass", "wrote no result"),
        (
            f"open('{OUT_DIR}/result.json', 'w').write({_envelope('pass')!r})\nraise SystemExit(3)",
            "disagrees",
        ),
    ],
    ids=["invalid-json", "symlink", "missing", "exit-disagrees"],
)
def test_untrusted_results_fail_with_one_line(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path, code: str, needle: str
) -> None:
    run = _py(runtime, nightlies[0], code, tmp_path, result_command="probe")
    assert not run.passed and needle in (run.error or ""), run.error
    assert "\n" not in (run.error or "")
    with pytest.raises(ImageError):
        run.require()


def test_extract_path_copies_atom_with_its_git_history(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    image = nightlies[-1]
    dest = runtime.extract_path(image.reference, "/app/ATOM", tmp_path / "ATOM")
    head = subprocess.run(
        ["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert head == image.engine_commit
    status = subprocess.run(
        ["git", "-C", str(dest), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""
    assert (dest / "atom" / "model_ops" / "layernorm.py").is_file()
    version = runtime.extract_path(image.reference, "/opt/rocm/.info/version", tmp_path / "v")
    assert version.read_text() == f"{image.rocm_version}-112\n"
    with pytest.raises(ImageError, match="does not exist"):
        runtime.extract_path(image.reference, "/app/nope", tmp_path / "nope")


def test_running_by_tag_is_refused_before_docker_is_asked(
    runtime: Runtime, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    with pytest.raises(ImageError, match="by tag"):
        runtime.run(nightlies[0].tagged, ["true"], out_dir=tmp_path)


def test_a_non_root_user_still_reads_the_images_git_and_writes_only_out(
    docker_host: str, nightlies: list[FixtureImage], tmp_path: Path
) -> None:
    # Users' hosts run relpipe as non-root: the image's root-owned repos must still be readable.
    as_user = Runtime.from_env(docker_host=docker_host, gpu="none", user="1000:1000")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    code = (
        "import subprocess\n"
        "head = subprocess.run(['git', '-C', '/app/ATOM', 'rev-parse', 'HEAD'],"
        " capture_output=True,"
        " text=True, check=True).stdout\n"
        f"open('{OUT_DIR}/head', 'w').write(head)\n"
    )
    run = _py(as_user, nightlies[0], code, out)
    assert run.passed, (run.error, run.logs)
    assert (out / "head").read_text().strip() == nightlies[0].engine_commit
    assert (out / "head").stat().st_uid == 1000
