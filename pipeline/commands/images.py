"""`relpipe images resolve|latest|pin|probe|archive`: registry look-ups, verified pins, the lock
file, and archived copies of pinned images (`images.archive`).

A thin shell over `images.registry`, `images.nightly`, `images.lock` and (for `pin --config`)
`changelog.configs.pin`: parse arguments, call them, print text or `--json`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core import sanitize
from ...core.reference import parse, split
from ...images.errors import ImageError
from ...images.nightly import default_family, families
from ...images.options import add_registry_args, apply_registry_args
from ...images.registry import RegistryClient
from .parser import Parser
from .parser import parser as new_parser

DEFAULT_LOCK = "images.lock.yaml"  # images.lock.DEFAULT_LOCK, without importing PyYAML here


def _client(args: argparse.Namespace, light: bool = False) -> RegistryClient:
    apply_registry_args(args)  # mirrors, CA bundle, insecure hosts, platform: via the env
    return RegistryClient(light=light)


def _print_json(value: Any) -> None:
    print(sanitize.json_text(value, indent=2))


def _resolve(args: argparse.Namespace) -> int:
    with _client(args, light=True) as client:  # HEADs only: the stdlib driver, no httpx import
        results = client.resolve_many(args.refs, args.platform)
    if args.json:
        _print_json([r.to_json() for r in results])
    else:
        for r in results:
            extra = f"  {r.platform} {r.platform_digest}" if r.platform else ""
            print(f"{r.ref}  {r.digest}{extra}")
    return 0


def _latest(args: argparse.Namespace) -> int:
    # deferred: `images resolve`'s start-up (bench_registry: at most 0.3x skopeo)
    from ...images.evidence import choose_newest, default_cache_path

    repo = parse(args.repository)
    if repo.tag or repo.digest:
        raise ImageError(
            f"latest takes a repository without tag or digest, got {args.repository!r}"
        )
    selector = args.pattern or default_family(repo.repository)
    with _client(args) as client:
        choice = choose_newest(
            client,
            repo,
            selector,
            page_size=args.page_size,
            cache_path=default_cache_path(),
            platform=args.platform,
        )
        best = choice.best
        if best is None:
            err = ImageError(
                f"{repo.name}: none of {choice.total} tags matches {selector!r}; pass --pattern"
            )
            err.exit_code = 1
            raise err
        resolved = client.resolve(repo.with_tag(best.tag), args.platform)
    record = {
        "repository": repo.name,
        "tag": best.tag,
        "timestamp": best.timestamp.isoformat() if best.timestamp else None,
        "version": ".".join(map(str, best.version)) or None,
        "created": best.created,
        "tags-total": choice.total,
        "tags-matching": choice.matching,
        "config-fetches": client.requests.get("GET blob", 0),
        **resolved.to_json(),
        "ref": f"{args.repository}:{best.tag}",
    }
    if args.json:
        _print_json(record)
    else:
        print(f"{record['ref']}  {resolved.digest}")
    return 0


def _pin(args: argparse.Namespace) -> int:
    refs = [parse(r) for r in args.refs]
    if args.config_key and len(refs) != 1:
        raise ImageError("--config-key pins exactly one REF into the config; give one")
    if bool(args.config) != bool(args.config_key):
        raise ImageError("--config and --config-key go together")
    from ...images.lock import entry_from_pin  # deferred: PyYAML, only for what writes the lock

    with _client(args) as client:
        pins = [client.pin(r, args.platform) for r in args.refs]
    where = _record_pins(args, pins)
    out: list[dict[str, Any]] = []
    for pin in pins:
        entry = entry_from_pin(pin)
        out.append({"key": entry.key, "ref": pin.ref, **entry.to_yaml()})
    if args.config:
        from ...changelog.configs.pin import pin_image  # deferred: changelog/, this option only

        pin = pins[0]
        image = split(pin.ref).without_digest
        if args.with_digest:
            image = f"{image}@{pin.digest}"
        result = pin_image(args.config, args.config_key, image)
        out[0]["config"] = {
            "path": result.path,
            "key": result.key,
            "old-image": result.old_image,
            "new-image": result.new_image,
            "line": result.line,
            "changed": result.changed,
        }
    if args.json:
        _print_json(out)
    else:
        for item in out:
            print(f"{item['key']}  {item['digest']}  -> {where}")
            if "config" in item:
                cfg = item["config"]
                state = "changed" if cfg["changed"] else "unchanged"
                print(
                    f"{cfg['path']}:{cfg['line']}: {cfg['key']} image {state}: {cfg['new-image']}"
                )
    return 0


def _probe(args: argparse.Namespace) -> int:
    """Pin REF (verified), run `python -m relpipe.engine probe` inside it by digest, report the
    facts.
    """
    import importlib.util  # deferred: docker and the runtime, this action only
    import tempfile  # deferred: this action only

    from ...images.lock import merge_facts  # deferred: PyYAML, this action only
    from ...images.nightly import engine_of  # deferred: this action only
    from ...images.runtime import Runtime  # deferred: docker, this action only

    # Located, never imported: it is mounted, not run here.
    spec = importlib.util.find_spec("relpipe.engine")
    if spec is None or spec.origin is None:
        raise ImageError("cannot find the relpipe engine package to mount; reinstall relpipe")
    engine_dir = Path(spec.origin).parent
    with _client(args) as client:
        pin = client.pin(args.ref, args.platform)
    with tempfile.TemporaryDirectory(prefix="relpipe-probe-") as out:
        run = Runtime.from_env().run_engine(
            pin.reference,
            "probe",
            ["--engine", engine_of(pin.reference.repository)],
            engine_dir=engine_dir,
            out_dir=Path(out),
            timeout_s=args.timeout,
        )
        doc = run.require()
    facts = {k: v for k, v in doc.items() if k not in ("schema", "command", "status")}
    if args.lock:
        merge_facts(args.lock, pin.reference, pin.digest, facts)
    if args.json:
        _print_json(
            {
                "ref": pin.ref,
                "digest": pin.digest,
                "platform-digest": pin.platform_digest,
                "facts": facts,
            }
        )
    else:
        engine = facts.get("engine") or {}
        print(f"{pin.ref}  {pin.digest}")
        for key in ("name", "version", "commit"):
            value = engine.get(key) if isinstance(engine, dict) else None
            print(f"  engine.{key}: {sanitize.terminal(value)}")  # the image wrote it
        for key in ("rocm", "python", "gpu"):
            print(f"  {key}: {sanitize.json_text(facts.get(key))}")
        for err in facts.get("errors") or []:
            print(f"  missing: {sanitize.terminal(err)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("relpipe images", __doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    add_registry_args(common)

    p = sub.add_parser("resolve", parents=[common], help="tag -> digest (one HEAD per tag)")
    p.add_argument("refs", nargs="+", metavar="REF")
    p.set_defaults(func=_resolve)

    p = sub.add_parser("latest", parents=[common], help="newest nightly tag of a repository")
    p.add_argument("repository", metavar="REPOSITORY")
    p.add_argument(
        "--pattern",
        metavar="FAMILY|PATTERN",
        default="",
        help=f"a tag family its engine declares ({', '.join(families())}), optionally narrowed to "
        "one build line (sglang:rocm=720,gpu=mi35x), or a pattern (%%Y %%m %%d %%H %%M %%S, "
        "<name:ver|semver|pep440|hex|num|gpu|gpuname|word>) (default: the repository's nightly "
        "family, e.g. vllm for vllm/vllm-openai-rocm; atom for a repository no family lists)",
    )
    p.add_argument(
        "--page-size", metavar="N", type=int, default=1000, help="tags per listing request (n=)"
    )
    p.set_defaults(func=_latest)

    p = sub.add_parser("pin", parents=[common], help="verified pin into relpipe's state")
    p.add_argument("refs", nargs="+", metavar="REF")
    p.add_argument(
        "--lock",
        metavar="FILE",
        default=None,
        help=f"also write this lock file (e.g. {DEFAULT_LOCK}; default: none, the pins live in "
        "relpipe's state: $RELPIPE_HISTORY, else $RELPIPE_STATE/history.sqlite, else "
        ".relpipe/history.sqlite)",
    )
    p.add_argument(
        "--config", metavar="MASTER_YAML", help="also set the image of --config-key here"
    )
    p.add_argument("--config-key", metavar="KEY", help="the config key whose image --config sets")
    p.add_argument(
        "--with-digest", action="store_true", help="write tag@sha256:... into the config"
    )
    p.set_defaults(func=_pin)

    p = sub.add_parser(
        "probe", parents=[common], help="facts from inside the image (engine, ROCm, ...)"
    )
    p.add_argument("ref", metavar="REF")
    p.add_argument(
        "--lock",
        metavar="FILE",
        default=None,
        help="merge the facts into this lock file's entry for REF",
    )
    p.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=600.0, help="container limit in seconds"
    )
    p.set_defaults(func=_probe)

    p = sub.add_parser(
        "archive",
        parents=[common],
        help="copy pinned images byte for byte to a registry the team controls",
    )
    p.add_argument("refs", nargs="+", metavar="REF", help="pinned references")
    p.add_argument(
        "--to",
        metavar="REGISTRY",
        required=True,
        help="archive registry host[:port]; the repository path stays the same",
    )
    p.add_argument(
        "--lock",
        metavar="FILE",
        default=None,
        help="read the pins from this lock file and record the archive there too (default: "
        "relpipe's state, as `images pin`)",
    )
    p.set_defaults(func=_archive)
    return parser


def _state() -> tuple[Any, Path]:
    """The benchmark repository the command runs in (if any) and relpipe's state folder."""
    # The state (pipeline/, the results store) is read by pin and archive only, never on
    # `images resolve`'s path (bench_registry: at most 0.3x skopeo).
    from ...changelog.repository.checkout import find_root, is_checkout  # deferred: see above
    from ..run import state_dir  # deferred: see above
    from ..workspace import Workspace  # deferred: see above

    ws = Workspace(find_root(Path.cwd())) if is_checkout(Path.cwd()) else None
    return ws, state_dir(ws, None)


def _record_pins(args: argparse.Namespace, pinned: list[Any]) -> str:
    """Pins into relpipe's state (`pipeline.pins`), and into `--lock FILE` when given."""
    from ...images.lock import update  # deferred: PyYAML, only for what writes the lock
    from .. import pins  # deferred: the results store, pin and archive only

    ws, state = _state()
    pins.record(None, state, pinned)
    if args.lock:
        update(args.lock, pinned)
    return pins.where(None, state) + (f" and {args.lock}" if args.lock else "")


def _archive(args: argparse.Namespace) -> int:
    from ...images import archive  # deferred: this action only
    from ...images.lock import load, lookup  # deferred: PyYAML, this action only
    from .. import pins  # deferred: the results store, pin and archive only

    ws, state = _state()
    entries = load(args.lock) if args.lock else pins.load(None, state)
    where = args.lock or pins.where(None, state)
    for ref in args.refs:
        entry = lookup(entries, ref)
        if entry is None:
            raise ImageError(f"{ref}: not in {where}; pin it first (relpipe images pin)")
    copies = []
    with _client(args) as client:
        for ref in args.refs:
            entry = lookup(entries, ref)
            assert entry is not None
            copy = archive.archive(client, parse(ref).with_digest(entry.digest), args.to)
            if args.lock:
                archive.record(args.lock, ref, copy)
            else:
                pins.set_archive(None, state, ref, copy.digest, copy.archive)
            copies.append(copy)
    if args.json:
        _print_json([c.__dict__ for c in copies])
    else:
        for c in copies:
            print(
                f"{c.source} -> {c.archive}: {c.manifests} manifest(s), {c.blobs} blob(s), "
                f"{c.bytes} bytes; recorded in {where}"
            )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return int(args.func(args))
