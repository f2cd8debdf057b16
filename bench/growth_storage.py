"""Bytes per unchanged observation under each storage design, measured (not a test).

    .venv/bin/python bench/growth_storage.py [--stores 4] [--rounds 8]
                                             [--pg postgresql://postgres@127.0.0.1:5432/test]

A small fleet history (`growth_history`) is recorded into an embedded ledger; its
`Product.Observed` rows, as the ledger stored them, are then written into PostgreSQL
tables defined as the event store's (uuid, version, topic, bytea state, notification
id; primary key and the notification id's unique index) in four forms:

1. as stored: one event an observation, JSON state (today);
2. zstd with a dictionary trained on the first half of the states, the second half
   compressed one state at a time by `ZstdDictCompressor`, a compressor for the
   library's hook (each state checked to read back, and an old plain state too);
3. columnar: one event a crawl, its observations as columns (provider ids, prices
   in cents, availability, attributes) in JSON;
4. columnar + zstd (level 3, no dictionary: a crawl's columns are large enough);
5. columnar changes + zstd: one event a crawl naming, by position in the job's
   previous crawl, the products seen unchanged (runs of positions) and carrying
   columns only for those new or changed.
And the floor of any one-event-an-observation design: the same rows with an empty state.

Each prints `pg_total_relation_size / observations`. (A state over ~2 kB, as a
crawl's columns are, is compressed by PostgreSQL's TOAST, pglz by default, before
it is stored: the columnar JSON's bytes on disk are already compressed.) The tables live in a throwaway
schema, dropped at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson  # noqa: E402
import psycopg  # noqa: E402
import zstandard  # noqa: E402
from eventsourcing.persistence import Compressor  # noqa: E402
from growth_history import FleetShape, record_history  # noqa: E402

from ledger.bootstrap import bootstrap  # noqa: E402
from ledger.settings import Settings  # noqa: E402

Row = tuple[uuid.UUID, int, str, bytes]
OBSERVED = "domain.product:Product.Observed"


def observed_rows(stores: int, rounds: int) -> list[Row]:
    """The `Observed` rows of a small fleet history, as the ledger stored them."""
    data = Path(tempfile.mkdtemp(prefix="crawl-ledger-growth-storage-"))
    ledger = bootstrap(Settings(data_dir=data, store=f"sqlite:///{data / 'ledger.sqlite'}"))
    try:
        shape = FleetShape(stores=stores)
        events_a_round = stores * (shape.products + 3)
        record_history(ledger, events_a_round * rounds, shape)
        head = ledger.app.recorder.max_notification_id() or 0
        rows = ledger.app.recorder.select_notifications(1, head, stop=head)
        return [(uuid.UUID(str(r.originator_id)), r.originator_version, r.topic, r.state)
                for r in rows if r.topic.endswith("Product.Observed")]
    finally:
        ledger.close()
        shutil.rmtree(data, ignore_errors=True)


def table_bytes(conn: psycopg.Connection[Any], schema: str, name: str, rows: Sequence[Row]) -> int:
    """`rows` into a new table of the event store's definition: its total size."""
    table = f'"{schema}"."{name}"'
    conn.execute(f"CREATE TABLE {table} (originator_id uuid NOT NULL, originator_version bigint"
                 " NOT NULL, topic text, state bytea, notification_id bigserial, "
                 "PRIMARY KEY (originator_id, originator_version))")
    conn.execute(f"CREATE UNIQUE INDEX ON {table} (notification_id ASC)")
    with conn.cursor() as cur, cur.copy(f"COPY {table} (originator_id, originator_version, "
                                        "topic, state) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["uuid", "int8", "text", "bytea"])
        for row in rows:
            copy.write_row(row)
    conn.execute(f"VACUUM ANALYZE {table}")
    size = conn.execute(f"SELECT pg_total_relation_size('{table}')").fetchone()
    return int(size[0]) if size else 0


class ZstdDictCompressor(Compressor):
    """A compressor for the library's hook (`COMPRESSOR_TOPIC`): zstd with a trained
    dictionary; a state that is not a zstd frame (one stored before) passes through."""

    MAGIC = b"\x28\xb5\x2f\xfd"

    def __init__(self, dictionary: zstandard.ZstdCompressionDict) -> None:
        self._compress = zstandard.ZstdCompressor(level=3, dict_data=dictionary).compress
        self._decompress = zstandard.ZstdDecompressor(dict_data=dictionary).decompress

    def compress(self, data: bytes) -> bytes:
        return self._compress(data)

    def decompress(self, data: bytes) -> bytes:
        return self._decompress(data) if data[:4] == self.MAGIC else data


def zstd_dict_rows(rows: Sequence[Row]) -> tuple[list[Row], int]:
    """The second half of `rows`, each state compressed with a dictionary trained on
    the first half (and the dictionary's size); every state checked to read back."""
    half = len(rows) // 2
    trained = zstandard.train_dictionary(16_384, [r[3] for r in rows[:half]])
    compressor = ZstdDictCompressor(trained)
    out = [(i, v, t, compressor.compress(s)) for i, v, t, s in rows[half:]]
    if any(compressor.decompress(c[3]) != r[3] for c, r in zip(out, rows[half:], strict=True)):
        raise SystemExit("a zstd-compressed state did not read back as stored")
    if compressor.decompress(rows[0][3]) != rows[0][3]:
        raise SystemExit("a state stored before compression did not read back")
    return out, len(trained.as_bytes())


def by_crawl(rows: Sequence[Row]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The decoded `Observed` states by crawl (job, time), in time order."""
    crawls: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for originator_id, _, _, state in rows:
        event = orjson.loads(state)
        event["product"] = str(originator_id)
        crawls[(event["job_id"], event["observed_at"]["_data_"])].append(event)
    return dict(sorted(crawls.items(), key=lambda item: (item[0][1], item[0][0])))


def columnar_rows(rows: Sequence[Row], compress: bool, changes_only: bool = False
                  ) -> tuple[list[Row], int]:
    """One event a crawl: that crawl's observations as columns; and the observations."""
    crawls = by_crawl(rows)
    compressor = zstandard.ZstdCompressor(level=3)
    previous: dict[str, dict[str, bytes]] = {}  # job -> product -> its values' bytes
    out: list[Row] = []
    for version, ((job, at), events) in enumerate(crawls.items()):
        columns = _columns(job, at, events)
        if changes_only:
            columns, previous[job] = _changes(columns, events, previous.get(job, {}))
        payload = orjson.dumps(columns)
        state = compressor.compress(payload) if compress else payload
        out.append((uuid.UUID(job), version, "domain.crawl_job:CrawlJob.Observations", state))
    return out, sum(map(len, crawls.values()))


def _changes(columns: dict[str, Any], events: list[dict[str, Any]],
             before: dict[str, bytes]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The columns of the products new or changed since the job's previous crawl, and
    the positions (in that crawl) of those seen unchanged, as [start, length] runs."""
    values = {e["product"]: orjson.dumps([e["offers"], e["availability"], e["quantity"],
                                          e["attributes"]]) for e in events}
    order = list(before)
    unchanged = {p for p, v in values.items() if before.get(p) == v}
    positions = [i for i, p in enumerate(order) if p in unchanged]
    keep = [i for i, e in enumerate(events) if e["product"] not in unchanged]
    per_product = ("product", "options", "price_cents", "special_cents", "availability",
                   "quantity", "attributes")
    changed = {k: ([v[i] for i in keep] if k in per_product else v) for k, v in columns.items()}
    changed["unchanged_runs"] = _runs(positions)
    return changed, values


def _runs(positions: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for p in positions:
        if runs and runs[-1][0] + runs[-1][1] == p:
            runs[-1][1] += 1
        else:
            runs.append([p, 1])
    return runs


def _columns(job: str, at: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    offers = [e["offers"] for e in events]
    first = events[0]
    return {
        "job_id": job, "observed_at": at, "attempt": first["attempt"],
        "content_hash": first["content_hash"], "extractor_version": first["extractor_version"],
        "product": [e["product"] for e in events],
        "options": [[o["option"] for o in each] for each in offers],
        "price_cents": [[_cents(o["price"]) for o in each] for each in offers],
        "special_cents": [[_cents(o.get("special_price")) for o in each] for each in offers],
        "currency": first["offers"][0]["currency"] if first["offers"] else None,
        "availability": [e["availability"] for e in events],
        "quantity": [e["quantity"] for e in events],
        "attributes": [e["attributes"] for e in events],
    }


def _cents(value: Any) -> int | None:
    if value is None:
        return None
    return int(Decimal(value["_data_"] if isinstance(value, dict) else value) * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--stores", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    rows = observed_rows(args.stores, args.rounds)
    schema = f"growth_storage_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            report(conn, schema, rows)
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def report(conn: psycopg.Connection[Any], schema: str, rows: list[Row]) -> None:
    state = sum(len(r[3]) for r in rows) / len(rows)
    print(f"{len(rows):,} Observed events, state {state:.0f} B on average (JSON)")
    floor = table_bytes(conn, schema, "empty", [(i, v, t, b"") for i, v, t, _ in rows])
    print(f"  0. one event an observation, empty state:  {floor / len(rows):7.1f} B an "
          "observation (the floor of any such design)")
    plain = table_bytes(conn, schema, "plain", rows)
    print(f"  1. one event an observation, JSON:          {plain / len(rows):7.1f} B an observation")
    compressed, dictionary = zstd_dict_rows(rows)
    zstd = table_bytes(conn, schema, "zstd_dict", compressed)
    state = sum(len(r[3]) for r in compressed) / len(compressed)
    print(f"  2. one event an observation, zstd + dict:   {zstd / len(compressed):7.1f} B an "
          f"observation (state {state:.0f} B; dictionary {dictionary:,} B, stored once)")
    for n, (label, compress, changes) in enumerate((
            ("3. one event a crawl, columnar JSON:      ", False, False),
            ("4. one event a crawl, columnar + zstd:    ", True, False),
            ("5. one event a crawl, changes + zstd:     ", True, True))):
        crawl_rows, observations = columnar_rows(rows, compress, changes)
        size = table_bytes(conn, schema, f"columnar_{n}", crawl_rows)
        state = sum(len(r[3]) for r in crawl_rows) / len(crawl_rows)
        print(f"  {label} {size / observations:7.1f} B an observation ({len(crawl_rows)} "
              f"events of {observations / len(crawl_rows):.0f} observations; state "
              f"{state / 1000:.1f} kB, {state / observations * len(crawl_rows):.0f} B an "
              "observation, before PostgreSQL's TOAST compression)")


if __name__ == "__main__":
    main()
