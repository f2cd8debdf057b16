"""The control app's documents: the store locator and the link feeds.

Feeds (RSS 2.0, Atom, a social JSON feed) link to product pages of the
jsonld/microdata stores, with tracking parameters, and overlap on purpose:
the same product appears in several feeds (and twice in the social feed) so
normalisation and dedup can be tested. `feed_links` gives the clean URLs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape
from typing import Any

from simulator.catalog import Simulation, StoreSpec
from simulator.truth import product_url

_EPOCH_ZERO = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


@dataclass(frozen=True)
class FeedItem:
    title: str
    url: str  # clean product-page URL (no tracking parameters)
    published: datetime


def entry_url(store: StoreSpec, base_url: str) -> str:
    if store.platform == "dispensary":
        return f"{base_url}/embedded-menu/{store.slug}"
    if store.platform in ("jsonld", "microdata"):
        return f"{base_url}/collections/all"
    return base_url


def locator(sim: Simulation, urls: Mapping[str, str]) -> dict[str, Any]:
    return {"stores": [
        {"name": s.name, "url": urls[s.key], "platform": s.platform,
         "entry_url": entry_url(s, urls[s.key]), "region": s.region, "timezone": s.timezone}
        for s in sim.stores
    ]}


def feed_items(sim: Simulation, urls: Mapping[str, str], epoch: int) -> tuple[FeedItem, ...]:
    """Up to 6 products of the HTML stores listed at this epoch, chosen by seed."""
    candidates = []
    for store in sim.stores:
        if store.platform in ("jsonld", "microdata"):
            for p in sim.catalog(store.key, epoch).listed:
                candidates.append((p.name, product_url(store, urls[store.key], p)))
    rng = sim.rng("feeds", epoch)
    chosen = rng.sample(candidates, min(6, len(candidates)))
    when = _EPOCH_ZERO + timedelta(days=epoch)
    return tuple(FeedItem(name, url, when + timedelta(hours=n)) for n, (name, url) in enumerate(chosen))


def feed_links(sim: Simulation, urls: Mapping[str, str], epoch: int) -> tuple[str, ...]:
    """Every distinct clean product URL across the three feeds."""
    return tuple(sorted({item.url for item in feed_items(sim, urls, epoch)}))


def rss(items: tuple[FeedItem, ...], control_url: str) -> str:
    entries = "".join(
        f"<item><title>{escape(i.title)}</title>"
        f"<link>{escape(i.url + '?utm_source=rss&utm_medium=feed')}</link>"
        f"<guid isPermaLink=\"false\">rss-{n}</guid>"
        f"<pubDate>{i.published.strftime('%a, %d %b %Y %H:%M:%S +0000')}</pubDate></item>"
        for n, i in enumerate(items[:4])
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        f"<title>Simulated deals</title><link>{escape(control_url)}</link>"
        f"<description>New products</description>{entries}</channel></rss>\n"
    )


def atom(items: tuple[FeedItem, ...], control_url: str) -> str:
    updated = (items[-1].published if items else _EPOCH_ZERO).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = "".join(
        f"<entry><title>{escape(i.title)}</title><id>urn:sim:atom:{n}</id>"
        f"<link href=\"{escape(i.url + '?utm_source=atom&utm_campaign=weekly')}\"/>"
        f"<updated>{i.published.strftime('%Y-%m-%dT%H:%M:%SZ')}</updated></entry>"
        for n, i in enumerate(items[2:6], start=2)
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>Simulated deals</title><id>{escape(control_url)}/feeds/atom.xml</id>"
        f"<updated>{updated}</updated>{entries}</feed>\n"
    )


def social(items: tuple[FeedItem, ...]) -> dict[str, Any]:
    picks = [i for n, i in enumerate(items) if n % 2 == 0] + list(items[:1])
    return {"posts": [
        {"id": f"post-{n}", "text": f"Check out {i.title}!",
         "links": [f"{i.url}?utm_source=social&fbclid=IwAR{n:04d}sim"],
         "created_at": i.published.strftime("%Y-%m-%dT%H:%M:%SZ")}
        for n, i in enumerate(picks)
    ]}
