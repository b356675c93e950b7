"""The hook's cache of bases already found valid: it skips re-scanning history, and it can never
change a verdict (only acceptance is cached; an unusable cache folder is ignored)."""

from __future__ import annotations

from pathlib import Path

from relpipe.changelog.entry import Entry, proven_valid, render
from relpipe.validate.gate.basecache import BaseCache
from relpipe.validate.gate.hook import Policy, check

LINK = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
RULES = Policy(
    repo_url="https://github.com/SemiAnalysisAI/InferenceX", pr_number=None, config_keys=None
)


def _entry(n: int) -> bytes:
    return render(
        Entry(
            config_keys=(f"dsr1-fp4-mi355x-atom-{n}",),
            description=(f"entry {n}",),
            pr_link=f"{LINK}{n}",
        )
    ).encode()


# Valid for InferenceX, but not house style throughout (a whitespace-only separator line, as
# the real file has 43 of): proven_valid cannot clear it, so the hook scans it.
BASE = _entry(1) + b"  \n" + _entry(2)
HEAD = BASE + b"\n" + _entry(3)
BAD_BASE = _entry(1) + b"\n- config-keys: [x]\n  bogus: 1\n"


def _verdict(base: bytes, head: bytes, cache: BaseCache | None) -> tuple[bool, list[str]]:
    report = check(base, head, RULES, "perf-changelog.yaml", cache)
    return report.ok, [f"{f.line}:{f.code}" for f in report.findings]


def test_a_scanned_valid_base_is_remembered_and_the_verdict_is_the_same(tmp_path: Path) -> None:
    assert not proven_valid(BASE)
    cache = BaseCache(tmp_path / "bases")
    assert not cache.known(BASE)
    first = _verdict(BASE, HEAD, cache)
    assert first[0] and cache.known(BASE)
    assert len(list((tmp_path / "bases").iterdir())) == 1
    assert _verdict(BASE, HEAD, cache) == first == _verdict(BASE, HEAD, None)


def test_a_rejected_base_is_never_remembered(tmp_path: Path) -> None:
    cache = BaseCache(tmp_path / "bases")
    head = BAD_BASE + b"\n" + _entry(3)
    for _ in range(2):
        ok, findings = _verdict(BAD_BASE, head, cache)
        assert not ok and findings
    assert not cache.known(BAD_BASE)
    assert not (tmp_path / "bases").exists() or not any((tmp_path / "bases").iterdir())


def test_an_unusable_cache_folder_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = BaseCache(blocker / "bases")
    assert _verdict(BASE, HEAD, cache) == _verdict(BASE, HEAD, None)
    assert not cache.known(BASE)


MASTER = b"dsr1-fp4-mi355x-atom:\n  image: x\n'quoted-key':\n  image: y\n"


def test_master_keys_are_remembered_by_content_and_a_damaged_entry_is_not_used(
    tmp_path: Path,
) -> None:
    cache = BaseCache(tmp_path / "bases")
    assert cache.master_keys(MASTER) is None
    cache.remember_master_keys(MASTER, ("dsr1-fp4-mi355x-atom", "quoted-key"))
    assert cache.master_keys(MASTER) == ("dsr1-fp4-mi355x-atom", "quoted-key")
    assert cache.master_keys(MASTER + b"other:\n  image: z\n") is None  # other bytes, other entry
    (entry,) = (tmp_path / "bases").iterdir()
    entry.write_bytes(entry.read_bytes()[:-3])  # torn: the checksum no longer matches
    assert cache.master_keys(MASTER) is None
    cache.remember_master_keys(MASTER, ())
    assert cache.master_keys(MASTER) == ()


def test_a_key_with_a_line_break_is_not_remembered(tmp_path: Path) -> None:
    cache = BaseCache(tmp_path / "bases")
    cache.remember_master_keys(MASTER, ("a\nb",))
    assert cache.master_keys(MASTER) is None
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    unusable = BaseCache(blocker / "bases")
    unusable.remember_master_keys(MASTER, ("a",))
    assert unusable.master_keys(MASTER) is None
