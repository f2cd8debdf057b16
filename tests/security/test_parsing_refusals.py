"""Input the ledger refuses with a clear one-line error, changing nothing: prices written
as exponents or hexadecimal, and malformed URLs at every door (CLI, API, bot submit)."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from backends import LOOPBACK_ENV
from security_api import api_on_loopback, bearer

from domain.errors import InvalidInput
from domain.urls import check_url
from ledger.bootstrap import Ledger, bootstrap
from ledger.settings import Settings
from workers.extraction.adapters.base import Page
from workers.extraction.extract import extract_page
from workers.extraction.prices import parse_amount, parse_price

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
#: the console script beside this interpreter (the venv's)
CLI = str(Path(sys.executable).with_name("crawl-ledger"))

NOT_DECIMAL = ["1e999", "1E5", "2.5e+3 €", "$1e-3", "0x10", "€0X1F", "0b101", "Preis: 0o17"]
MALFORMED = ["http://[::1", "http://exa mple.com", "http://:80", "ht!tp://x",
             "http://shop.example/" + "a" * 3000, "http://shop.example/a\x00b",
             "http://shop.example/a\nb", "http://ex%41mple.com/", "http://a..b/",
             "http://-shop-/", "http://shop.example:99999/"]


@pytest.mark.parametrize("text", NOT_DECIMAL)
def test_exponent_and_hex_forms_are_no_price(text: str) -> None:
    assert parse_price(text) is None
    assert parse_amount(text, structured=True) is None


@pytest.mark.parametrize(("text", "amount"), [("19.99", "19.99"), ("12,50 €", "12.50"),
                                              ("$1,234.56", "1234.56"), ("EUR 10", "10")])
def test_decimal_prices_still_parse(text: str, amount: str) -> None:
    money = parse_price(text)
    assert money is not None and money.amount == Decimal(amount)


@pytest.mark.parametrize("price", ['"1e999"', '"0x10"'])
def test_a_json_ld_offer_priced_in_exponent_or_hex_has_no_price(price: str) -> None:
    html = ('<html><head><script type="application/ld+json">{"@context": "https://schema.org",'
            '"@type": "Product", "name": "Lamp", "sku": "L1", "offers": {"@type": "Offer",'
            f'"price": {price}, "priceCurrency": "EUR"}}}}</script></head><body><h1>Lamp</h1>'
            '</body></html>')
    _, found = extract_page(Page(url="https://shop.example/p/1", text=html))
    (lamp,) = found.observations
    assert [offer.price for offer in lamp.offers if offer.price is not None] == []


@pytest.mark.parametrize("url", MALFORMED)
def test_malformed_urls_are_refused_in_one_line(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_url(url)
    message = str(refused.value)
    assert message.startswith("bad URL ") and "\n" not in message and len(message) < 200


@pytest.mark.parametrize("url", ["https://shop.example/p?id=1#top", "http://127.0.0.1:8080/p",
                                 "http://[::1]:8000/", "https://bücher.example/", "http://localhost/"])
def test_well_formed_urls_pass(url: str) -> None:
    assert check_url(f" {url} ") == url


def _events(ledger: Ledger) -> int:
    return len(ledger.source.read(0, 100_000))


def test_the_cli_refuses_malformed_urls_with_exit_2_and_records_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env |= LOOPBACK_ENV | {"LEDGER_DATA_DIR": str(tmp_path / "data")}
    commands = [["jobs", "schedule", "--kind", "feed", "--once", "--url", "http://exa mple.com/"],
                ["stores", "add", "--platform", "generic", "Shop", "http://shop.example/\x01"],
                ["stores", "add", "--platform", "generic", "Shop", "http://a..b/"]]
    for command in commands:
        run = subprocess.run([CLI, *command], env=env, capture_output=True, text=True,
                             timeout=120, check=False)
        assert run.returncode == 2, (command, run.stdout, run.stderr)
        assert run.stderr.startswith("crawl-ledger: error: bad URL ") and \
            run.stderr.count("\n") == 1, run.stderr
    ledger = bootstrap(Settings.from_env({**LOOPBACK_ENV, "LEDGER_DATA_DIR": str(tmp_path / "data")}))
    try:
        assert _events(ledger) == 0
    finally:
        ledger.close()


def test_the_api_refuses_malformed_urls_with_422_and_records_nothing(ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="generic", now=T0)
    before = _events(ledger)
    with api_on_loopback(ledger) as (url, tokens), httpx.Client(base_url=url) as api:
        operate = bearer(tokens.create("operate", "op", T0)[0])
        for bad in MALFORMED[:4] + MALFORMED[-3:]:
            job = api.post("/api/v1/jobs", headers=operate, json={
                "kind": "product_page", "url": bad, "store_id": str(store)})
            shop = api.post("/api/v1/stores", headers=operate, json={
                "name": "Bad", "base_url": bad, "platform": "generic"})
            for refused in (job, shop):
                assert refused.status_code == 422, (bad, refused.text)
                assert refused.json()["detail"].startswith("bad URL "), refused.text
    assert _events(ledger) == before


def test_a_bot_submit_with_a_malformed_final_url_is_refused_with_422(ledger: Ledger) -> None:
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="generic", now=T0)
    ledger.app.schedule_job(kind="product_page", url="https://shop.example/p/1", now=T0,
                            store_id=store)
    with api_on_loopback(ledger) as (url, tokens), httpx.Client(base_url=url) as api:
        bot = bearer(tokens.create("bot", "b", T0)[0])
        (lease,) = api.post("/api/v1/bot/leases", headers=bot,
                            json={"worker": "w"}).json()["leases"]
        before = _events(ledger)
        body = base64.b64encode(gzip.compress(b"<html><h1>Lamp</h1></html>")).decode()
        answer = api.post(f"/api/v1/bot/leases/{lease['lease_id']}/result", headers=bot, json={
            "job_id": lease["job_id"], "ok": True, "http_status": 200,
            "final_url": "http://shop example/p/1", "content_type": "text/html",
            "body_gzip_b64": body})
        assert answer.status_code == 422, answer.text
        assert "final_url" in answer.json()["detail"]
        assert "bad URL: a space" in answer.json()["detail"]
        assert _events(ledger) == before
