"""What a driver is handed by the composition root: factories, not connections.

A driver process (Faust worker, HTTP server, bot) opens the ledger and the
crawler when it needs them, from these factories; `ledger/bootstrap.py`
builds them from the operator's settings. Drivers never read settings or
the environment themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from runtime.alert_channels import SenderPort
from runtime.ledger import Ledger
from runtime.work import CrawlerPort


@dataclass(frozen=True)
class Components:
    #: builds the wired ledger (connects: call it off the event loop)
    open_ledger: Callable[[], Ledger]
    #: an async context giving a crawler (HTTP client, raw archive) and closing it
    open_crawler: Callable[[], AbstractAsyncContextManager[CrawlerPort]]
    data_dir: Path
    #: Kafka bootstrap servers (host:port) for the streaming driver
    broker_servers: tuple[str, ...] = ()
    #: the deployment id namespacing topics and consumer groups ("" for none)
    deployment: str = ""
    #: an async context giving the alert sender (its own HTTP client) and closing it
    open_notifier: Callable[[], AbstractAsyncContextManager[SenderPort]] | None = None
