"""Agent bodies: thin drivers of the same handlers the embedded runner uses.

Every ledger or read-model call runs on the database thread (`Resources.call`),
never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from domain.envelope import Envelope
from domain.timeutil import iso
from runtime.db_thread import retrying_while_unavailable
from runtime.heartbeats import Heartbeats, register
from runtime.image_step import ImageBatch, image_requests
from runtime.ledger import Ledger
from runtime.scheduler import Scheduler
from runtime.work import JobWorker, worker_name
from streams.kafka_projection import Consumed, apply_consumed, projector_offsets
from streams.records import WorkItem
from streams.resources import Resources

log = logging.getLogger(__name__)
DISPATCHED = "CrawlJob.Dispatched"


def work_item(ledger: Ledger, job_id: str) -> WorkItem | None:
    """The work for a dispatched job, or None when it is no longer waiting for a worker."""
    job = ledger.app.get_job(job_id)
    if job.state != "dispatched":
        return None  # redelivered after it was leased, or changed by an operator
    return WorkItem(job_id=str(job.id), url=job.url, host=urlsplit(job.url).netloc,
                    ledger_id=ledger.identity)


def foreign(own: str, other: str | None, what: str) -> bool:
    """True (and logged) for a message stamped by another event store."""
    if other is None or other == own:
        return False
    log.error("refused %s from another event store (%s): another deployment shares these "
              "topics; give each its own LEDGER_DEPLOYMENT", what, other)
    return True


async def dispatch(res: Resources, stream: AsyncIterable[bytes], work_topic: Any) -> None:
    """`CrawlJob.Dispatched` -> a work item keyed by host (acked only once delivered)."""
    async for value in stream:
        env = Envelope.from_json(value)
        if env.event_type != DISPATCHED or foreign(await res.identity(), env.ledger_id,
                                                   f"event {env.event_id}"):
            continue
        try:
            item = await res.call(work_item, env.stream_id)
        except Exception:  # one bad job must not stall dispatching; redrive retries it
            log.exception("job %s: could not build its work item", env.stream_id)
            continue
        if item is not None:
            await send_work(work_topic, item)


async def send_work(work_topic: Any, item: WorkItem) -> None:
    delivered = await work_topic.send(key=item.host.encode(), value=item)
    await delivered  # at-least-once: the source message is acked after this


async def crawl(res: Resources, stream: AsyncIterable[WorkItem], index: int) -> None:
    """Lease, crawl and record each work item (`JobWorker.run`)."""
    worker: JobWorker | None = None
    async for item in stream:
        if foreign(await res.identity(), item.ledger_id, f"work item for job {item.job_id}"):
            continue
        if worker is None:
            ledger = await res.db.call(res.ledger)
            await join(res)
            worker = JobWorker(ledger, await res.crawler(), res.clock, res.db,
                               worker_name(index), res.options.lease_ttl, surface="agent")
        res.in_flight += 1
        try:
            await worker.run(item.job_id)
        except Exception:
            log.exception("job %s: unexpected error in the crawl agent", item.job_id)
        finally:
            res.in_flight -= 1


async def join(res: Resources) -> None:
    """Register this process in the worker registry (an event), once: when the crawl
    role starts (`streams.app`), so an idle worker is listed too, or else at its first
    work item. `heartbeat` keeps it alive, `Resources.close` departs."""
    if res.member is not None:
        return
    res.member = member = f"faust:{worker_name()}"
    try:
        await res.call(lambda ledger: register(ledger, member, "faust",
                                               res.options.crawl_concurrency, ["all"],
                                               res.clock.now()))
    except BaseException:
        res.member = None  # not registered: the next call tries again
        raise


async def heartbeat(res: Resources) -> None:
    """One heartbeat (in flight, memory, CPU): a row updated in place, not an event."""
    member = res.member
    if member is None:
        return
    try:
        await res.call(lambda ledger: Heartbeats(ledger.tables.heartbeats).beat(
            member, res.in_flight, res.clock.now()))
    except Exception:  # a timer that raises stops the worker; the next beat tries again
        log.exception("worker heartbeat failed")


def apply_batch(ledger: Ledger, consumer: str, batch: Sequence[Consumed]) -> int:
    return apply_consumed(ledger.db, ledger.tables.kafka_offsets, ledger.projections(), consumer,
                          batch, ledger.identity)


async def project(res: Resources, stream: Any, consumer: str) -> None:
    """Apply envelopes to the read models in batches, with their offsets."""
    options = res.options
    async for events in stream.take_events(options.batch_size, within=options.batch_within):
        batch = [Consumed(e.message.topic, e.message.partition, e.message.offset,
                          Envelope.from_json(e.value)) for e in events]
        # a batch and its offsets commit together, so applying it again is harmless
        await retrying_while_unavailable(partial(res.call, apply_batch, consumer, batch),
                                         f"projecting {len(batch)} events", options.store_patience)


async def alert_batch(res: Resources, envelopes: Sequence[Envelope]) -> int:
    """Match a batch of product envelopes and send what they triggered (the same handler
    as the embedded runner's); the alerts sent."""
    step = await res.alert_step()
    own = await res.identity()
    mine = [e for e in envelopes if not foreign(own, e.ledger_id, f"event {e.event_id}")]
    return (await step.deliver(await step.record(mine))).delivered


async def alert(res: Resources, stream: Any) -> None:
    """`ledger.products.v1` -> deliveries, each once per (subscription, event id)."""
    options = res.options
    async for events in stream.take_events(options.batch_size, within=options.batch_within):
        envelopes = [Envelope.from_json(e.value) for e in events]
        # deliveries are kept once per (subscription, event id): matching again is harmless
        await retrying_while_unavailable(partial(alert_batch, res, envelopes),
                                         f"alerts for {len(envelopes)} events",
                                         options.store_patience)


async def alert_retries(res: Resources) -> None:
    """The leader's turn: the deliveries due again (backoff over, attempts presumed lost)."""
    try:
        await (await res.alert_step()).deliver_due()
    except Exception:  # the next turn tries again; a timer that raises stops the worker
        log.exception("alert retries failed")


async def image_batch(res: Resources, envelopes: Sequence[Envelope]) -> ImageBatch:
    """Download the images a batch of product envelopes names (the same step as the
    embedded runner's and `images fetch`: claimed, asked, downloaded once)."""
    step = await res.image_step()
    own = await res.identity()
    mine = [e for e in envelopes if not foreign(own, e.ledger_id, f"event {e.event_id}")]
    return await step.fetch(image_requests(mine))


async def images(res: Resources, stream: Any) -> None:
    """`ledger.products.v1` -> each new image URL downloaded and recorded once."""
    options = res.options
    async for events in stream.take_events(options.batch_size, within=options.batch_within):
        envelopes = [Envelope.from_json(e.value) for e in events]
        # an image is claimed and recorded once: fetching the batch again skips those done
        await retrying_while_unavailable(partial(image_batch, res, envelopes),
                                         f"images of {len(envelopes)} events",
                                         options.store_patience)


async def image_sweep(res: Resources) -> None:
    """The leader's turn: what the read model still lists as pending (a claim whose
    holder died ran out, a role started after its messages were consumed)."""
    try:
        await (await res.image_step()).run()
    except Exception:  # the next turn tries again; a timer that raises stops the worker
        log.exception("image sweep failed")


class StallWatchdog:
    """Finds partitions whose projection stopped short of what the relay published.

    A partition is stalled when, at two consecutive checks while this worker
    owned it, its applied offset was behind the relay's acknowledged end and
    did not move: the messages in between were lost on their way to the agent
    (see `apply_consumed`). Seeking there makes the broker deliver them again;
    a needless seek only re-delivers messages that are then dropped.
    """

    def __init__(self) -> None:
        self._behind: dict[tuple[str, int], int] = {}

    def stalled(self, assigned: set[tuple[str, int]], applied: dict[tuple[str, int], int],
                published: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        behind = {tp: applied.get(tp, 0) for tp in assigned
                  if applied.get(tp, 0) < published.get(tp, 0)}
        stuck = {tp: offset for tp, offset in behind.items() if self._behind.get(tp) == offset}
        self._behind = {tp: offset for tp, offset in behind.items() if tp not in stuck}
        return stuck


async def unstall(res: Resources, consumer: str, watchdog: StallWatchdog,
                  assigned: set[tuple[str, int]],
                  seek: Callable[[str, int, int], Awaitable[None]]) -> None:
    """One watchdog check: seek every stalled partition back to its applied offset."""
    try:
        applied, published = await res.call(
            lambda ledger: projector_offsets(ledger.tables, consumer, res.topics))
        for (topic, partition), offset in sorted(
                watchdog.stalled(assigned, applied, published).items()):
            log.warning("projection of %s[%d] stalled at offset %d (relay is at %d): "
                        "reading it again", topic, partition, offset, published[(topic, partition)])
            await seek(topic, partition, offset)
    except Exception:  # the next check tries again; a timer that raises stops the worker
        log.exception("projection stall check failed")


def catch_up_datasets(ledger: Ledger) -> int:
    """The Parquet dataset projection, caught up from the event store in log order."""
    from projections.datasets import DatasetWriter

    return DatasetWriter(ledger.data_dir, ledger.source, ledger.tables.dataset_manifests).catch_up()


async def write_datasets(res: Resources) -> None:
    """The leader's turn: extend the Parquet datasets (a file lock guards the directory
    against an analyst's `crawl-ledger analytics` catching up at the same time)."""
    try:
        await res.call(catch_up_datasets)
    except Exception:  # the next turn tries again; the read models are unaffected
        log.exception("could not catch the Parquet datasets up")


def leader_tick(ledger: Ledger, now: Any, ahead: int) -> tuple[int, int]:
    scheduler = Scheduler(ledger)
    reaped = scheduler.reap(now)
    return len(reaped), len(scheduler.fill(now, ahead))


def stale_dispatched(ledger: Ledger, before: str) -> list[WorkItem]:
    """Work items for jobs dispatched before `before` and still not leased."""
    items = []
    for row in ledger.read.dispatched_jobs(limit=1000):
        if (row.get("updated_at") or "") < before:
            item = work_item(ledger, row["job_id"])
            if item is not None:
                items.append(item)
    return items


async def schedule(res: Resources) -> None:
    """The leader's tick: reap expired leases, then dispatch due jobs until
    `dispatch_ahead` wait for a crawl worker (`Scheduler.fill`)."""
    try:
        await res.call(leader_tick, res.clock.now(), res.options.dispatch_ahead)
    except Exception:  # the next tick tries again; a timer that raises stops the worker
        log.exception("scheduler tick failed")


async def redrive(res: Resources, work_topic: Any) -> None:
    """Re-send work for jobs stuck in `dispatched` (a work item lost with a crash).

    A job is sent again at most once per `redrive_after`: under a backlog the
    first copy may simply still be queued, and every extra copy is a wasted
    lease attempt when it arrives.
    """
    now = res.clock.now()
    before = now - timedelta(seconds=res.options.redrive_after)
    sent = res.redriven
    for job_id in [j for j, at in sent.items() if at < before]:
        del sent[job_id]
    try:
        stale = await res.call(stale_dispatched, iso(before))
    except Exception:  # the next turn tries again; a timer that raises stops the worker
        log.exception("redrive check failed")
        return
    for item in stale:
        if item.job_id in sent:
            continue
        log.warning("job %s still dispatched: sending its work item again", item.job_id)
        await send_work(work_topic, item)
        sent[item.job_id] = now
