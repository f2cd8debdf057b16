"""The crawlers a driver opens from Settings: in-process, or the runner's crawl process.

Apart from `ledger.bootstrap` so that the crawl process (`ledger.drivers.crawl_process`), which
builds its crawler here, does not import the ledger's event store and read models.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ledger.settings import Settings

if TYPE_CHECKING:
    from ledger.drivers.crawl_process import CrawlProcess
    from workers.crawl_pages import PageReader
    from workers.crawler import Crawler

__all__ = ["crawler_for", "page_reader", "runner_crawler"]


def page_reader(settings: Settings) -> PageReader:
    """How this deployment reads fetched pages (adapters, pagination and link limits):
    the local crawler's, and the bot API's for the pages bots submit."""
    from workers.crawl_pages import PageReader
    from workers.extraction import adapters

    return PageReader(adapters.REGISTRY)


@asynccontextmanager
async def crawler_for(settings: Settings) -> AsyncIterator[Crawler]:
    """A Crawler with a fast HTTP client and the data dir's raw archive; closes both."""
    from eventstore.pack_index import open_pack_index
    from workers.crawler import build_crawler
    from workers.fetching.addresses import AddressGuard
    from workers.fetching.egress import Egress
    from workers.fetching.http import build_client
    from workers.fetching.proxy_choice import ProxyPool

    guard = AddressGuard(settings.allow_networks)
    # a client per egress proxy: its address passes the same guard on connect
    egress = Egress(ProxyPool(), lambda url: build_client(
        user_agent=settings.user_agent, guard=guard, proxy=url, max_connections=64))
    async with build_client(user_agent=settings.user_agent, guard=guard) as client:
        reader = page_reader(settings)
        crawler = build_crawler(client, settings.data_dir, open_pack_index, reader.adapters,
                                guard=guard, egress=egress, max_pages=reader.max_pages,
                                max_links=reader.max_links)
        try:
            yield crawler
        finally:
            crawler.close()
            await egress.aclose()


@asynccontextmanager
async def runner_crawler(settings: Settings, in_child: bool | None = None
                         ) -> AsyncIterator[Crawler | CrawlProcess]:
    """The embedded runner's crawler: in a child process (`ledger.drivers.crawl_process`) when
    `in_child`, or (None) when this process may use more than one CPU; else in-process."""
    from ledger.drivers.crawl_process import CrawlProcess, use_crawl_process

    if not use_crawl_process(in_child):
        async with crawler_for(settings) as crawler:
            yield crawler
        return
    async with CrawlProcess(settings) as process:
        yield process
