"""Faust's Kafka transport with a shorter consumer long-poll.

Faust builds its aiokafka consumer with `fetch_max_wait_ms=1500` and no setting to
change it. A broker that answers a fetch only when that wait runs out, rather than
as soon as a record arrives (Tansu does), then holds every record up to 1.5 s on its
way to an agent (~450 ms on average was measured). `PromptApp` is a `faust.App`
whose consumer asks for `FETCH_MAX_WAIT_MS` instead: a fetch answers within that
time whatever the broker, at the cost of more fetch requests while topics are idle
(one per partition leader per interval).
"""

from __future__ import annotations

from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TransportT

__all__ = ["FETCH_MAX_WAIT_MS", "PromptApp"]

#: how long a fetch may wait for records before the broker answers (ms)
FETCH_MAX_WAIT_MS = 50


class _PromptConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # read by AIOKafkaConsumer.start() when it builds its fetcher
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class _PromptConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> Any:
        return _PromptConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _PromptTransport(faust_aiokafka.Transport):
    Consumer = _PromptConsumer


class PromptApp(faust.App):
    """A `faust.App` whose Kafka consumer long-polls for `FETCH_MAX_WAIT_MS` at most."""

    def _new_transport(self) -> TransportT:
        return _PromptTransport(self.conf.broker_consumer, self)
