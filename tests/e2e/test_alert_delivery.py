"""A price drop in the simulator delivers exactly one webhook, also across a SIGKILL.

Real processes, real HTTP: `crawl-ledger run` crawls a simulated Shopify store,
`crawl-ledger alerts add` subscribes a loopback receiver (tests/webhook_receiver.py,
which verifies the signature and accepts each delivery key once) to one product's
price drops, the simulator's next epoch drops that product's price, and the runner
crawls again. In the second case the receiver holds the request until the runner
has been killed (-9) mid-delivery; the restarted runner sends it again with the
same key, the receiver accepts it once, and the ledger shows one `Delivered`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from backends import LOOPBACK_ENV
from fleet import CLI, wait_for
from webhook_receiver import Receiver, receiver

from domain import ids
from domain.envelope import Envelope
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from simulator import SimulatorThread

STORE, PRODUCT, DROP_EPOCH = "store-1", "7000002002", 1  # a one-variant product: 20.99 -> 17.84


def cli_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    return env | LOOPBACK_ENV | {"LEDGER_DATA_DIR": str(data_dir), "NO_COLOR": "1"}


class Box:
    def __init__(self, tmp_path: Path, sim: SimulatorThread, hook: Receiver) -> None:
        self.data_dir, self.sim, self.hook = tmp_path / "data", sim, hook
        self.env = cli_env(self.data_dir)
        served = next(s for s in sim.urls.stores if s.key == STORE)
        ledger = bootstrap(Settings.from_env(self.env))
        now = datetime.now(UTC)
        try:
            self.store = str(ledger.app.register_store(
                name=served.spec.name, base_url=served.base_url, platform=served.platform,
                now=now, crawl_delay=0.0))
            self.job = str(ledger.app.schedule_job(kind="catalog", url=served.entry_url,
                                                   store_id=self.store, every=3600, now=now))
        finally:
            ledger.close()
        self.product = str(ids.product_id(self.store, PRODUCT))

    def cli(self, *args: str) -> str:
        done = subprocess.run([CLI, *args], env=self.env, timeout=120, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def envelopes(self) -> list[Envelope]:
        ledger = bootstrap(Settings.from_env(self.env))
        try:
            return ledger.source.read(0, 1_000_000)
        finally:
            ledger.close()

    def deliveries(self) -> list[Envelope]:
        return [e for e in self.envelopes() if e.stream_type == "Delivery"]

    def drop_the_price(self) -> None:
        """Subscribe, then the simulator's next epoch and a forced crawl."""
        secret = self.data_dir / "hook.secret"
        secret.write_text(self.hook.secret)
        self.cli("alerts", "add", "--product", self.product, "--drop", "5",
                 "--webhook", self.hook.url, "--secret-file", str(secret))
        self.sim.simulator.set_epoch(DROP_EPOCH)
        self.cli("jobs", "force-run", self.job)


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    with SimulatorThread(stores=5, seed=5) as sim, receiver(hold=False) as hook:
        made = Box(tmp_path, sim, hook)
        made.cli("run", "--until-idle")  # epoch 0: discover the product at its first price
        assert any(e.stream_id == made.product and e.event_type == "Product.Discovered"
                   for e in made.envelopes())
        yield made


def _assert_one_delivery(box: Box, attempts: int) -> None:
    events = box.deliveries()
    assert len({e.stream_id for e in events}) == 1
    kinds = [e.event_type for e in events]
    assert kinds.count("Delivery.Triggered") == 1 and kinds.count("Delivery.Delivered") == 1
    assert kinds.count("Delivery.Attempted") == attempts
    key = events[0].stream_id
    assert box.hook.accepted == [key]
    assert {r.key for r in box.hook.requests} == {key} and len(box.hook.requests) == attempts
    assert all(r.signature_ok for r in box.hook.requests)
    payload = events[0].payload
    assert payload["event_type"] == "Product.PriceChanged"
    assert payload["product_id"] == box.product


def test_a_price_drop_delivers_exactly_one_webhook(box: Box) -> None:
    box.drop_the_price()
    box.cli("run", "--until-idle")
    box.cli("run", "--until-idle")  # a second run delivers nothing again
    _assert_one_delivery(box, attempts=1)
    changed = next(e for e in box.envelopes() if e.event_type == "Product.PriceChanged")
    assert (changed.payload["old"], changed.payload["new"]) == ("20.99", "17.84")


def test_a_runner_killed_mid_delivery_delivers_once_after_restart(box: Box) -> None:
    box.hook.hold = True
    box.drop_the_price()
    proc = subprocess.Popen([CLI, "run"], env=box.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: proc.poll() is not None or box.hook.holding.is_set(),
                 "the runner sending the alert")
        assert proc.poll() is None, "the runner exited on its own"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    box.hook.released.set()  # the receiver had accepted it; the sender never heard back
    before = [e.event_type for e in box.deliveries()]
    assert before == ["Delivery.Triggered", "Delivery.Attempted"]

    box.cli("run", "--until-idle")
    _assert_one_delivery(box, attempts=2)
