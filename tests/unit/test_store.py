"""Store: registration, policy, enable/disable — refused commands record nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from domain import ids
from domain.application import CrawlLedger
from domain.errors import InvalidInput, InvalidTransition, NotFound
from domain.values import Policy
from eventstore import SQLiteBackend

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def app() -> Iterator[CrawlLedger]:
    ledger = CrawlLedger(SQLiteBackend(Path(":memory:")))
    yield ledger
    ledger.close()


def head(app: CrawlLedger) -> int:
    return app.recorder.max_notification_id() or 0


def names(app: CrawlLedger, aggregate_id: object) -> list[str]:
    return [type(e).__name__ for e in app.history(aggregate_id)]  # type: ignore[arg-type]


def test_register_derives_the_id_from_the_base_url(app: CrawlLedger) -> None:
    store_id = app.register_store(name=" Green Leaf ", base_url="https://Shop.Example/",
                                  platform="dispensary", now=T0, region="CA")
    store = app.get_store(store_id)
    assert store_id == ids.store_id("https://shop.example")
    assert (store.name, store.base_url, store.region, store.registered_at) == (
        "Green Leaf", "https://shop.example", "CA", T0)
    assert store.policy == Policy() and store.enabled
    assert names(app, store_id) == ["Registered"]


def test_register_with_policy_records_policy_changed(app: CrawlLedger) -> None:
    store_id = app.register_store(name="S", base_url="https://s.example", platform="shopify",
                                  now=T0, crawl_delay=2.5, max_concurrency=2,
                                  respect_robots=False, user_agent="bot/1 (+https://x)")
    assert names(app, store_id) == ["Registered", "PolicyChanged"]
    assert app.get_store(store_id).policy == Policy(2.5, 2, False, "bot/1 (+https://x)")
    app.change_store_policy(store_id, now=T0, crawl_delay=2.5)  # no change: no event
    assert names(app, store_id) == ["Registered", "PolicyChanged"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"base_url": "ftp://s.example"}, "scheme must be http or https"),
    ({"base_url": "https://"}, "no host"),
    ({"name": "  "}, "name is empty"),
    ({"platform": "magento"}, "unknown platform"),
    ({"crawl_delay": -1}, "crawl delay"),
    ({"max_concurrency": 65}, "max concurrency"),
])
def test_bad_registration_is_refused_and_records_nothing(
        app: CrawlLedger, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"name": "S", "base_url": "https://s.example", "platform": "shopify",
                                 "now": T0}
    with pytest.raises(InvalidInput, match=message):
        app.register_store(**(args | kwargs))  # type: ignore[arg-type]
    assert head(app) == 0


def test_registering_twice_is_refused(app: CrawlLedger) -> None:
    app.register_store(name="S", base_url="https://s.example", platform="shopify", now=T0)
    before = head(app)
    with pytest.raises(InvalidInput, match="already registered"):
        app.register_store(name="S2", base_url="https://S.example/", platform="generic", now=T0)
    assert head(app) == before


def test_disable_and_enable_only_toggle(app: CrawlLedger) -> None:
    store_id = app.register_store(name="S", base_url="https://s.example", platform="shopify",
                                  now=T0)
    with pytest.raises(InvalidTransition, match="already enabled"):
        app.enable_store(store_id, T0)
    app.disable_store(store_id, "asked us to stop", T0)
    assert app.get_store(store_id).disabled_reason == "asked us to stop"
    before = head(app)
    with pytest.raises(InvalidTransition, match="already disabled"):
        app.disable_store(store_id, "again", T0)
    assert head(app) == before
    app.enable_store(store_id, T0)
    assert names(app, store_id) == ["Registered", "Disabled", "Enabled"]
    assert app.get_store(store_id).enabled


@pytest.mark.parametrize("store_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_unknown_store_is_not_found(app: CrawlLedger, store_id: str) -> None:
    with pytest.raises(NotFound, match="unknown store"):
        app.disable_store(store_id, "x", T0)
    assert head(app) == 0


def test_a_job_id_is_not_a_store(app: CrawlLedger) -> None:
    job_id = app.schedule_job(kind="feed", url="https://f.example/rss", now=T0, every=3600)
    with pytest.raises(NotFound, match="unknown store"):
        app.get_store(job_id)
