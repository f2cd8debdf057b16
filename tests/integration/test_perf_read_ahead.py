"""The catch-up read-ahead (`NotificationLogSource.batches`) and the runner on top of it:
same envelopes, same order, same batches as one `read` after the other, on both backends."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from uuid import UUID

import pytest

from domain.gcpause import gc_paused
from ledger.bootstrap import Ledger
from projections import read_models
from projections.framework import table_rows
from projections.runner import ProjectionRunner
from projections.source import batches

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def record(ledger: Ledger, stores: int) -> int:
    for s in range(stores):
        ledger.app.register_store(name=f"S{s}", base_url=f"https://s{s}.example",
                                  platform="shopify", now=T0)
    return ledger.source.head()


def plain(ledger: Ledger, after: int, limit: int) -> list[list[str]]:
    out = []
    while True:
        envelopes = ledger.source.read(after, limit)
        out.append([e.to_json() for e in envelopes])
        if len(envelopes) < limit:
            return out
        after = envelopes[-1].position


@pytest.mark.parametrize("limit", [1, 7, 10, 50])
def test_read_ahead_yields_what_read_yields(ledger: Ledger, limit: int) -> None:
    head = record(ledger, 20)
    assert head >= 20
    for after in (0, 3, head - 1, head):
        ahead = [[e.to_json() for e in b] for b in ledger.source.batches(after, limit)]
        generic = [[e.to_json() for e in b] for b in batches(ledger.source, after, limit)]
        assert ahead == generic == plain(ledger, after, limit)


def test_read_types_is_read_keeping_those_types(ledger: Ledger) -> None:
    """What the dashboard's overview reads: the window's envelopes of some types only,
    equal to those `read` gives, in order; a type nothing has is nothing."""
    record(ledger, 5)
    store = ledger.app.register_store(name="Own", base_url="https://own.example",
                                      platform="shopify", now=T0)
    ledger.app.schedule_job(kind="catalog", url="https://s0.example/p", every=3600, now=T0,
                            store_id=store)
    ledger.app.disable_store(store, "asked us to stop", now=T0)
    head = ledger.source.head()
    every = ledger.source.read(0, head)
    assert {e.event_type for e in every} >= {"Store.Registered", "CrawlJob.Scheduled",
                                              "Store.Disabled"}
    for types in ({"CrawlJob.Scheduled", "Store.Disabled"}, {"Store.Registered"}, set()):
        for after, limit in ((0, head), (2, 3), (head - 1, 10)):
            kept = ledger.source.read_types(after, limit, frozenset(types))
            assert [e.to_json() for e in kept] == [
                e.to_json() for e in ledger.source.read(after, limit) if e.event_type in types]
    assert ledger.source.read_types(0, head, {"CrawlJob.Succeeded"}) == []


def test_stream_ids_are_canonical_uuid_strings(ledger: Ledger) -> None:
    record(ledger, 3)
    for envelope in ledger.source.read(0, 100):
        assert envelope.stream_id == str(UUID(envelope.stream_id))
        assert envelope.event_id == f"{envelope.stream_id}:{envelope.version}"


def test_stopping_early_leaves_nothing_running(ledger: Ledger) -> None:
    record(ledger, 30)
    stream = ledger.source.batches(0, 5)
    first = next(stream)
    stream.close()
    assert [e.position for e in first] == [e.position for e in ledger.source.read(0, 5)]


def test_runner_catches_up_through_read_ahead_like_one_big_batch(ledger: Ledger) -> None:
    record(ledger, 25)
    small = ProjectionRunner(ledger.source, ledger.db, read_models("small_"), batch_size=4)
    progress: list[int] = []
    assert small.catch_up(lambda position, head: progress.append(position)) == ledger.source.head()
    assert progress == sorted(progress) and progress[-1] == ledger.source.head()
    big = ProjectionRunner(ledger.source, ledger.db, read_models("big_"), batch_size=10_000)
    big.catch_up()
    for projection in read_models():
        for table in projection.tables:
            assert table_rows(ledger.db, table, "small_") == table_rows(ledger.db, table, "big_")
    assert small.catch_up() == 0  # nothing new: one empty read


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError
    assert gc.isenabled()


def test_runner_applies_several_reads_per_transaction(ledger: Ledger,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import projections.runner as runner

    record(ledger, 25)
    monkeypatch.setattr(runner, "READ_SIZE", 3)
    applied: list[int] = []
    real = runner.apply_envelopes
    monkeypatch.setattr(runner, "apply_envelopes",
                        lambda db, ps, envs: (applied.append(len(envs)), real(db, ps, envs))[1])
    pieces = ProjectionRunner(ledger.source, ledger.db, read_models("pieces_"), batch_size=10)
    assert pieces.catch_up() == ledger.source.head()
    assert applied[:-1] == [9] * (len(applied) - 1) and sum(applied) == ledger.source.head()
    whole = ProjectionRunner(ledger.source, ledger.db, read_models("whole_"), batch_size=10_000)
    whole.catch_up()
    for projection in read_models():
        for table in projection.tables:
            assert table_rows(ledger.db, table, "pieces_") == table_rows(ledger.db, table, "whole_")
