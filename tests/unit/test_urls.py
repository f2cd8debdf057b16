from __future__ import annotations

import pytest

from workers.extraction.urls import is_http_url, normalize_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM:80/a/b?b=2&a=1#frag", "http://example.com/a/b?a=1&b=2"),
        ("https://shop.example:443/p", "https://shop.example/p"),
        ("https://shop.example:8443/p", "https://shop.example:8443/p"),
        (
            (
                "https://shop.example/p?utm_source=x&utm_Medium=y&fbclid=1&gclid=2&id=7"
                "&mc_cid=3&mc_eid=4&ref=home&igshid=5&_ga=6"
            ),
            "https://shop.example/p?id=7",
        ),
        ("https://shop.example/a b?q=é", "https://shop.example/a%20b?q=%C3%A9"),
    ],
)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_relative_urls_resolve_against_the_base() -> None:
    assert normalize_url("/p/x?ref=a", "https://Shop.example/c/d") == "https://shop.example/p/x"


def test_the_same_page_normalises_the_same_way() -> None:
    variants = [
        "https://shop.example/p?size=M&color=red",
        "https://SHOP.example:443/p?color=red&size=M&utm_campaign=spring#reviews",
    ]
    assert len({normalize_url(url) for url in variants}) == 1


@pytest.mark.parametrize(
    "url", ["mailto:a@b.c", "javascript:alert(1)", "ftp://x.example/", "/relative"]
)
def test_non_http_urls_are_refused(url: str) -> None:
    assert not is_http_url(url)
    with pytest.raises(ValueError, match="bad URL"):
        normalize_url(url)
