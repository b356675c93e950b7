"""Reference parsing and normalisation (docker's grammar), including property tests."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from relpipe.core.reference import (
    InvalidReference,
    Reference,
    Written,
    familiar,
    is_loopback,
    parse,
    split,
    tag_or_ref,
)

D = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ubuntu", Reference(registry="docker.io", repository="library/ubuntu")),
        ("ubuntu:24.04", Reference(registry="docker.io", repository="library/ubuntu", tag="24.04")),
        (
            "rocm/atom-dev:nightly_202610070333",
            Reference(registry="docker.io", repository="rocm/atom-dev", tag="nightly_202610070333"),
        ),
        ("docker.io/rocm/atom-dev", Reference(registry="docker.io", repository="rocm/atom-dev")),
        (
            "index.docker.io/library/ubuntu",
            Reference(registry="docker.io", repository="library/ubuntu"),
        ),
        ("docker.io/ubuntu", Reference(registry="docker.io", repository="library/ubuntu")),
        ("127.0.0.1:5000/a/b:t", Reference(registry="127.0.0.1:5000", repository="a/b", tag="t")),
        ("localhost/x", Reference(registry="localhost", repository="x")),
        (
            "localhost:5000/x@" + D,
            Reference(registry="localhost:5000", repository="x", tag=None, digest=D),
        ),
        (
            "ghcr.io/o/r:v1@" + D,
            Reference(registry="ghcr.io", repository="o/r", tag="v1", digest=D),
        ),
        (
            "Registry.Example.com/a__b/c-d.e",
            Reference(registry="Registry.Example.com", repository="a__b/c-d.e"),
        ),
    ],
)
def test_parse_normalises(text: str, expected: Reference) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Ubuntu", "must be lowercase"),
        ("rocm/Atom-dev:x", "must be lowercase"),
        ("a//b", "invalid repository component ''"),
        ("x:", "invalid tag ''"),
        ("x:-bad", "invalid tag"),
        ("x@sha256:abc", "64 lowercase hex"),
        ("x@md5:" + "a" * 32, "invalid digest"),
        ("", "empty"),
        (" x", "whitespace"),
        ("a/b c", "whitespace"),
        ("bad_host:99999x/a", "invalid"),
        ("a/" + "b" * 300, "longer than 255"),
    ],
)
def test_parse_rejects_with_one_line(text: str, message: str) -> None:
    with pytest.raises(InvalidReference, match=message) as info:
        parse(text)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_properties() -> None:
    ref = parse("127.0.0.1:5000/a/b:t@" + D)
    assert ref.reference == D and ref.tagged() == "127.0.0.1:5000/a/b:t"
    assert parse("x").api_host == "registry-1.docker.io"
    assert ref.with_tag("u") == Reference(registry="127.0.0.1:5000", repository="a/b", tag="u")
    assert parse(ref) is ref


@pytest.mark.parametrize(
    ("host", "loop"),
    [
        ("127.0.0.1:5000", True),
        ("127.8.9.10", True),
        ("localhost:1", True),
        ("[::1]:5000", True),
        ("128.0.0.1:5000", False),
        ("docker.io", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


component = st.from_regex(r"[a-z0-9]{1,8}([._-][a-z0-9]{1,8}){0,2}", fullmatch=True)
tag = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
registry = st.sampled_from(
    ["", "docker.io/", "127.0.0.1:5000/", "localhost/", "ghcr.io/", "r.example.com:443/"]
)


@settings(max_examples=100, deadline=None)
@given(
    registry,
    st.lists(component, min_size=1, max_size=3),
    st.none() | tag,
    st.none() | st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
)
def test_round_trip(reg: str, comps: list[str], t: str | None, hexd: str | None) -> None:
    # without a registry, a first component with a '.' names a registry (docker's rule)
    assume(reg or len(comps) == 1 or "." not in comps[0])
    text = reg + "/".join(comps) + (f":{t}" if t else "") + (f"@sha256:{hexd}" if hexd else "")
    ref = parse(text)
    assert parse(str(ref)) == ref
    assert ref.tag == t and ref.digest == (f"sha256:{hexd}" if hexd else None)
    assert (split(text).tag, split(text).digest) == (ref.tag, ref.digest)
    assert parse(familiar(text)) == ref


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        ref = parse(text)
    except InvalidReference as exc:
        assert "\n" not in str(exc)
    else:
        assert parse(str(ref)) == ref


@pytest.mark.parametrize(
    ("text", "written"),
    [
        (
            "rocm/atom-dev:nightly_202610070333",
            Written(name="rocm/atom-dev", tag="nightly_202610070333"),
        ),
        ("localhost:5000/x", Written(name="localhost:5000/x")),
        (
            "localhost:5000/x:t@sha256:ab",
            Written(name="localhost:5000/x", tag="t", digest="sha256:ab"),
        ),
        ("x@sha256:ab", Written(name="x", digest="sha256:ab")),
        ("x:", Written(name="x", tag="")),
        ("x@", Written(name="x", digest="")),
        ("a:b/c", Written(name="a:b/c")),  # a colon before the last slash is a port, not a tag
    ],
)
def test_split_keeps_the_spelling(text: str, written: Written) -> None:
    assert split(text) == written
    assert split(text).without_digest == text.partition("@")[0]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("docker.io/library/ubuntu:24.04", "ubuntu:24.04"),
        ("index.docker.io/rocm/atom-dev:t", "rocm/atom-dev:t"),
        ("registry-1.docker.io/library/a/b", "library/a/b"),  # library/ only before one name
        ("rocm/atom-dev", "rocm/atom-dev"),
        ("ghcr.io/library/x", "ghcr.io/library/x"),  # only Docker Hub has library/
        ("localhost:5000/x", "localhost:5000/x"),
    ],
)
def test_familiar_drops_docker_hub_as_docker_prints_it(text: str, shown: str) -> None:
    assert familiar(text) == shown


def test_tag_or_ref() -> None:
    assert tag_or_ref("rocm/atom-dev:nightly_1@sha256:" + "a" * 64) == "nightly_1"
    assert tag_or_ref("localhost:5000/x") == "localhost:5000/x"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab:/@.-_1", max_size=30))
def test_parse_reads_the_parts_split_finds(text: str) -> None:
    written = split(text)
    assert written.without_digest + ("" if written.digest is None else f"@{written.digest}") == text
    try:
        ref = parse(text)
    except InvalidReference:
        return
    assert (ref.tag, ref.digest) == (written.tag, written.digest)
    assert parse(familiar(str(ref))) == ref  # the familiar spelling names the same image


@pytest.mark.parametrize("text", ["rocm/atom-dev", "docker.io/library/x", "127.0.0.1:5000/a/b"])
def test_a_reference_without_tag_or_digest_is_never_latest(text: str) -> None:
    """Issue 36: `--image rocm/atom-dev` went to the network as `:latest`; now one line."""
    ref = parse(text)  # a repository alone is a valid name (`relpipe nightly REPO` lists its tags)
    for use in (lambda: ref.reference, ref.tagged):
        with pytest.raises(InvalidReference) as info:
            use()
        message = str(info.value)
        assert "has no tag or digest" in message and "never assumes :latest" in message
        assert "\n" not in message and info.value.exit_code == 2
    assert parse(text + ":t").reference == "t"
