"""What marks a visible price (`workers.adapters.visible`): the product's own price, or
one marked down: struck through, named old by a class, labelled as before tax.

A price is struck through when it is set in `<del>`/`<s>`/`<strike>` or a
`line-through` style (on it, an element around it or inside it holding its digits),
or worded so ("was", "statt", "UVP", "старая цена"); it is marked old when a class
or id around it says so ("old-price", "price-was", "compare").

Shops selling to businesses and consumers often show two prices side by side: one
"zzgl. MwSt." / "excl. VAT" / "bez DPH" / "HT" and one including tax, in either
order. Which one is the page's price is the one it puts first (as the candidates'
scores and positions decide). The label matters for prices a theme's classes name
old: such a price is a regular price only beside a lower current price, and a price
before tax is not one. `extract --explain` shows the label among a candidate's reasons.
A label counts when it is the price's own text, the short text around it holding no
other amount, or the class of the element or of an element around it.
"""

from __future__ import annotations

import re

import lxml.html

from workers.caseless import Caseless

__all__ = ["CONVERTED", "MAIN_PRICE", "before_tax", "marked_old_by_class", "struck"]

#: classes and ids platforms give the product's own price (a bonus over other prices)
MAIN_PRICE = re.compile(r"our-?price|deal-?price|sale-?price|special-?price|final-?price|"
                         r"price-?final|current-?price|price-?current|buy-?box|main-?price|"
                         r"price-?main|pdp-?price|product-?price|product__price|"
                         r"price_inside_buybox", re.IGNORECASE)
#: classes and ids of an amount that is not the price: converted, instalment, bulk total
CONVERTED = re.compile(r"conv|approx|install|financ|klarna|monthly|per-?month|bulk", re.IGNORECASE)
_OLD_MARK = Caseless(r"\b(?:old|was|before|list|strike|crossed|compare|orig|"
                     r"original|uvp|rrp|msrp|retail|reference|statt|avant|antes|prima|"
                     r"alt|previous|former|marketprice|market-price|line-through|"
                     r"vorher|oldprice|old-price|price-old|price--old|price-was|wasprice)")
_OLD_WORDS = re.compile(r"\b(?:was|statt|uvp|rrp|list price|regular price|avant|antes|"
                        r"prima|before|vorher|old price|alter preis|zuvor)\b|"
                        r"старая цена|было", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_TAX = (r"(?:mwst|ust|vat|tva|iva|btw|moms|mva|dph|ddv|pvm|pvn|áfa|alv|gst|tax|taxes|"
        r"steuer|ндс|пдв)")
_WITHOUT = (r"(?:zzgl|exkl|excl|excluding|exc|ex|ohne|without|sin|senza|sans|hors|bez|brez|"
            r"ekskl|uden|utan|zonder|sem|без)")
_NET_WORDS = re.compile(rf"(?<!\w){_WITHOUT}\.?\s*(?:[^\W\d]+\.?\s*)?{_TAX}(?!\w)|"
                        r"(?<!\w)(?:netto|net price|prix net|hors taxes?|nettopreis)(?!\w)",
                        re.IGNORECASE)
_HT = re.compile(r"(?<!\w)HT(?!\w)")
_NET_CLASS = Caseless(r"excl(?:uding)?[-_]?(?:vat|tax)|(?:tax|vat)[-_]?excl|without[-_]?tax|"
                      r"price[-_]?(?:excl|net)\b|net[-_]?price|netto|ex[-_]?vat")
_PERCENT = re.compile(r"\d+(?:[.,]\d+)?\s*%")


def before_tax(text: str, around: str, marked: str) -> bool:
    """Whether the price `text`, in the short text `around` it and inside elements
    whose classes are `marked`, is labelled as a price before tax."""
    if _NET_WORDS.search(text) or _HT.search(text) or _NET_CLASS.found_in(marked):
        return True
    rest = _PERCENT.sub("", around.replace(text, " ", 1))
    return not _DIGIT.search(rest) and bool(_NET_WORDS.search(rest) or _HT.search(rest))


def struck(element: lxml.html.HtmlElement, text: str) -> bool:
    """Whether the price `element` (showing `text`) is struck through or worded as old."""
    return bool(_OLD_WORDS.search(text)) or _struck_style(element) or any(
        _DIGIT.search(inner.text_content()) for inner in element.iter("del", "s", "strike"))


def marked_old_by_class(marked: str) -> bool:
    """Whether the classes and ids `marked` around a price name it old."""
    return _OLD_MARK.found_in(marked)


def _struck_style(element: lxml.html.HtmlElement) -> bool:
    current: lxml.html.HtmlElement | None = element
    for _ in range(3):
        if current is None:
            return False
        if current.tag in ("del", "s", "strike") or "line-through" in (
                current.get("style") or ""):
            return True
        current = current.getparent()
    return False
