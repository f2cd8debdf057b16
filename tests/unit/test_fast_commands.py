"""The aggregates' command methods trigger their events as the library's `@event`
decorator does (`domain.aggregate.fast_command`): every call made while a store, its
jobs and its products go through their lives is made again, on a copy of the
aggregate as it was, through the library's decorator; both must give an event of
the same class with the same attributes and the same aggregate afterwards."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.domain import BoundCommandMethodDecorator, CommandMethodDecorator

from domain.aggregate import LedgerAggregate
from domain.application import CrawlLedger
from domain.product import Product
from domain.values import CrawlFailure, CrawlSuccess, Observation, Offer
from eventstore import SQLiteBackend

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def aggregate_classes() -> list[type[LedgerAggregate]]:
    found, todo = [], list(LedgerAggregate.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def fast_commands() -> Iterator[tuple[type[LedgerAggregate], str, Any]]:
    for cls in aggregate_classes():
        for name, value in vars(cls).items():
            if hasattr(value, "library_decorator"):
                yield cls, name, value


def state(aggregate: LedgerAggregate) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k != "_pending_events"}


@pytest.fixture
def cross_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Every fast command checked against the library's decorator; yields the names of
    the commands called."""
    called: set[str] = set()

    def checking(name: str, fast: Callable[..., None]) -> Callable[..., None]:
        def check(self: LedgerAggregate, *args: Any, **kwargs: Any) -> None:
            twin = copy.deepcopy(self)
            before = len(self.pending_events)
            fast(self, *args, **kwargs)
            BoundCommandMethodDecorator(fast.library_decorator, twin)(*args, **kwargs)  # type: ignore[attr-defined]
            mine, theirs = self.pending_events[before:], twin.pending_events[before:]
            assert [type(e) for e in mine] == [type(e) for e in theirs]
            # the same attributes in the same order (the stored JSON's key order)
            assert [list(vars(e).items()) for e in mine] == [list(vars(e).items()) for e in theirs]
            assert state(self) == state(twin)
            called.add(f"{type(self).__name__}.{name}")
        return check

    for cls, name, fast in fast_commands():
        monkeypatch.setattr(cls, name, checking(name, fast))
    yield called


def test_every_event_method_of_the_domain_takes_the_fast_path() -> None:
    """Only `__init__` (the created event) is left to the library's decorator."""
    left = [f"{cls.__name__}.{name}" for cls in aggregate_classes()
            for name, value in vars(cls).items()
            if isinstance(value, CommandMethodDecorator) and name != "__init__"]
    assert left == []
    assert {f"{c.__name__}.{n}" for c, n, _ in fast_commands()} >= {
        "Product._observed", "Product._price_changed", "Product._missed",
        "CrawlJob._leased", "CrawlJob._succeeded", "Store._policy_changed"}


def obs(pid: str, price: str, availability: str = "in_stock", name: str | None = None
        ) -> Observation:
    return Observation(provider_product_id=pid, name=name or f"Product {pid}",
                       offers=(Offer("1g", Decimal(price), "USD"),), availability=availability)


def test_a_store_jobs_and_products_lives_give_the_library_s_events(
        cross_checked: set[str]) -> None:
    app = CrawlLedger(SQLiteBackend(Path(":memory:")))
    try:
        now = T0
        store = app.register_store(name="Shop", base_url="https://shop.example",
                                   platform="shopify", now=now)
        app.change_store_policy(store, now=now, crawl_delay=2.0)
        job = app.schedule_job(kind="catalog", url="https://shop.example/products.json",
                               now=now, store_id=store, every=3600, adaptive=False)
        catalogs = [
            (obs("a", "10.00"), obs("b", "5.00")),
            (obs("a", "12.00", name="Renamed"),),
            (obs("a", "12.00", availability="out_of_stock"),),
            (obs("a", "11.00"),),
            (obs("a", "11.00"),),
        ]
        for cycle, observations in enumerate(catalogs):
            now = max(now, app.get_job(job).next_run_at)
            lease = app.lease(job, "w1", 300, now).lease_id
            if cycle == 3:
                app.extend_lease(job, lease, 300, now)
            app.record_success(job, lease, CrawlSuccess(
                http_status=200, final_url="https://shop.example/products.json",
                extractor="test", extractor_version="1", content_hash=f"c{cycle}",
                observations=observations), now)
        for _ in range(3):
            now = max(now, app.get_job(job).next_run_at) + timedelta(seconds=1)
            lease = app.lease(job, "w1", 300, now).lease_id
            app.record_failure(job, lease, CrawlFailure("http_5xx", "502 Bad Gateway", True),
                               now)
        app.pause(job, now)
        app.resume(job, now)
        app.force_run(job, now)
        app.disable_store(store, "closed", now)
        app.enable_store(store, now)
        app.cancel(job, now)
        assert all(app.get_product(p).observations >= 1 for p in app.get_job(job).products)
    finally:
        app.close()
    assert cross_checked >= {
        "Product._observed", "Product._price_changed", "Product._details_changed",
        "Product._missed", "Product._went_out_of_stock", "Product._back_in_stock",
        "CrawlJob._leased", "CrawlJob._succeeded", "CrawlJob._failed",
        "CrawlJob._lease_extended", "CrawlJob._paused", "CrawlJob._resumed",
        "CrawlJob._cancelled", "Store._policy_changed", "Store._disabled", "Store._enabled"}


def test_a_wrong_call_is_refused_as_the_library_refuses_it() -> None:
    product = Product.discover("s1", obs("p", "1.00"), "j1", T0)
    product.collect_events()
    with pytest.raises(TypeError):
        product._missed("j1", 1, T0, "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        product._missed("j1")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        product._missed("j1", 1, T0, job_id="j2")  # type: ignore[call-arg]
    assert product.pending_events == [] and product.version == 1


def test_an_aggregate_overriding_the_librarys_version_is_refused() -> None:
    """The generated commands set `_version` and `_modified_on` directly: an aggregate
    class that puts its own property in front of them is refused when it is defined."""
    with pytest.raises(TypeError, match="overrides version"):
        class Counted(LedgerAggregate):  # noqa: F841 - defining it is the test
            @property
            def version(self) -> int:
                return int(self._version)
