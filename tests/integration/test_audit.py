"""Tamper evidence: the hash chain over the event log, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from projections import audit

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def record_history(ledger: Ledger, cycles: int) -> None:
    app = ledger.app
    store = app.register_store(name="Shop", base_url="https://shop.example", platform="shopify",
                               now=T0)
    job = app.schedule_job(kind="catalog", url="https://shop.example/products.json", now=T0,
                           store_id=store, every=3600, adaptive=False)
    for cycle in range(cycles):
        now = T0 + timedelta(hours=cycle)
        lease = app.lease(job, "w1", 300, now).lease_id
        offers = (Offer("1g", Decimal(10 + cycle % 3), "USD"),)
        app.record_success(job, lease, CrawlSuccess(
            200, "https://shop.example/products.json", "test", "1", f"h{cycle}",
            observations=tuple(Observation(f"p{i}", f"P{i}", offers, "in_stock") for i in range(5))), now)


def tamper(ledger: Ledger, position: int, sql: str) -> None:
    """Change a stored event behind the application's back (what audit must catch)."""
    recorder = ledger.app.recorder
    if (ledger.backend.name == "postgresql"):
        schema, table = recorder.datastore.schema, recorder.events_table_name
        with recorder.datastore.get_connection() as conn:
            conn.execute(sql.format(table=f"{schema}.{table}", key="notification_id"), (position,))
            conn.commit()
    else:
        with recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(sql.format(table=recorder.events_table_name, key="rowid").replace(
                "%s", "?"), (position,))


EDIT = ("UPDATE {table} SET state = CAST(replace(convert_from(state, 'UTF8'), '\"in_stock\"', "
        "'\"out_of_stock\"') AS bytea) WHERE {key} = %s")
EDIT_SQLITE = ("UPDATE {table} SET state = CAST(replace(CAST(state AS TEXT), '\"in_stock\"', "
               "'\"out_of_stock\"') AS BLOB) WHERE {key} = %s")
DELETE = "DELETE FROM {table} WHERE {key} = %s"


def chain(ledger: Ledger) -> audit.StoredChain:
    return audit.StoredChain(ledger.backend, ledger.app.recorder)


def observed_position(ledger: Ledger, after: int) -> int:
    return next(e.position for e in ledger.source.read(after, 10_000)
                if e.event_type == "Product.Observed")


def test_an_untouched_log_verifies_and_later_checkpoints_extend_the_chain(ledger: Ledger) -> None:
    record_history(ledger, 3)
    first = audit.checkpoint(chain(ledger), ledger.db)
    assert first.position == ledger.source.head() and first.events == first.position
    assert audit.verify(chain(ledger), ledger.db).ok
    ledger.app.register_store(name="Other", base_url="https://other.example",
                              platform="shopify", now=T0)
    second = audit.checkpoint(chain(ledger), ledger.db)
    assert second.events == first.events + 1 == ledger.source.head()
    assert second.chain_hash != first.chain_hash
    assert audit.verify(chain(ledger), ledger.db, expect=first.chain_hash).ok
    assert audit.checkpoint(chain(ledger), ledger.db) == second  # nothing new: same head


@pytest.mark.parametrize("change", ["edit", "delete"])
def test_an_edited_or_deleted_event_is_caught_and_located(ledger: Ledger, change: str) -> None:
    record_history(ledger, 250)  # > audit.EVERY events: several checkpoints
    head = audit.checkpoint(chain(ledger), ledger.db)
    victim = observed_position(ledger, 1200)
    edit = EDIT if (ledger.backend.name == "postgresql") else EDIT_SQLITE
    tamper(ledger, victim, edit if change == "edit" else DELETE)
    verdict = audit.verify(chain(ledger), ledger.db, expect=head.chain_hash)
    assert not verdict.ok
    assert verdict.first_bad is not None
    if change == "edit":  # caught at the edited event itself
        assert verdict.first_bad.position == victim
        assert f"the event at position {victim} does not match its chain link" in verdict.message
    else:  # the next event's link no longer follows
        assert verdict.first_bad.position == victim + 1
        assert "events just before it were deleted" in verdict.message


def test_an_unreadable_event_is_reported_not_raised(ledger: Ledger) -> None:
    record_history(ledger, 2)
    audit.checkpoint(chain(ledger), ledger.db)
    broken = ("UPDATE {table} SET state = CAST('{{broken' AS bytea) WHERE {key} = %s"
              if (ledger.backend.name == "postgresql") else
              "UPDATE {table} SET state = CAST('{{broken' AS BLOB) WHERE {key} = %s")
    tamper(ledger, 3, broken)
    verdict = audit.verify(chain(ledger), ledger.db)
    assert not verdict.ok and "position 3" in verdict.message


def test_a_foreign_expected_hash_fails(ledger: Ledger) -> None:
    record_history(ledger, 2)
    audit.checkpoint(chain(ledger), ledger.db)
    assert not audit.verify(chain(ledger), ledger.db, expect="00" * 32).ok
