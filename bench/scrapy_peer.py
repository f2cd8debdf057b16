"""The Scrapy peer of bench/crawl_bench.py: a minimal spider over the same pages.

Runs in its own virtualenv (Scrapy is not a project dependency):

    python3 -m venv /tmp/scrapy-venv && /tmp/scrapy-venv/bin/pip install scrapy
    /tmp/scrapy-venv/bin/python bench/scrapy_peer.py URLS_FILE --concurrency 32 --per-host 8

Settings match our pipeline's: robots.txt obeyed, no download delay, the
given total and per-host concurrency, no HTTP cache, no AutoThrottle. The
callback parses the JSON-LD Product with `json` (as our fast path does) and
yields one item per page. Prints one JSON line: items, responses, elapsed
(first request scheduled -> last page parsed), robots-filtered requests.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess


class ProductSpider(scrapy.Spider):  # type: ignore[misc]  # Scrapy is not installed here (SCRAPY_VENV)
    name = "bench_products"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.items = 0
        self.responses = 0
        self.started = 0.0
        self.finished = 0.0

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy >= 2.13
        self.started = time.perf_counter()
        for url in self.urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response: Any) -> Iterator[dict[str, Any]]:
        self.responses += 1
        # the last page read, not spider_closed: closing waits for Scrapy's idle check
        self.finished = time.perf_counter()
        for block in response.xpath('//script[contains(@type, "ld+json")]/text()').getall():
            try:
                data = json.loads(block)
            except ValueError:
                continue
            for node in data if isinstance(data, list) else [data]:
                if isinstance(node, dict) and node.get("@type") == "Product":
                    offers = node.get("offers")
                    offers = offers if isinstance(offers, list) else [offers]
                    self.items += 1
                    yield {"url": response.url, "sku": node.get("sku"), "name": node.get("name"),
                           "prices": [(o.get("name"), o.get("price"), o.get("priceCurrency"))
                                      for o in offers if isinstance(o, dict)]}
                    return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("urls_file")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument("--user-agent", default="crawl-ledger-bench/scrapy")
    args = parser.parse_args()
    urls = [line.strip() for line in open(args.urls_file) if line.strip()]
    process = CrawlerProcess(settings={
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": args.user_agent,
        "AUTOTHROTTLE_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "REACTOR_THREADPOOL_MAXSIZE": 4,
    })
    crawler = process.create_crawler(ProductSpider)
    process.crawl(crawler, urls=urls)
    process.start()
    spider = crawler.spider
    stats = crawler.stats.get_stats()
    print(json.dumps({
        "items": spider.items,
        "responses": spider.responses,
        "elapsed": spider.finished - spider.started,
        "robots_forbidden": stats.get("robotstxt/forbidden", 0),
    }))


if __name__ == "__main__":
    main()
