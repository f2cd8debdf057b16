"""The elements that hold a page's product heading.

Themes give the product's own section modifier classes that name other products
("product-show move-similar-products-show", "pdp related-items-below"): read as a word,
such a class says "related products", and cutting or skipping the element it marks
would cut the page's own product with it. The product's heading is never part of a
block of other products, so an element holding it is the product's section, whatever
its classes say. The heading is the first `<h1>` whose words are the start of what the
page's `<title>` or og:title names (letters and digits compared, case aside: a brand
and a name set in two spans read "GucciDouble G Marmont Small").
"""

from __future__ import annotations

import re

import lxml.html

__all__ = ["heading_holders"]

_NOT_WORD = re.compile(r"[\W_]+")
#: a heading shorter than this (letters and digits) says too little to match a title
_MIN_HEADING = 6
#: `<h1>` elements looked at: a page's product heading is among its first few
_MAX_HEADINGS = 8


def heading_holders(tree: lxml.html.HtmlElement) -> frozenset[lxml.html.HtmlElement]:
    """The ancestors of the page's product heading (empty when no `<h1>` matches the
    page's title)."""
    titles = [_squeezed(t) for t in _titles(tree)]
    titles = [t for t in titles if t]
    if not titles:
        return frozenset()
    for count, heading in enumerate(tree.iter("h1")):
        if count >= _MAX_HEADINGS:
            break
        said = _squeezed(heading.text_content())
        if len(said) >= _MIN_HEADING and any(said in title for title in titles):
            return frozenset(heading.iterancestors())
    return frozenset()


def _titles(tree: lxml.html.HtmlElement) -> list[str]:
    found = [str(value) for value in tree.xpath("//meta[@property='og:title']/@content")[:1]]
    found += [title.text_content() for title in tree.iter("title")][:1]
    return found


def _squeezed(text: str) -> str:
    return _NOT_WORD.sub("", text).lower()
