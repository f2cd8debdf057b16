"""`CrawlProcess`: the embedded runner's crawler in a real child process, crawling real
loopback servers (the child is `python -m ledger.drivers.crawl_child`, as in production)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import corpus_files
import pytest
from aiohttp import web
from fleet import wait_for
from http_fixtures import RecordingServer, serving
from proxy_fixtures import closed_port

from domain.values import CrawlFailure, CrawlSuccess, CrawlTask, Policy
from ledger.bootstrap import crawler_for
from ledger.drivers.crawl_process import ChildExited, CrawlProcess
from ledger.settings import Settings
from runtime.ledger import Ledger
from runtime.proxy_pool import ProxyKeeper, add_proxy
from workers.fetching.addresses import AddressGuard

T = TypeVar("T")
FAST = Policy(crawl_delay=0.0, max_concurrency=8)
PAGE = """<html><head><title>{name}</title>
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Product",
 "name": "{name}", "sku": "{sku}", "offers": {{"@type": "Offer", "price": "{price}",
 "priceCurrency": "USD", "availability": "https://schema.org/InStock"}}}}</script>
</head><body><h1>{name}</h1></body></html>"""


def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"LEDGER_ALLOW_NETWORKS": "127.0.0.0/8",
                              "LEDGER_DATA_DIR": str(tmp_path)})


def task(url: str, job: str = "job-1", egress: str | None = None) -> CrawlTask:
    return CrawlTask(job, "lease", 1, "product_page", url, platform="generic",
                     policy=Policy(crawl_delay=0.0, max_concurrency=8, egress=egress))


def shop() -> RecordingServer:
    server = RecordingServer()
    server.text("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    server.text("/p/1", PAGE.format(name="Blue Dream 3.5g", sku="BD-35", price="35.00"))
    server.text("/p/2", PAGE.format(name="Sour Diesel 1g", sku="SD-1", price="12.50"))
    return server


def run(body: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(body())


def test_the_child_crawls_what_the_in_process_crawler_crawls(tmp_path: Path) -> None:
    server = shop()

    async def both() -> tuple[list[object], list[object], int | None]:
        async with serving(server):
            async with crawler_for(settings(tmp_path / "here")) as crawler:
                here = [await crawler.crawl(task(server.url(p))) for p in ("/p/1", "/p/2")]
            async with CrawlProcess(settings(tmp_path / "child")) as process:
                there = await asyncio.gather(*(process.crawl(task(server.url(p), f"job-{p}"))
                                               for p in ("/p/1", "/p/2")))
                return here, list(there), process.pid

    here, there, pid = run(both)
    assert pid is not None and pid != os.getpid()
    assert all(isinstance(o, CrawlSuccess) for o in here + there), there
    assert [o.observations for o in there] == [o.observations for o in here]  # type: ignore[union-attr]
    assert [(o.observations[0].name, str(o.observations[0].offers[0].price)) for o in there] == [  # type: ignore[union-attr]
        ("Blue Dream 3.5g", "35.00"), ("Sour Diesel 1g", "12.50")]
    # the child archived the raw pages under its settings' data dir, as the runner's would
    assert list((tmp_path / "child").rglob("*")) and [p for p in server.paths() if p == "/p/1"]


def test_a_killed_child_fails_its_calls_as_worker_errors_and_the_next_call_starts_another(
        tmp_path: Path) -> None:
    server, arrived, release = shop(), asyncio.Event(), asyncio.Event()

    async def slow(_: web.Request) -> web.StreamResponse:
        arrived.set()
        await release.wait()
        return web.Response(text=PAGE.format(name="Late", sku="L", price="1.00"),
                            content_type="text/html")

    server.route("/slow", slow)

    async def scenario() -> tuple[object, object, int | None, int | None, int]:
        async with serving(server), CrawlProcess(settings(tmp_path)) as process:
            first = process.pid
            crawling = asyncio.create_task(process.crawl(task(server.url("/slow"))))
            await asyncio.wait_for(arrived.wait(), 30)
            os.kill(first or 0, signal.SIGKILL)
            lost = await asyncio.wait_for(crawling, 30)
            release.set()
            again = await process.crawl(task(server.url("/p/2")))
            return lost, again, first, process.pid, process.started

    lost, again, first, second, started = run(scenario)
    assert isinstance(lost, CrawlFailure), lost
    assert (lost.error_kind, lost.retryable) == ("worker_error", True)
    assert "crawl process exited" in lost.message
    assert isinstance(again, CrawlSuccess) and again.observations[0].name == "Sour Diesel 1g"
    assert second != first and started == 2


def test_a_cancelled_call_is_cancelled_in_the_child_which_ignores_ctrl_c(
        tmp_path: Path) -> None:
    server, arrived, hung_up = shop(), asyncio.Event(), asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        arrived.set()
        while request.transport is not None and not request.transport.is_closing():
            await asyncio.sleep(0.01)  # until the child drops the connection
        hung_up.set()
        return web.Response(text="too late")

    server.route("/endless", endless)

    async def scenario() -> tuple[object, int | None, int | None, int]:
        async with serving(server), CrawlProcess(settings(tmp_path)) as process:
            first = process.pid
            crawling = asyncio.create_task(process.crawl(task(server.url("/endless"))))
            await asyncio.wait_for(arrived.wait(), 30)
            os.kill(first or 0, signal.SIGINT)  # a terminal's Ctrl-C reaches the child too
            crawling.cancel()
            # the child cancelled its crawl (well before the fetch's own 20 s read timeout)
            await asyncio.wait_for(hung_up.wait(), 10)
            after = await process.crawl(task(server.url("/p/1")))
            return after, first, process.pid, process.started

    after, first, pid, started = run(scenario)
    assert isinstance(after, CrawlSuccess)
    assert pid == first and started == 1  # the same child, alive through SIGINT


def test_the_child_exits_when_its_parent_dies(tmp_path: Path) -> None:
    code = ("import asyncio, sys\n"
            "from ledger.settings import Settings\n"
            "from ledger.drivers.crawl_process import CrawlProcess\n"
            "async def main():\n"
            f"    async with CrawlProcess(Settings.from_env({{'LEDGER_DATA_DIR': {str(tmp_path)!r}}})) as p:\n"
            "        print(p.pid, flush=True)\n"
            "        await asyncio.Event().wait()\n"
            "asyncio.run(main())\n")
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          text=True) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            assert running(child)
        finally:
            parent.kill()
    wait_for(lambda: not running(child), "the orphaned crawl process to exit", timeout=30)


def running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status  # a zombie has exited (its parent has not reaped it)


def test_the_childs_proxy_pool_is_kept_in_step_with_the_ledger(ledger: Ledger,
                                                                 tmp_path: Path) -> None:
    """The runner's keeper records the child's pool's health changes as events, and the
    ledger's proxies reach the child (a proxy on a closed port: every crawl through it
    fails to connect until the pool takes it out)."""
    server = shop()
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    async def scenario() -> list[str]:
        async with serving(server), CrawlProcess(settings(tmp_path)) as process:
            keeper = ProxyKeeper(ledger, ledger.tables.proxies, process.egress.pool,
                                 lambda: now)
            await add_proxy(ledger, keeper.store, AddressGuard(["127.0.0.0/8"]),
                            f"http://127.0.0.1:{closed_port()}", None, now)
            await asyncio.to_thread(ledger.catch_up)
            keeper.refresh()  # the ledger's proxies, sent to the child
            outcomes = [await process.crawl(task(server.url("/p/1"), egress="pool"))
                        for _ in range(4)]
            await asyncio.to_thread(keeper.step)
            return [o.error_kind if isinstance(o, CrawlFailure) else "ok" for o in outcomes]

    kinds = run(scenario)
    assert kinds == ["connect"] * 4, kinds
    assert "no active egress proxy" not in str(kinds)
    events = [e.event_type for e in ledger.source.read(0, 10_000) if e.stream_type == "Proxy"]
    assert events == ["Proxy.Added", "Proxy.Deactivated"]
    assert not server.paths() or "/p/1" not in server.paths()  # nothing went around the proxy


def test_an_error_in_the_child_reaches_the_caller_and_the_child_serves_on(
        tmp_path: Path) -> None:
    server = shop()

    async def scenario() -> tuple[str, object, int]:
        async with serving(server), CrawlProcess(settings(tmp_path)) as process:
            try:
                await process._call("no-such-call")  # what the child cannot do
            except RuntimeError as error:
                raised = str(error)
            else:
                raised = ""
            return raised, await process.crawl(task(server.url("/p/1"))), process.started

    raised, after, started = run(scenario)
    assert raised == "in the crawl process: ValueError: unknown call 'no-such-call'"
    assert isinstance(after, CrawlSuccess) and started == 1


def test_the_runners_heartbeat_counts_its_crawl_process(ledger: Ledger, tmp_path: Path) -> None:
    """`/api/v1/workers` shows a runner's memory and CPU: with the crawl process's."""
    from ledger.drivers.embedded import EmbeddedRunner
    from runtime.clock import SystemClock
    from runtime.heartbeats import Heartbeats, process_stats

    async def scenario() -> tuple[int, float]:
        async with CrawlProcess(settings(tmp_path)) as process:
            runner = EmbeddedRunner(ledger, process, SystemClock(), recover_orphans=False)
            await runner.run(until_idle=True)  # nothing due: one loop turn, one heartbeat
            return await process.process_stats()

    child_rss, child_cpu = run(scenario)
    own_rss, own_cpu = process_stats()  # this process's peak and CPU, after the beat
    [row] = Heartbeats(ledger.tables.heartbeats).latest().values()
    assert child_rss > 20 * 2**20 and child_cpu > 0  # an interpreter with the crawler loaded
    assert row["rss_bytes"] > own_rss  # its own peak then was at most its peak now
    assert 0 < row["cpu_seconds"] <= own_cpu + child_cpu


def test_a_child_that_cannot_start_is_one_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
        ) -> None:
    """The runner fails at once (not job by job) when its crawl process cannot start, and
    the child says why in one line."""
    monkeypatch.setenv("LEDGER_LOG_FORMAT", "bogus")  # the child refuses its configuration

    async def scenario() -> None:
        async with CrawlProcess(settings(tmp_path)):
            pass

    with pytest.raises(ChildExited, match=r"exited at start \(exit status 1\)"):
        run(scenario)
    said = capfd.readouterr().err.strip().splitlines()
    assert said == ["crawl-ledger: the crawl process: LEDGER_LOG_FORMAT must be one of json, "
                    "console, not 'bogus'"], said


def test_calls_made_while_a_killed_child_is_noticed_all_end(tmp_path: Path) -> None:
    """Calls sent to a child after it died and before the runner noticed fail with it;
    calls after that reach a new child; none hangs."""
    server, arrived = shop(), asyncio.Event()

    async def never(_: web.Request) -> web.StreamResponse:
        arrived.set()
        await asyncio.Event().wait()  # answered by no one: the child dies first
        raise AssertionError("unreachable")

    server.route("/never", never)

    async def scenario() -> list[str]:
        kinds: list[str] = []
        async with serving(server), CrawlProcess(settings(tmp_path)) as process:
            for _ in range(3):
                arrived.clear()
                lost = asyncio.create_task(process.crawl(task(server.url("/never"))))
                await asyncio.wait_for(arrived.wait(), 30)
                os.kill(process.pid or 0, signal.SIGKILL)
                after = [asyncio.create_task(process.crawl(task(server.url("/p/2"))))
                         for _ in range(3)]
                # sent before the death was noticed: failed with it; after: a new child
                ended = await asyncio.wait_for(asyncio.gather(lost, *after), 60)
                ended.append(await asyncio.wait_for(process.crawl(task(server.url("/p/1"))), 60))
                kinds += [o.error_kind if isinstance(o, CrawlFailure) else "ok" for o in ended]
            kinds.append(str(process.started))
        return kinds

    kinds = run(scenario)
    assert kinds[0:15:5] == ["worker_error"] * 3 and kinds[4:15:5] == ["ok"] * 3, kinds
    assert set(kinds[:15]) <= {"ok", "worker_error"} and kinds[15] == "4", kinds


def test_real_shop_pages_come_back_from_the_child_as_crawled_in_process(tmp_path: Path) -> None:
    """Real pages (the corpus: public fixtures of shops nobody here wrote) extract the same
    through the crawl process as in the runner's own process, down to every field."""
    entries = [e for e in corpus_files.present_or_skip(corpus_files.manifest())
               if e["truth"].get("price")][:12]
    server = shop()
    for n, entry in enumerate(entries):
        server.text(f"/real/{n}", corpus_files.content(entry["file"]).decode("utf-8", "replace"))
    paths = [f"/real/{n}" for n in range(len(entries))]

    async def both() -> tuple[list[object], list[object]]:
        async with serving(server):
            async with crawler_for(settings(tmp_path / "here")) as crawler:
                here = [await crawler.crawl(task(server.url(p), p)) for p in paths]
            async with CrawlProcess(settings(tmp_path / "child")) as process:
                there = await asyncio.gather(*(process.crawl(task(server.url(p), p))
                                               for p in paths))
        return here, list(there)

    here, there = run(both)
    assert len(entries) == 12
    assert sum(isinstance(o, CrawlSuccess) and bool(o.observations) for o in there) >= 10
    pairs = list(zip(here, there, strict=True))
    assert all(type(a) is type(b) for a, b in pairs)
    assert [getattr(o, "observations", None) for o in there] == [
        getattr(o, "observations", None) for o in here]
