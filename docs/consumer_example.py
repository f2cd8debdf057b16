"""Print price drops as they happen, from crawl-ledger's Kafka topics.

A standalone example: it needs only kafka-python (`pip install kafka-python`)
and imports nothing from crawl-ledger. Every message on `ledger.products.v1`
is one JSON envelope (see docs/services/kafka.md). Delivery is at least once,
so the consumer remembers the `event_id`s it has handled and skips repeats.

    python docs/consumer_example.py --bootstrap 127.0.0.1:9092 [--from-beginning]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

PRODUCTS = "ledger.products.v1"


class Products:
    """Names and stores of the products seen so far (from `Product.Discovered`)."""

    def __init__(self) -> None:
        self.names: dict[str, tuple[str, str]] = {}

    def note(self, envelope: dict[str, Any]) -> None:
        if envelope["event_type"] == "Product.Discovered":
            payload = envelope["payload"]
            self.names[envelope["stream_id"]] = (payload["name"], payload["store_id"])

    def describe(self, product_id: str) -> str:
        name, store = self.names.get(product_id, (product_id, "?"))
        return f"{name} (store {store})"


def price_drops(envelopes: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str]]:
    """(envelope, product description) for each price drop, each event once."""
    seen: set[str] = set()
    products = Products()
    for envelope in envelopes:
        if envelope["event_id"] in seen:
            continue  # redelivered: at-least-once delivery
        seen.add(envelope["event_id"])
        products.note(envelope)
        if envelope["event_type"] != "Product.PriceChanged":
            continue
        old, new = effective_prices(envelope["payload"])
        if old is not None and new is not None and new < old:
            yield envelope, products.describe(envelope["stream_id"])


def effective_prices(payload: dict[str, Any]) -> tuple[Decimal | None, Decimal | None]:
    """(old, new) price a shopper pays: the special price when there is one."""
    def pick(price: str | None, special: str | None) -> Decimal | None:
        chosen = special if special is not None else price
        return Decimal(chosen) if chosen is not None else None
    return (pick(payload["old"], payload.get("old_special")),
            pick(payload["new"], payload.get("new_special")))


def consume(bootstrap: str, group: str | None, from_beginning: bool,
            idle_ms: int | None = None) -> Iterator[dict[str, Any]]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        PRODUCTS, bootstrap_servers=bootstrap, group_id=group,
        auto_offset_reset="earliest" if from_beginning else "latest",
        value_deserializer=lambda raw: json.loads(raw),
        consumer_timeout_ms=idle_ms if idle_ms is not None else float("inf"),
    )
    try:
        for message in consumer:
            yield message.value
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="print price drops from crawl-ledger")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--group", default=None, help="consumer group (default: none)")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--exit-when-idle", type=int, default=None, metavar="MS",
                        help="stop after MS milliseconds without messages")
    args = parser.parse_args()
    stream = consume(args.bootstrap, args.group, args.from_beginning, args.exit_when_idle)
    for envelope, product in price_drops(stream):
        p = envelope["payload"]
        old, new = effective_prices(p)
        print(f"{envelope['occurred_at']}  {product}  {p['option']}: "
              f"{old} -> {new} {p['currency']}", flush=True)


if __name__ == "__main__":
    main()
