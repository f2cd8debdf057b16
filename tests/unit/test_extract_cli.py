"""`crawl-ledger extract FILE` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.cli import main

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object]:
    code = main(["extract", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_json_output_shape_main_product_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, products = run_json(
        capsys,
        str(PAGES / "product_jsonld_sale_related.html"),
        "--url",
        "https://northpeak.example/products/trail-runner-2",
    )
    assert code == 0
    assert products == [
        {
            "name": "Trail Runner 2",
            "brand": "Northpeak",
            "sku": "TR2",
            "url": "https://northpeak.example/products/trail-runner-2",
            "availability": "in_stock",
            "offers": [
                {
                    "option": "US 9",
                    "price": "119.99",
                    "special_price": "89.99",
                    "currency": "USD",
                    "availability": "in_stock",
                    "quantity": None,
                },
                {
                    "option": "US 10",
                    "price": "119.99",
                    "special_price": None,
                    "currency": "USD",
                    "availability": "out_of_stock",
                    "quantity": None,
                },
            ],
        }
    ]


def test_json_file_is_read_as_an_api_payload(capsys: pytest.CaptureFixture[str]) -> None:
    code, products = run_json(capsys, str(PAGES / "woocommerce_products.json"))
    assert code == 0
    assert [p["name"] for p in products] == ["Ceramic Pour-Over", "Matcha Tin"]  # type: ignore[index, union-attr]


def test_cp1251_file_is_decoded(capsys: pytest.CaptureFixture[str]) -> None:
    _, products = run_json(capsys, str(PAGES / "product_cp1251.html"))
    assert products[0]["name"] == "Чай чёрный «Утро»"  # type: ignore[index]


def test_nothing_found_is_an_empty_array(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "blog.html"
    empty.write_text("<html><body><p>just words</p></body></html>")
    assert run_json(capsys, str(empty)) == (0, [])
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\xff\xfe garbage")
    assert run_json(capsys, str(junk)) == (0, [])


def test_forced_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    code, products = run_json(
        capsys, str(PAGES / "shopify_products.json"), "--adapter", "woocommerce"
    )
    assert (code, products) == (0, [])


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extract", str(PAGES / "shopify_products.json")]) == 0
    out = capsys.readouterr().out
    assert "Trail Runner 2" in out and "89.99" in out and "shopify" in out


@pytest.mark.parametrize("target", ["missing.html", "."])
def test_unreadable_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    assert main(["extract", str(tmp_path / target), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("crawl-ledger: error: ") and captured.err.count("\n") == 1
