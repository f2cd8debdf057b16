"""Currencies from CLDR (babel): codes, symbols, local words, territories, number formats."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest

from workers.extraction.currency import Where, resolve, where_from
from workers.extraction.prices import parse_price


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


def test_the_symbol_index_holds_what_every_sampled_locale_writes() -> None:
    """The index is built from each locale's own CLDR file; a locale inherits the rest
    from locales that are read too, so every merged locale's symbols are in it."""
    from babel import Locale, localedata

    from workers.extraction import currency

    index = currency._symbols()
    identifiers = localedata.locale_identifiers()
    sampled = [*identifiers[::25], "en_CA", "de_CH", "sv", "nb", "pl", "ru_BY", "ja", "hi"]
    for identifier in sampled:
        for code, symbol in Locale.parse(identifier).currency_symbols.items():
            if not currency._ISO.match(symbol):
                assert code in index.get(symbol, ()), (identifier, symbol, code)


def probe(code: str) -> Any:
    """The JSON `code` prints last, run in a fresh interpreter: no other test has
    loaded a locale before, and the locales it loads go with it."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout.splitlines()[-1])


def test_building_the_symbol_index_keeps_no_locale_data() -> None:
    """Reading every locale merged (`Locale.parse`) kept all of CLDR in babel's cache:
    ~200 MiB in each crawling process from the first page showing a currency symbol."""
    code, kept, peak = probe(
        "import json, tracemalloc\n"
        "from workers.extraction.currency import resolve\n"
        "tracemalloc.start()\n"
        "before = tracemalloc.get_traced_memory()[0]\n"
        "code = resolve('€')\n"
        "kept, peak = tracemalloc.get_traced_memory()\n"
        "print(json.dumps([code, kept - before, peak - before]))\n")
    assert code == "EUR"
    assert kept < 8 * 2**20, f"the index keeps {kept / 2**20:.1f} MiB"
    assert peak < 16 * 2**20, f"building it took {peak / 2**20:.1f} MiB"


def test_the_decimal_separator_is_babels_for_every_locale() -> None:
    mismatches = probe(
        "import json\n"
        "from babel import Locale, localedata\n"
        "from babel.numbers import get_decimal_symbol\n"
        "from workers.extraction.currency import _decimal_symbol\n"
        "pairs = [(i, get_decimal_symbol(Locale.parse(i)), _decimal_symbol(i))\n"
        "         for i in localedata.locale_identifiers()]\n"
        "print(json.dumps([pair for pair in pairs if pair[1] != pair[2]]))\n")
    assert mismatches == []


def test_the_decimal_separators_of_many_countries_keep_no_locale_data() -> None:
    """babel keeps each locale it loads (~1.1 MiB): a crawl process meeting shops of
    twenty countries kept ~22 MiB of CLDR until it exited."""
    separators, kept = probe(
        "import json, tracemalloc\n"
        "from workers.extraction.currency import Where\n"
        "Where('DE', 'de').decimal_separator\n"
        "tracemalloc.start()\n"
        "places = [('FR', 'fr'), ('IT', 'it'), ('ES', 'es'), ('PL', 'pl'), ('RU', 'ru'),\n"
        "          ('JP', 'ja'), ('CN', 'zh'), ('BR', 'pt'), ('NL', 'nl'), ('SE', 'sv'),\n"
        "          ('NO', 'nb'), ('DK', 'da'), ('FI', 'fi'), ('CZ', 'cs'), ('HU', 'hu'),\n"
        "          ('TR', 'tr'), ('GR', 'el'), ('KR', 'ko'), ('IN', 'hi'), ('CH', 'de')]\n"
        "found = {f'{l}_{t}': Where(t, l).decimal_separator for t, l in places}\n"
        "print(json.dumps([found, tracemalloc.get_traced_memory()[0]]))\n")
    assert separators["fr_FR"] == "," and separators["ja_JP"] == "." and separators["de_CH"] == "."
    assert kept < 2 * 2**20, f"{kept / 2**20:.1f} MiB kept for 20 locales"
