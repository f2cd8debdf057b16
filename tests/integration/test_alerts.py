"""Alerts on both backends: product events -> deliveries -> a real loopback receiver.

The handler (`runtime.alert_step.AlertStep`) is driven as the embedded runner drives
it (`run_once`), with the real `Notifier` (httpx, the address guard) and a
simulated clock for the retry schedule.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from webhook_receiver import Receiver, receiver

from domain.envelope import Envelope
from domain.errors import InvalidInput
from domain.values import CrawlSuccess, Observation, Offer
from ledger.bootstrap import Ledger
from runtime.alert_channels import (
    AdmittedChannel,
    ChannelStore,
    NewSubscription,
    add_subscription,
    admit_channel,
    restore_channel,
    shown_subscription,
)
from runtime.alert_step import AlertBatch, AlertOptions, AlertStep
from runtime.clock import SimulatedClock
from runtime.db_thread import DbThread
from workers.alert_delivery.notify import Channel, Notifier
from workers.fetching.addresses import AddressGuard
from workers.fetching.http import build_client

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
LOOPBACK = ["127.0.0.0/8"]


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as box:
        yield box


class Shop:
    """One store with one product-page job; `crawl` records what it 'saw'."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        app = ledger.app
        self.store = app.register_store(name="Shop", base_url="https://shop.example",
                                        platform="shopify", now=T0)
        self.job = app.schedule_job(kind="catalog", url="https://shop.example/all", now=T0,
                                    store_id=self.store, every=3600)

    def crawl(self, at: datetime, **prices: tuple[str, str]) -> None:
        """name=(price, availability) for each product seen."""
        app = self.ledger.app
        app.force_run(self.job, at)
        task = app.lease(self.job, "w", 300, at)
        observations = tuple(
            Observation(provider_product_id=name, name=f"{name} Hoodie", availability=avail,
                        offers=(Offer("M", Decimal(price), "EUR"),))
            for name, (price, avail) in prices.items())
        app.record_success(self.job, task.lease_id, CrawlSuccess(
            200, task.url, "test", "test/1", f"h{at.isoformat()}", observations=observations), at)

    def product_id(self, name: str) -> str:
        self.ledger.catch_up()
        return next(r["product_id"] for r in self.ledger.read.products()
                    if r["name"] == f"{name} Hoodie")


def subscribe(ledger: Ledger, target_kind: str, target: str, triggers: list[dict[str, Any]],
              channel: Channel) -> str:
    async def admitted() -> AdmittedChannel:
        guard = AddressGuard(LOOPBACK)
        async with build_client(guard=guard) as client:
            return await admit_channel(Notifier(client, guard), channel)

    channels = ChannelStore(ledger.tables.alert_channels)
    return str(add_subscription(ledger, channels, NewSubscription(
        "test", target_kind, target, triggers, asyncio.run(admitted())), T0))


@asynccontextmanager
async def stepper(ledger: Ledger, clock: SimulatedClock, allow: list[str] = LOOPBACK,
                  **options: Any) -> AsyncIterator[AlertStep]:
    guard = AddressGuard(allow)
    db = DbThread(1)
    try:
        async with build_client(guard=guard) as client:
            yield AlertStep(ledger, Notifier(client, guard), clock, db,
                            options=AlertOptions(**options))
    finally:
        db.close()


def run(ledger: Ledger, clock: SimulatedClock, turns: int = 1, advance: float = 0.0,
        **options: Any) -> list[AlertBatch]:
    async def go() -> list[AlertBatch]:
        done = []
        async with stepper(ledger, clock, **options) as step:
            for _ in range(turns):
                done.append(await step.run_once())
                clock.advance(advance)
        return done
    return asyncio.run(go())


def delivery_events(ledger: Ledger) -> list[Envelope]:
    return [e for e in ledger.source.read(0, 100_000) if e.stream_type == "Delivery"]


def test_a_price_drop_sends_one_signed_webhook_once(ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"), b=("10.00", "in_stock"))
    sub = subscribe(ledger, "product", shop.product_id("a"),
                    [{"kind": "price_drop", "value": "10"}],
                    Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("30.00", "in_stock"), b=("5.00", "in_stock"))  # b: not subscribed
    first = run(ledger, clock)[0]
    assert (first.triggered, first.delivered) == (1, 1)
    assert len(hook.requests) == 1 and hook.requests[0].signature_ok
    body = json.loads(hook.requests[0].body)
    assert body["subscription"]["id"] == sub
    assert body["event"]["event_type"] == "Product.PriceChanged"
    assert (body["event"]["payload"]["old"], body["event"]["payload"]["new"]) == ("40.00", "30.00")
    assert "40.00 -> 30.00 EUR (-25.0 %)" in body["message"]
    assert hook.requests[0].key == body["delivery_id"]

    again = run(ledger, clock, turns=2)  # the handler again, and a fresh one from position 0
    ChannelStore(ledger.tables.alert_channels).move("alerts", 0)
    again += run(ledger, clock)
    assert all(b.triggered == b.delivered == 0 for b in again)
    assert len(hook.requests) == 1
    kinds = [e.event_type for e in delivery_events(ledger)]
    assert kinds == ["Delivery.Triggered", "Delivery.Attempted", "Delivery.Delivered"]
    ledger.catch_up()
    (row,) = ledger.alerts.deliveries(sub)
    assert (row["state"], row["attempts"], row["last_status"]) == ("delivered", 1, 200)


def test_a_small_drop_and_a_rise_send_nothing(ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"))
    subscribe(ledger, "store", str(shop.store), [{"kind": "price_drop", "value": "30"}],
              Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("35.00", "in_stock"))  # -12.5 %
    clock.advance(3600)
    shop.crawl(clock.now(), a=("50.00", "in_stock"))
    assert run(ledger, clock)[0].triggered == 0
    assert hook.requests == [] and delivery_events(ledger) == []


def test_stock_triggers_on_a_search(ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"), b=("9.00", "in_stock"))
    subscribe(ledger, "search", "A HOODIE", [{"kind": "out_of_stock"}, {"kind": "back_in_stock"}],
              Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("40.00", "out_of_stock"), b=("9.00", "out_of_stock"))
    clock.advance(3600)
    shop.crawl(clock.now(), a=("40.00", "in_stock"), b=("9.00", "in_stock"))
    assert run(ledger, clock)[0].delivered == 2
    kinds = [json.loads(r.body)["event"]["event_type"] for r in hook.requests]
    assert kinds == ["Product.WentOutOfStock", "Product.BackInStock"]
    assert {json.loads(r.body)["product"]["name"] for r in hook.requests} == {"a Hoodie"}


def test_a_failing_receiver_gets_retries_with_backoff_then_the_delivery_is_dead(
        ledger: Ledger) -> None:
    with receiver(statuses=[500, 503, 500]) as hook:
        shop = Shop(ledger)
        shop.crawl(T0, a=("40.00", "in_stock"))
        subscribe(ledger, "product", shop.product_id("a"),
                  [{"kind": "price_below", "value": "35"}],
                  Channel("webhook", hook.url, hook.secret))
        clock = SimulatedClock(T0 + timedelta(hours=1))
        shop.crawl(clock.now(), a=("30.00", "in_stock"))
        options = {"max_attempts": 3, "backoff_base": 60.0, "backoff_cap": 90.0}
        # at +0 s, +30 s (not due yet), +60 s, +150 s (backoff 60, then 90 capped)
        async def go() -> None:
            async with stepper(ledger, clock, **options) as step:
                for advance, requests in ((30, 1), (30, 1), (90, 2), (0, 3)):
                    await step.run_once()
                    assert len(hook.requests) == requests
                    clock.advance(advance)
                assert (await step.run_once()).recorded == 0
        asyncio.run(go())
    assert len({r.key for r in hook.requests}) == 1  # one idempotency key for every attempt
    assert hook.accepted == []
    kinds = Counter(e.event_type for e in delivery_events(ledger))
    assert kinds == {"Delivery.Triggered": 1, "Delivery.Attempted": 3, "Delivery.Failed": 3,
                     "Delivery.Dead": 1}
    ledger.catch_up()
    (row,) = ledger.alerts.deliveries(state="dead")
    assert row["last_error"] == "HTTP 500" and row["attempts"] == 3


def test_an_attempt_cut_off_mid_send_is_sent_again_with_the_same_key(
        ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"))
    subscribe(ledger, "product", shop.product_id("a"), [{"kind": "price_drop", "value": "5"}],
              Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("30.00", "in_stock"))

    async def crash_after_intent() -> str:
        async with stepper(ledger, clock) as step:
            ledger.catch_up()
            (made,) = await step.record(ledger.source.read(0, 10_000))
            started = await step.db.call(ledger.app.begin_attempt, made,
                                         clock.now() + timedelta(seconds=120), clock.now())
            assert started is not None  # ... and the process dies before the outcome
            ledger.catch_up()
            assert (await step.deliver_due()).recorded == 0  # still in flight
            assert (await step.deliver_due(orphaned=True)).delivered == 1
            return str(made)
    key = asyncio.run(crash_after_intent())
    assert [r.key for r in hook.requests] == [key]
    attempts = [e.payload["attempt"] for e in delivery_events(ledger)
                if e.event_type == "Delivery.Attempted"]
    assert attempts == [1, 2]


def test_a_private_address_is_refused_unless_allowed(ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"))
    subscribe(ledger, "product", shop.product_id("a"), [{"kind": "price_drop", "value": "5"}],
              Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("30.00", "in_stock"))
    (batch,) = run(ledger, clock, allow=[])
    assert (batch.delivered, batch.dead) == (0, 1)
    assert "blocked_address" in batch.errors[0] and "127.0.0.1 is loopback" in batch.errors[0]
    assert hook.requests == []
    assert Counter(e.event_type for e in delivery_events(ledger))["Delivery.Dead"] == 1


def test_a_removed_subscription_triggers_nothing_more(ledger: Ledger, hook: Receiver) -> None:
    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"))
    sub = subscribe(ledger, "product", shop.product_id("a"),
                    [{"kind": "price_drop", "value": "5"}],
                    Channel("webhook", hook.url, hook.secret))
    ledger.app.remove_subscription(sub, T0)
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("30.00", "in_stock"))
    assert run(ledger, clock)[0].triggered == 0
    assert ChannelStore(ledger.tables.alert_channels).get(sub) is not None  # only the runtime helper forgets it


def test_an_apprise_json_url_reaches_the_receiver(ledger: Ledger) -> None:
    with receiver(secret="") as hook:
        shop = Shop(ledger)
        shop.crawl(T0, a=("40.00", "in_stock"))
        port = hook.url.rsplit(":", 1)[1].split("/")[0]
        subscribe(ledger, "product", shop.product_id("a"), [{"kind": "price_drop", "value": "5"}],
                  Channel("apprise", f"json://127.0.0.1:{port}/hook"))
        clock = SimulatedClock(T0 + timedelta(hours=1))
        shop.crawl(clock.now(), a=("30.00", "in_stock"))
        assert run(ledger, clock)[0].delivered == 1
    (request,) = hook.requests
    sent = json.loads(request.body)
    assert "40.00 -> 30.00 EUR" in sent["message"]


def test_the_faust_agent_body_drives_the_same_handler(ledger: Ledger, hook: Receiver) -> None:
    from contextlib import AbstractAsyncContextManager
    from functools import partial

    from runtime.components import Components
    from streams.agents import alert_batch
    from streams.resources import Resources, WorkerOptions

    shop = Shop(ledger)
    shop.crawl(T0, a=("40.00", "in_stock"))
    subscribe(ledger, "product", shop.product_id("a"), [{"kind": "price_drop", "value": "5"}],
              Channel("webhook", hook.url, hook.secret))
    clock = SimulatedClock(T0 + timedelta(hours=1))
    shop.crawl(clock.now(), a=("30.00", "in_stock"))
    ledger.catch_up()  # the project agents keep the subscriptions' read model current

    @asynccontextmanager
    async def sender() -> AsyncIterator[Notifier]:
        guard = AddressGuard(LOOPBACK)
        async with build_client(guard=guard) as client:
            yield Notifier(client, guard)

    def no_crawler() -> AbstractAsyncContextManager[Any]:
        raise AssertionError("the alert role crawls nothing")

    components = Components(open_ledger=lambda: ledger, open_crawler=no_crawler,
                            data_dir=ledger.data_dir, open_notifier=partial(sender))
    envelopes = ledger.source.read(0, 10_000)

    async def go() -> list[int]:
        res = Resources(components, WorkerOptions(db_threads=1), clock=clock)
        try:  # a batch, then the same batch redelivered (at least once)
            return [await alert_batch(res, envelopes), await alert_batch(res, envelopes)]
        finally:
            await res._stack.aclose()
            res.db.close()
    assert asyncio.run(go()) == [1, 0]
    assert len(hook.requests) == 1 and hook.requests[0].signature_ok


def test_a_subscription_recorded_with_a_whole_path_gets_its_channel_back(ledger: Ledger) -> None:
    """Before path secrets were hidden, `Subscription.Created` kept the whole path; such a
    subscription is still given its channel (compared by today's display form)."""
    async def admitted(channel: Channel) -> AdmittedChannel:
        guard = AddressGuard(LOOPBACK)
        async with build_client(guard=guard) as client:
            return await admit_channel(Notifier(client, guard), channel)

    url = "http://127.0.0.1:9/services/T0001/B0002/SECRET"
    old = ledger.app.create_subscription(
        name="old", target_kind="search", target="hoodie", triggers=[{"kind": "back_in_stock"}],
        channel_kind="webhook", channel=url, now=T0)
    channels = ChannelStore(ledger.tables.alert_channels)
    restored = restore_channel(ledger, channels, str(old),
                               asyncio.run(admitted(Channel("webhook", url, "k"))))
    assert restored == old and channels.get(str(old)) == Channel("webhook", url, "k")
    elsewhere = asyncio.run(admitted(Channel("webhook", "http://127.0.0.1:9/hook", "k")))
    with pytest.raises(InvalidInput, match="add a new subscription") as refused:
        restore_channel(ledger, channels, str(old), elsewhere)
    assert "SECRET" not in str(refused.value)
    ledger.catch_up()
    row = ledger.alerts.subscription(str(old))
    assert row is not None and row["channel"] == url  # the read model holds what was recorded
    assert shown_subscription(row)["channel"] == "http://127.0.0.1:9/services/***"
