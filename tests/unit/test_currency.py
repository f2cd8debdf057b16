"""Currencies from CLDR (babel): codes, symbols, local words, territories, number formats."""

from __future__ import annotations

from decimal import Decimal

import pytest

from workers.currency import Where, resolve, where_from
from workers.prices import parse_price


@pytest.mark.parametrize(("found", "where", "code"), [
    ("EUR", Where(), "EUR"),
    ("RUR", Where(), "RUB"),                        # redenominated
    ("BYR", Where(), "BYN"),
    ("€", Where(), "EUR"),
    ("zł", Where(), "PLN"),
    ("Kn", Where(), "HRK"),
    ("б.р.", Where(), "BYN"),
    ("$", Where(), "USD"),                          # the usual reading
    ("$", Where("CA"), "CAD"),                      # the territory's
    ("$", Where("TW"), "TWD"),
    ("$", Where("US", hint="AUD"), "AUD"),          # the store's configured currency first
    ("kr", Where("NO"), "NOK"),
    ("kr", Where(), "SEK"),
    ("¥", Where("CN"), "CNY"),
    ("Rs", Where("PK"), "PKR"),
    ("р.", Where("BY"), "BYN"),
    ("р.", Where("RU"), "RUB"),
])
def test_resolve(found: str, where: Where, code: str) -> None:
    assert resolve(found, where) == code


@pytest.mark.parametrize("word", ["sur", "by", "D", "K", "bez", "DPH", "Price", "ab", "XYZ"])
def test_a_word_near_a_price_is_never_a_currency(word: str) -> None:
    assert resolve(word, Where("FR")) is None


def test_where_reads_the_country_tld_then_og_locale_then_lang() -> None:
    assert where_from("https://kids.1k.by/x", og_locale="ru_RU").territory == "BY"
    assert where_from("https://shop.io/x", lang="de-AT").territory == "AT"  # .io is generic
    assert where_from("https://shop.example.com/x", og_locale="es_AR").territory == "AR"
    assert where_from("https://shop.example.com/x", lang="pt-BR").territory == "BR"
    assert where_from("https://www.argos.co.uk/p").territory == "GB"
    assert where_from("https://shop.example.com/x", lang="en").territory is None
    assert where_from("https://x.de/p", hint="chf").hint == "CHF"
    assert where_from("https://x.de/p").default_currency == "EUR"


@pytest.mark.parametrize(("text", "where", "amount", "code"), [
    ("$24.990", Where("CL", "es"), "24990", "CLP"),    # no minor units: thousands
    ("₩30,000", Where("KR", "ko"), "30000", "KRW"),
    ("$2.449", Where("AR", "es"), "2449", "ARS"),      # the locale's grouping
    ("$1,234", Where("US", "en"), "1234", "USD"),
    ("1.234,56 €", Where("DE", "de"), "1234.56", "EUR"),
    ("270,00 Kn", Where("HR", "hr"), "270.00", "HRK"),
    ("12,50 €", Where(), "12.50", "EUR"),
])
def test_parse_price_reads_numbers_as_the_page_writes_them(
        text: str, where: Where, amount: str, code: str) -> None:
    money = parse_price(text, where=where)
    assert money is not None and (money.amount, money.currency) == (Decimal(amount), code)
