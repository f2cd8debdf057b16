"""The simulator over real HTTP: every format matches the ground truth."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from simulator import ServedStore, SimulatorThread

EPOCHS = (0, 4, 9)
LD_SCRIPT = re.compile(r'<script type="application/ld\+json">\s*(.*?)\s*</script>', re.DOTALL)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorThread]:
    with SimulatorThread(stores=5, seed=3) as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def _store(sim: SimulatorThread, platform: str) -> ServedStore:
    return next(s for s in sim.urls.stores if s.platform == platform)


def _truth(sim: SimulatorThread, client: httpx.Client, key: str) -> dict[str, Any]:
    truth = client.get(f"{sim.urls.control_url}/__sim/truth").json()
    return truth["stores"][key]["products"]  # type: ignore[no-any-return]


def _expected(truth: dict[str, Any]) -> dict[str, list[tuple[str, str, str | None, bool]]]:
    """provider id -> [(option, current price, regular price if on sale, in stock)]."""
    return {
        pid: [(o["option"], o["special_price"] or o["price"],
               o["price"] if o["special_price"] else None, o["quantity"] > 0)
              for o in p["offers"]]
        for pid, p in truth.items()
    }


def _money(value: float | str | None) -> str | None:
    return None if value is None else f"{Decimal(str(value)):.2f}"


def _set_epoch(sim: SimulatorThread, client: httpx.Client, epoch: int) -> None:
    reply = client.post(f"{sim.urls.control_url}/__sim/epoch", json={"epoch": epoch})
    assert reply.json() == {"epoch": epoch}


def _graphql(client: httpx.Client, store: ServedStore, operation: str,
             variables: dict[str, Any]) -> dict[str, Any]:
    body = {"operationName": operation, "variables": variables, "query": "query { ... }"}
    reply = client.post(f"{store.base_url}/graphql", json=body)
    assert reply.status_code == 200
    return reply.json()  # type: ignore[no-any-return]


def test_locator_lists_every_store_with_its_entry_point(sim: SimulatorThread,
                                                        client: httpx.Client) -> None:
    stores = client.get(sim.urls.locator_url).json()["stores"]
    assert [s["platform"] for s in stores] == [
        "dispensary", "shopify", "woocommerce", "jsonld", "microdata"]
    assert [s["url"] for s in stores] == [s.base_url for s in sim.urls.stores]
    assert len({urlsplit(s["url"]).port for s in stores}) == 5  # one host per store
    dispensary = stores[0]
    assert dispensary["entry_url"].startswith(dispensary["url"] + "/embedded-menu/")
    assert stores[1]["entry_url"] == stores[1]["url"]
    assert stores[3]["entry_url"] == stores[3]["url"] + "/collections/all"
    assert all(s["region"] and s["timezone"] for s in stores)
    assert client.get(dispensary["entry_url"]).status_code == 200


def test_dispensary_lookup_by_slug(sim: SimulatorThread, client: httpx.Client) -> None:
    store = _store(sim, "dispensary")
    found = _graphql(client, store, "ConsumerDispensaries",
                     {"dispensaryFilter": {"cNameOrID": store.spec.slug}})
    entry = found["data"]["filteredDispensaries"]
    assert entry == [{"id": store.spec.platform_id, "name": store.spec.name,
                      "cName": store.spec.slug, "timezone": store.spec.timezone}]
    missing = _graphql(client, store, "ConsumerDispensaries",
                       {"dispensaryFilter": {"cNameOrID": "nope"}})
    assert missing["data"]["filteredDispensaries"] == []
    assert "errors" in _graphql(client, store, "Mystery", {})


@pytest.mark.parametrize("epoch", EPOCHS)
def test_dispensary_menu_pages_match_truth(sim: SimulatorThread, client: httpx.Client,
                                           epoch: int) -> None:
    _set_epoch(sim, client, epoch)
    store, seen = _store(sim, "dispensary"), {}
    page, pages = 0, 1
    while page < pages:
        variables = {"productsFilter": {"dispensaryId": store.spec.platform_id,
                                        "pricingType": "rec", "Status": "All"},
                     "page": page, "perPage": 4}
        result = _graphql(client, store, "FilteredProducts", variables)["data"]["filteredProducts"]
        pages = result["queryInfo"]["totalPages"]
        for p in result["products"]:
            stock = [c["quantityAvailable"] > 0 for c in p["POSMetaData"]["children"]]
            seen[p["_id"]] = [
                (opt, _money(special if special is not None else price),
                 _money(price) if special is not None else None, ok)
                for opt, price, special, ok in zip(p["Options"], p["recPrices"],
                                                    p["recSpecialPrices"], stock)]
        page += 1
    assert seen == _expected(_truth(sim, client, store.key))
    assert result["queryInfo"]["totalCount"] == len(seen)


@pytest.mark.parametrize("epoch", EPOCHS)
def test_shopify_products_json_matches_truth(sim: SimulatorThread, client: httpx.Client,
                                             epoch: int) -> None:
    _set_epoch(sim, client, epoch)
    store, seen, page = _store(sim, "shopify"), {}, 1
    while products := client.get(f"{store.base_url}/products.json",
                                 params={"limit": 5, "page": page}).json()["products"]:
        for p in products:
            seen[str(p["id"])] = [(v["title"], v["price"], v["compare_at_price"], v["available"])
                                  for v in p["variants"]]
        page += 1
    assert page > 2  # it paginated
    assert seen == _expected(_truth(sim, client, store.key))


@pytest.mark.parametrize("epoch", EPOCHS)
def test_woocommerce_store_api_matches_truth(sim: SimulatorThread, client: httpx.Client,
                                             epoch: int) -> None:
    _set_epoch(sim, client, epoch)
    store, seen, page, pages = _store(sim, "woocommerce"), {}, 1, 1
    while page <= pages:
        reply = client.get(f"{store.base_url}/wp-json/wc/store/v1/products",
                           params={"page": page, "per_page": 4})
        pages = int(reply.headers["X-WP-TotalPages"])
        for p in reply.json():
            prices = p["prices"]
            assert prices["currency_minor_unit"] == 2 and prices["currency_code"] == "USD"
            cents = Decimal(prices["price"]) / 100
            regular = Decimal(prices["regular_price"]) / 100
            seen[str(p["id"])] = [("default", _money(cents),
                                   _money(regular) if p["on_sale"] else None, p["is_in_stock"])]
        page += 1
    assert seen == _expected(_truth(sim, client, store.key))


def _ld_offer_list(product: dict[str, Any]) -> list[dict[str, Any]]:
    offers = product["offers"]
    return offers.get("offers", [offers]) if isinstance(offers, dict) else offers  # type: ignore[no-any-return]


def _ld_offers(product: dict[str, Any]) -> list[tuple[str, str, str | None, bool]]:
    offers = _ld_offer_list(product)
    return [(o["name"], o["price"], o.get("priceSpecification", {}).get("price"),
             o["availability"] == "https://schema.org/InStock") for o in offers]


@pytest.mark.parametrize("epoch", EPOCHS)
def test_jsonld_listing_matches_truth(sim: SimulatorThread, client: httpx.Client,
                                      epoch: int) -> None:
    _set_epoch(sim, client, epoch)
    store = _store(sim, "jsonld")
    html = client.get(store.entry_url).text
    (item_list,) = [json.loads(s) for s in LD_SCRIPT.findall(html)]
    assert item_list["@type"] == "ItemList"
    seen = {e["item"]["sku"]: _ld_offers(e["item"]) for e in item_list["itemListElement"]}
    assert seen == _expected(_truth(sim, client, store.key))
    currencies = {o["priceCurrency"] for e in item_list["itemListElement"]
                  for o in _ld_offer_list(e["item"])}
    assert currencies == {"EUR"}


def test_jsonld_product_page_has_main_and_related_product(sim: SimulatorThread,
                                                          client: httpx.Client) -> None:
    _set_epoch(sim, client, 0)
    store = _store(sim, "jsonld")
    truth = _truth(sim, client, store.key)
    pid, product = next(iter(truth.items()))
    reply = client.get(product["url"])
    main, related = [json.loads(s) for s in LD_SCRIPT.findall(reply.text)]
    assert main["sku"] == pid and main["url"] == product["url"]
    assert _ld_offers(main) == _expected(truth)[pid]
    assert related["@type"] == "Product" and related["sku"] != pid
    assert reply.text.index('class="related-products"') < reply.text.index(related["name"] + '"')
    assert re.search(r"\d+,\d\d €", reply.text)  # EUR store: comma decimals in visible text


def _md_offer(html: str) -> tuple[str, str, str | None, bool]:
    def find(pattern: str) -> str | None:
        match = re.search(pattern, html)
        return match.group(1) if match else None

    return (str(find(r'<span itemprop="name">([^<]+)</span>')),
            str(find(r'<span itemprop="price" content="([^"]+)"')),
            find(r'<meta itemprop="price" content="([^"]+)"'),
            str(find(r'itemprop="availability" href="([^"]+)"')).endswith("/InStock"))


def test_microdata_listing_matches_truth(sim: SimulatorThread, client: httpx.Client) -> None:
    _set_epoch(sim, client, 4)
    store = _store(sim, "microdata")
    html = client.get(store.entry_url).text
    seen = {}
    for block in html.split('itemprop="item" itemscope')[1:]:
        sku = re.search(r'itemprop="sku" content="([^"]+)"', block).group(1)  # type: ignore[union-attr]
        seen[sku] = [_md_offer(offer) for offer in block.split('itemprop="offers"')[1:]]
    assert seen == _expected(_truth(sim, client, store.key))


def test_disappeared_product_page_is_404(sim: SimulatorThread, client: httpx.Client) -> None:
    store = _store(sim, "microdata")
    for epoch in range(30):
        truth = client.get(f"{sim.urls.control_url}/__sim/truth?epoch={epoch}").json()
        hidden = truth["stores"][store.key]["hidden"]
        if hidden:
            break
    else:
        pytest.fail("no product ever disappeared")
    _set_epoch(sim, client, epoch)
    catalog = sim.simulator.simulation.catalog(store.key, epoch)
    gone = next(p for p in catalog.products if p.provider_id == hidden[0])
    assert client.get(f"{store.base_url}/products/{gone.handle}").status_code == 404


def test_robots_txt_and_private_paths_are_recorded(sim: SimulatorThread,
                                                   client: httpx.Client) -> None:
    for store in sim.urls.stores:
        robots = client.get(f"{store.base_url}/robots.txt")
        assert robots.text == "User-agent: *\nDisallow: /private/\n"
    before = len(sim.simulator.private_hits())
    store = sim.urls.stores[1]
    assert client.get(f"{store.base_url}/private/admin").status_code == 200
    hits = sim.simulator.private_hits()
    assert len(hits) == before + 1 and hits[-1].store == store.key
    logged = client.get(f"{sim.urls.control_url}/__sim/requests",
                        params={"store": store.key}).json()["requests"]
    assert logged[-1]["path"] == "/private/admin" and logged[-1]["status"] == 200


def _clean(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def test_feeds_overlap_and_carry_tracking_params(sim: SimulatorThread,
                                                 client: httpx.Client) -> None:
    _set_epoch(sim, client, 2)
    control = sim.urls.control_url
    rss = re.findall(r"<link>([^<]+\?[^<]+)</link>", client.get(f"{control}/feeds/rss.xml").text)
    atom = re.findall(r'<link href="([^"]+)"/>', client.get(f"{control}/feeds/atom.xml").text)
    posts = client.get(f"{control}/feeds/social.json").json()["posts"]
    social = [link for post in posts for link in post["links"]]
    links = [link.replace("&amp;", "&") for link in rss + atom + social]
    assert all("utm_source=" in link for link in links)
    assert any("fbclid=" in link for link in social)
    clean = [_clean(link) for link in links]
    assert len(clean) > len(set(clean))  # duplicates across and within feeds
    truth = client.get(f"{control}/__sim/truth").json()
    assert sorted(set(clean)) == truth["feed_links"]
    html_stores = {s.base_url for s in sim.urls.stores if s.platform in ("jsonld", "microdata")}
    assert {link.rsplit("/products/", 1)[0] for link in clean} <= html_stores
    assert all(client.get(link).status_code == 200 for link in truth["feed_links"])


def test_epoch_control_and_truth_by_epoch(sim: SimulatorThread, client: httpx.Client) -> None:
    control = sim.urls.control_url
    _set_epoch(sim, client, 5)
    assert client.post(f"{control}/__sim/epoch").json() == {"epoch": 6}
    assert sim.simulator.advance() == 7
    truth = client.get(f"{control}/__sim/truth", params={"epoch": 1}).json()
    assert (truth["epoch"], truth["current_epoch"]) == (1, 7)
    assert client.get(f"{control}/__sim/truth", params={"epoch": "x"}).status_code == 400
    assert client.post(f"{control}/__sim/epoch", json={"epoch": -1}).status_code == 400
    stores = client.get(f"{control}/__sim/stores").json()
    assert stores["epoch"] == 7 and len(stores["stores"]) == 5
