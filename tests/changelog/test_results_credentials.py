"""The PostgreSQL password never leaves the URL it was given in (issue 34.2): `core.redact.redact`
cuts every credential form libpq accepts (URL userinfo, a `password`/`sslpassword`/`passfile`
query parameter, percent-encoded names included, a key=value connection string, quoted or not),
and the results store names itself only through it: errors (a malformed URL the driver echoes
whole), the ingest summary, `--json`'s `store`, and so the run records' `history.json`, which
records `Store.where`. Against a real throwaway PostgreSQL cluster (tests/results_support.py);
its trust authentication lets a URL carry any password."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import corpus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from results_support import fresh_database, pg_server  # noqa: F401 - a fixture
from support import run_cli

from relpipe.changelog.results import store
from relpipe.core.redact import redact

SECRET = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=8,
    max_size=24,
).filter(lambda s: "S3cr" not in s)


@st.composite
def credential_text(draw: st.DrawFn) -> tuple[str, list[str]]:
    """(a text holding a secret in one of libpq's forms, the spellings of the secret in it)."""
    secret = "S3cr" + draw(SECRET)
    encoded = quote(secret, safe="")
    key = draw(st.sampled_from(["password", "PASSWORD", "sslpassword", "passfile"]))
    spelled = draw(
        st.sampled_from([key, quote(key[:4]) + "%" + format(ord(key[4]), "02x") + key[5:]])
    )
    forms = [
        f"postgresql://relpipe:{encoded}@127.0.0.1:5432/h",
        f"postgres://relpipe:{encoded}@[::1/h?x",  # malformed: a driver echoes it whole
        f"postgresql://127.0.0.1/h?sslmode=disable&{spelled}={encoded}",
        f"postgresql://127.0.0.1/h?{spelled}={encoded}&application_name=x",
        f"host=127.0.0.1 {key}={quote(secret, safe='')} dbname=h",
        "host=127.0.0.1 " + key + " = '" + secret.replace("\\", "\\\\").replace("'", "\\'") + "'",
    ]
    form = draw(st.sampled_from(forms))
    around = draw(st.sampled_from(["{}", "cannot connect: {}; check it", "store {} (x)"]))
    return around.format(form), [secret, encoded]


@settings(max_examples=300, deadline=None)
@given(credential_text())
def test_no_credential_form_survives_redaction(case: tuple[str, list[str]]) -> None:
    text, spellings = case
    shown = redact(text)
    assert not any(s in shown for s in spellings), (text, shown)
    assert redact(shown) == shown  # idempotent: a redacted text is left as it is


def test_text_without_credentials_is_unchanged() -> None:
    for text in ["/home/u/.relpipe/history.sqlite", "a=b c=d", "https://github.com/o/r", "x@y"]:
        assert redact(text) == text


def test_a_malformed_url_is_not_echoed_with_its_password(tmp_path: Path) -> None:
    result = tmp_path / "r.json"
    result.write_text("{}")
    for url in (
        "postgresql://relpipe:S3crETpw@[::1/h",
        "postgresql://h/db?password=S3crETpw&x=%zz",
    ):
        code, out, err = run_cli("history", "ingest", "--history", url, str(result))
        assert code == 2 and "S3crETpw" not in out + err and err.count("\n") == 1, err


def test_the_store_names_itself_without_the_password(pg_server: str, tmp_path: Path) -> None:  # noqa: F811
    base = fresh_database(pg_server)
    artifact = (
        corpus.results_dir()
        / "inferencex"
        / (
            "agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_"
            "MI355-gbt350-odcdh5-wbb3.json"
        )
    )
    host = base.split("@", 1)[-1] if "@" in base else base.split("://", 1)[1]
    for url in (
        f"{base}?password=S3crETpw",
        f"{base}?sslmode=disable&pass%77ord=S3crETpw",
        base.replace("://", "://relpipe:S3crETpw@", 1) if "@" not in base else base,
    ):
        code, out, err = run_cli("history", "ingest", "--history", url, str(artifact))
        assert code == 0 and "S3crETpw" not in out + err and host.split("/")[0] in out, out + err
        code, out, err = run_cli("history", "ingest", "--json", "--history", url, str(artifact))
        assert code == 0 and "S3crETpw" not in out + err
        assert "***" in json.loads(out)["store"] or "@" not in url
        with store.open_store(url, create=False) as db:  # what history.json records
            assert "S3crETpw" not in db.where


@pytest.mark.parametrize("conninfo", ["host=db password=S3crETpw", "password = 'S3cr ETpw'"])
def test_a_connection_string_given_as_a_path_is_not_shown(tmp_path: Path, conninfo: str) -> None:
    code, out, err = run_cli("history", "regressions", "--history", conninfo)
    assert code == 2 and "S3cr" not in out + err and err.count("\n") == 1, err
