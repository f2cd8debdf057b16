from __future__ import annotations

from decimal import Decimal

import pytest

from workers.extraction.availability import to_availability
from workers.extraction.prices import Money, currency_code, parse_amount, parse_price


@pytest.mark.parametrize(
    ("text", "hint", "expected"),
    [
        ("12,50 €", None, Money(Decimal("12.50"), "EUR")),
        ("1.234,56 €", None, Money(Decimal("1234.56"), "EUR")),
        ("$1,234.56", None, Money(Decimal("1234.56"), "USD")),
        ("$10 – $20", None, Money(Decimal(10), "USD")),
        ("99 zł", None, Money(Decimal(99), "PLN")),
        ("1 299 руб.", None, Money(Decimal(1299), "RUB")),
        ("R$ 1.299,90", None, Money(Decimal("1299.90"), "BRL")),
        ("$5", "CAD", Money(Decimal(5), "CAD")),
        ("19.99", "eur", Money(Decimal("19.99"), "EUR")),
        ("from 10,00 EUR", None, Money(Decimal("10.00"), "EUR")),
    ],
)
def test_parse_price_reads_local_formats(text: str, hint: str | None, expected: Money) -> None:
    assert parse_price(text, hint) == expected


@pytest.mark.parametrize("text", ["Free", "Call for price", "", "garbage", None, True, "€"])
def test_no_number_is_no_price(text: object) -> None:
    assert parse_price(text) is None


def test_structured_numbers_keep_their_decimal_point() -> None:
    assert parse_amount("12.500", structured=True) == Decimal("12.500")
    assert parse_amount(Decimal("89.99")) == Decimal("89.99")
    assert parse_amount(45) == Decimal(45)


def test_a_float_is_read_through_its_repr_not_its_binary_value() -> None:
    amount = parse_amount(0.1)
    assert amount == Decimal("0.1") and isinstance(amount, Decimal)


def test_currency_code_prefers_the_store_hint_only_for_ambiguous_symbols() -> None:
    assert currency_code("$", "AUD") == "AUD"
    assert currency_code("€", "USD") == "EUR"
    assert currency_code("kr", "NOK") == "NOK"
    assert currency_code("gbp") == "GBP"
    assert currency_code(None, None) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://schema.org/InStock", "in_stock"),
        ("http://schema.org/OutOfStock", "out_of_stock"),
        ("instock", "in_stock"),
        ("OnlineOnly", "in_stock"),
        ("InStoreOnly", "in_stock"),
        ("SoldOut", "out_of_stock"),
        ("https://schema.org/PreOrder", "preorder"),
        ("PreSale", "preorder"),
        ("BackOrder", "backorder"),
        ("schema:Discontinued", "discontinued"),
        ("LimitedAvailability", "limited"),
        ("in stock", "in_stock"),
        ("oos", "out_of_stock"),
        (True, "in_stock"),
        (False, "out_of_stock"),
        ("https://schema.org/Reserved", "unknown"),
        (None, "unknown"),
        (42, "unknown"),
    ],
)
def test_availability_mapping(value: object, expected: str) -> None:
    assert to_availability(value) == expected
