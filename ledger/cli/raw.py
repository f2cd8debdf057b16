"""`crawl-ledger raw get|verify|reindex`: the archive of fetched pages (`workers.archive.raw_archive`).

`raw get REF` writes the body stored under a crawl's `raw_ref` (or a page's ref) to
stdout or `--out FILE`, checked against its hash; `raw verify` reads every stored
body back and checks the index; `raw reindex` rebuilds the index from the packs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ledger.cli.errors import CommandError
from ledger.cli.output import print_json

__all__ = ["register"]


def register(sub: Any) -> None:
    raw = sub.add_parser("raw", help="the archive of fetched pages: read, verify, reindex")
    actions = raw.add_subparsers(dest="action", required=True, metavar="ACTION")
    get = actions.add_parser("get", help="write a stored page's bytes (checked against its hash)")
    get.add_argument("ref", help="sha256:<hex>, as in a crawl's raw_ref")
    get.add_argument("--out", type=Path, help="write to FILE instead of stdout")
    get.set_defaults(handler=get_body)
    verify = actions.add_parser("verify", help="read every stored page back; check the index")
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(handler=verify_archive)
    reindex = actions.add_parser("reindex", help="rebuild the index from the packs")
    reindex.set_defaults(handler=reindex_archive)


def _archive(read_only: bool = True) -> Any:
    """The data dir's archive; `get` and `verify` never write to what they read. None
    there (a mistyped `LEDGER_DATA_DIR`) is an error, not an empty archive to make."""
    from eventstore.pack_index import open_pack_index
    from ledger.settings import Settings
    from workers.archive.raw_archive import RawArchive

    data_dir = Settings.from_env().data_dir
    if not (data_dir / "raw").is_dir():
        raise CommandError(f"no archive of pages at {data_dir / 'raw'} "
                           "(is LEDGER_DATA_DIR the data dir a crawl ran with?)")
    return RawArchive(data_dir, open_pack_index, read_only=read_only)


def get_body(args: argparse.Namespace) -> int:
    from workers.archive.raw_archive import ArchiveError

    try:
        body = _archive().get(args.ref)
    except ArchiveError as error:
        raise CommandError(str(error)) from None
    if args.out is None:
        sys.stdout.buffer.write(body)
        sys.stdout.buffer.flush()
        return 0
    try:
        args.out.write_bytes(body)
    except OSError as error:
        raise CommandError(f"cannot write {args.out}: {error.strerror or error}") from None
    print(f"{len(body)} bytes written to {args.out}", file=sys.stderr)
    return 0


def verify_archive(args: argparse.Namespace) -> int:
    found = _archive().verify()
    if args.json:
        print_json({"packs": found.packs, "records": found.records,
                    "loose_files": found.loose_files, "problems": found.problems,
                    "notes": found.notes, "intact": found.intact})
    else:
        for note in found.notes:
            print(f"note: {note}")
        for problem in found.problems:
            print(problem)
        print(f"{found.records} record(s) in {found.packs} pack(s), {found.loose_files} "
              f"file(s) of one body: {'intact' if found.intact else f'{len(found.problems)} problem(s)'}")
    return 0 if found.intact else 1


def reindex_archive(args: argparse.Namespace) -> int:
    indexed = _archive(read_only=False).reindex()
    print(f"{indexed} record(s) indexed again")
    return 0
