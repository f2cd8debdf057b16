"""The Faust app factory: `create_app(components, roles)` — no global app, nothing at import.

Roles (a worker process runs one or more):

- `dispatch`: `CrawlJob.Dispatched` -> `ledger.work.v1` keyed by host; with
  `timers`, the leader's scheduler tick and lease reaper (once per cluster);
- `crawl`: `ledger.work.v1` -> lease, crawl, record (`JobWorker`);
- `alert`: `ledger.products.v1` -> alert deliveries (`runtime.alert_step.AlertStep`, the
  embedded runner's handler), and on the leader a timer sending the retries due;
- `image`: `ledger.products.v1` -> product images downloaded and recorded
  (`runtime.image_step.ImageStep`, the embedded runner's and `images fetch`'s step), and on
  the leader a timer sweeping what the read model still lists as pending;
- `project`: the public topics -> read models in PostgreSQL, with offsets; the
  leader of the projecting workers also keeps the Parquet datasets for
  analysts caught up with the event store (they need the log's total order,
  which the per-aggregate topics do not keep).

The consumer group (the Faust app id) is derived from the role set, so
processes with the same roles share the work and different role sets each
see every message. Scale out by starting more processes with the same roles.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import faust
from faust.types import TP

from runtime.components import Components
from runtime.db_thread import first_line
from runtime.heartbeats import INTERVAL as HEARTBEAT_INTERVAL
from streams import agents
from streams.records import WorkItem
from streams.resources import Resources, WorkerOptions
from streams.transport import PromptApp

log = logging.getLogger(__name__)

ROLES = ("dispatch", "crawl", "project", "alert", "image")


class UnknownRole(ValueError):
    """A role that is not one of `ROLES` (or `all`)."""


def parse_roles(roles: Iterable[str]) -> tuple[str, ...]:
    chosen: set[str] = set()
    for role in roles:
        for part in role.split(","):
            if part == "all":
                chosen.update(ROLES)
            elif part in ROLES:
                chosen.add(part)
            else:
                raise UnknownRole(f"unknown worker role {part!r}: use {', '.join(ROLES)} or all")
    if not chosen:
        raise UnknownRole("no worker role given")
    return tuple(r for r in ROLES if r in chosen)


def app_id(roles: Iterable[str], deployment: str = "") -> str:
    """The consumer group of a role set, within its deployment."""
    chosen = parse_roles(roles)
    prefix = f"crawl-ledger-{deployment}-" if deployment else "crawl-ledger-"
    return prefix + ("all" if chosen == ROLES else "+".join(chosen))


def projector_group(roles: Iterable[str], deployment: str = "") -> str:
    """The name under which projecting workers of this role set store their offsets."""
    return app_id(roles, deployment)


#: how often a crawl worker records its proxy pool's health changes and reloads the pool
PROXY_EVERY = 5.0


def create_app(components: Components, roles: Iterable[str],
               options: WorkerOptions | None = None) -> faust.App:
    """A Faust app running the agents of `roles`; resources connect when it runs."""
    chosen = parse_roles(roles)
    options = options or WorkerOptions()
    name = app_id(chosen, components.deployment)
    app = PromptApp(
        name, broker=[f"kafka://{s}" for s in components.broker_servers], store="memory://",
        topic_partitions=options.partitions,
        broker_session_timeout=options.session_timeout,
        broker_heartbeat_interval=options.heartbeat_interval,
        consumer_auto_offset_reset="earliest", web_enabled=False,
        datadir=str(Path(components.data_dir) / "faust" / f"{name}-{os.getpid()}"),
    )
    res = Resources(components, options)
    app.conf.crawl_ledger_resources = res
    work = app.topic(res.topics.work, value_type=WorkItem, key_serializer="raw",
                     partitions=options.partitions)
    if "dispatch" in chosen:
        _dispatch(app, res, work)
    if "crawl" in chosen:
        _crawl(app, res, work)
    if "project" in chosen:
        _project(app, res, name)
    if "alert" in chosen:
        _alert(app, res)
    if "image" in chosen:
        _image(app, res)
    if "crawl" in chosen or "image" in chosen:
        @app.timer(PROXY_EVERY, name="egress-proxies")
        async def proxies() -> None:
            await res.keep_proxies()
    return app


def resources(app: faust.App) -> Resources:
    res: Resources = app.conf.crawl_ledger_resources
    return res


def _raw(app: faust.App, *names: str, partitions: int) -> Any:
    return app.topic(*names, key_serializer="raw", value_serializer="raw", partitions=partitions)


def _dispatch(app: faust.App, res: Resources, work: Any) -> None:
    jobs = _raw(app, res.topics.crawl_jobs, partitions=res.options.partitions)

    @app.agent(jobs, name="dispatch")
    async def dispatch(stream: Any) -> None:
        await agents.dispatch(res, stream, work)

    if not res.options.timers:
        return

    @app.timer(res.options.tick_interval, on_leader=True, name="schedule")
    async def schedule() -> None:
        await agents.schedule(res)

    @app.timer(max(res.options.redrive_after / 4, 1.0), on_leader=True, name="redrive")
    async def redrive() -> None:
        await agents.redrive(res, work)


def _crawl(app: faust.App, res: Resources, work: Any) -> None:
    @app.agent(work, name="crawl", concurrency=res.options.crawl_concurrency)
    async def crawl(stream: Any) -> None:
        await agents.crawl(res, stream, id(stream) % 10_000)

    @app.task
    async def register() -> None:  # listed in the registry from the start, idle or not
        try:
            await agents.join(res)
        except Exception as error:  # noqa: BLE001 - the first work item joins instead
            log.warning("worker not registered at start (%s); it joins at its first work item",
                        first_line(error))

    @app.timer(HEARTBEAT_INTERVAL, name="worker-heartbeat")
    async def heartbeat() -> None:
        await agents.heartbeat(res)


def _alert(app: faust.App, res: Resources) -> None:
    products = _raw(app, res.topics.products, partitions=res.options.partitions)

    @app.agent(products, name="alert")
    async def alert(stream: Any) -> None:
        await agents.alert(res, stream)

    @app.timer(res.options.alert_retry_every, on_leader=True, name="alert-retries")
    async def alert_retries() -> None:
        await agents.alert_retries(res)


def _image(app: faust.App, res: Resources) -> None:
    products = _raw(app, res.topics.products, partitions=res.options.partitions)

    @app.agent(products, name="image")
    async def image(stream: Any) -> None:
        await agents.images(res, stream)

    if res.options.images_every > 0:
        @app.timer(res.options.images_every, on_leader=True, name="image-sweep")
        async def image_sweep() -> None:
            await agents.image_sweep(res)


def _project(app: faust.App, res: Resources, consumer: str) -> None:
    public = _raw(app, *res.topics.public, partitions=res.options.partitions)

    @app.agent(public, name="project")
    async def project(stream: Any) -> None:
        await agents.project(res, stream, consumer)

    if res.options.datasets_every > 0:
        @app.timer(res.options.datasets_every, on_leader=True, name="parquet-datasets")
        async def parquet_datasets() -> None:
            await agents.write_datasets(res)

    watchdog = agents.StallWatchdog()

    async def seek(topic: str, partition: int, offset: int) -> None:
        await app.consumer.seek(TP(topic, partition), offset)

    @app.timer(res.options.stall_check, name="project-watchdog")
    async def unstall() -> None:
        assigned = {(tp.topic, tp.partition) for tp in app.consumer.assignment()
                    if tp.topic in res.topics.public}
        if assigned:
            await agents.unstall(res, consumer, watchdog, assigned, seek)
