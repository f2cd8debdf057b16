"""What marks a visible price (`workers.extraction.adapters.visible`): the product's own price, or
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

from workers.extraction.caseless import Caseless

__all__ = ["CONVERTED", "MAIN_PRICE", "OLD_LABELS", "another_offer", "before_tax",
           "labelled_regular", "marked_old_by_class", "struck", "unit_price"]

#: classes and ids platforms give the product's own price (a bonus over other prices)
MAIN_PRICE = re.compile(r"our-?price|deal-?price|sale-?price|special-?price|final-?price|"
                         r"price-?final|current-?price|price-?current|buy-?box|main-?price|"
                         r"price-?main|pdp-?price|product-?price|product__price|"
                         r"price_inside_buybox", re.IGNORECASE)
#: classes and ids of an amount that is not the price: converted, instalment, bulk total
CONVERTED = re.compile(r"conv|approx|install|financ|klarna|monthly|per-?month|bulk", re.IGNORECASE)
_OLD_MARK = Caseless(r"\b(?:old|was|before|list|strike|crossed|compare|orig|"
                     r"original|uvp|rrp|msrp|retail|reference|statt|previous|former|"
                     r"marketprice|market-price|line-through|vorher|oldprice|old-price|"
                     r"price-old|price--old|price-was|wasprice)|"
                     # short words only whole: "primary", "alternate" name no old price
                     r"\b(?:avant|antes|prima|alt)(?![a-z])")
#: labels of a price that is not what a buyer pays now: the list, recommended or former
#: price ("MRP", "UVP", "RRP", "was"), in Latin-script languages (as whole words) …
_OLD_LATIN = (r"was|statt|uvp|rrp|mrp|m\.r\.p\.?|msrp|list price|retail price|listenpreis|"
              r"compare at|original price|normalpreis|ovp|avant|antes|prima|before|"
              r"vorher|old price|alter preis|zuvor|prix conseillé|prix de référence|"
              r"precio de lista|precio recomendado|precio anterior|prezzo consigliato|"
              r"prezzo di listino|pvpr?|adviesprijs|cena katalogowa|zamiast|"
              r"suositushinta|ordinarie pris|ord\. pris|normalpris|vejl\. pris|veiledende pris|"
              r"běžná cena|pôvodná cena")
#: … and in others
_OLD_OTHER = r"старая цена|было|цена без скидки|рекомендованная цена|定価|参考価格|原價|原价|市场价|建議售價|정가"
#: labels that themes also set before the price paid when nothing is on sale ("Regular
#: price $88", a visually hidden label): they name a former price only beside a lower one
_REGULAR = r"regular price|reg\. price|precio regular|prix régulier|preço normal"
_OLD_WORDS = re.compile(f"\\b(?:{_OLD_LATIN})(?!\\w)|{_OLD_OTHER}", re.IGNORECASE)
_REGULAR_WORDS = re.compile(f"\\b(?:{_REGULAR})(?!\\w)", re.IGNORECASE)
#: every label of a list, recommended or former price (a page's source is searched for
#: them to tell whether its visible prices may show a sale)
OLD_LABELS = f"\\b(?:{_OLD_LATIN}|{_REGULAR})(?!\\w)|{_OLD_OTHER}"
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


#: a price per unit, never the product's price ("$0.75 each", "$1.25 / Fl Oz", "Grundpreis")
_UNIT_PRICE = re.compile(
    r"(?<!\w)(?:each|ea\.|per (?:unit|item|piece|count|ct)|unit price|base price|"
    r"grundpreis|stückpreis|pro stück|je stück|prix unitaire|par unité|"
    r"precio (?:unitario|por unidad)|por unidad|prezzo unitario|al pezzo|cena jednostkowa|"
    r"za sztukę|за шт|jednotková cena|jämförpris|kilopris|literpris)(?!\w)|"
    r"/\s*(?:fl\.?\s*)?(?:oz|lb|count|ct|ea|each|unit|item|piece|stk|st|stück|шт)(?!\w)",
    re.IGNORECASE)
#: a unit word right after an amount in running text
_UNIT_PRICE_NEXT = re.compile(rf"\s*(?:{_UNIT_PRICE.pattern})", re.IGNORECASE)
_UNIT_PRICE_MARK = Caseless(r"unit-?price|price-?per|per-?unit|base-?price|baseprice|"
                            r"grundpreis")
#: a used, refurbished or another seller's offer ("Used from $25.00", "Other sellers")
_ANOTHER_OFFER = re.compile(
    r"(?<!\w)(?:used|pre-?owned|refurbished|renewed|open box|other sellers?|"
    r"more buying choices|gebraucht|d'occasion|usado|usato|używany|б/у|begagnad|brugt|"
    r"brukt|käytetty|weitere angebote|autres vendeurs|otros vendedores|altri venditori)"
    r"(?!\w)", re.IGNORECASE)
_ANOTHER_OFFER_MARK = Caseless(r"used|olp|other-?sellers?|offer-?listing|more-?buying|refurb")


def unit_price(text: str, marked: str, around: str = "") -> bool:
    """Whether the amount `text`, inside elements whose classes and ids are `marked`, is
    a price per unit: by its own words or marks, or by the words right after it in the
    short text `around` it ("Buy 10 or more for <em>$0.79</em> each")."""
    if _UNIT_PRICE.search(text) or _UNIT_PRICE_MARK.found_in(marked):
        return True
    after = around.find(text) if text else -1
    return after != -1 and bool(_UNIT_PRICE_NEXT.match(around, after + len(text)))


def another_offer(text: str, around: str, marked: str) -> bool:
    """Whether the amount `text` is a used, refurbished or another seller's offer: by its
    own words, its marks, or the short text `around` it holding no other amount
    ("Used – Good <b>$25</b>")."""
    if _ANOTHER_OFFER.search(text) or _ANOTHER_OFFER_MARK.found_in(marked):
        return True
    rest = around.replace(text, " ", 1) if text in around else ""
    return not _DIGIT.search(rest) and bool(_ANOTHER_OFFER.search(rest))


def struck(element: lxml.html.HtmlElement, text: str, around: str = "") -> bool:
    """Whether the price `element` (showing `text`) is struck through or worded as old,
    in its own text, in the short text `around` it when that holds no other amount
    ("List Price: <span>$49.99</span>"), or in a label element just before it."""
    if _OLD_WORDS.search(text) or _struck_style(element) or any(
            _DIGIT.search(inner.text_content()) for inner in element.iter("del", "s", "strike")):
        return True
    rest = around.replace(text, " ", 1) if text in around else ""
    return (not _DIGIT.search(rest) and bool(_OLD_WORDS.search(rest))) or _labelled_old(element)


def _labelled_old(element: lxml.html.HtmlElement, words: re.Pattern[str] = _OLD_WORDS
                  ) -> bool:
    """Whether the element just before the price is a short label naming it old or a list
    price ("<span>M.R.P.:</span> <span>₹1,999</span>")."""
    before = element.getprevious()
    if before is None or not isinstance(before.tag, str) or (before.tail or "").strip():
        return False
    label = before.text_content()
    return len(label) <= 30 and not _DIGIT.search(label) and bool(words.search(label))


def labelled_regular(element: lxml.html.HtmlElement, text: str, around: str = "") -> bool:
    """Whether the price is labelled "Regular price" (in its text, the short text around it
    holding no other amount, or a label just before it): a former price only beside a
    lower current one, for themes label the price paid so when nothing is on sale."""
    if _REGULAR_WORDS.search(text):
        return True
    rest = around.replace(text, " ", 1) if text in around else ""
    return (not _DIGIT.search(rest) and bool(_REGULAR_WORDS.search(rest))) or _labelled_old(
        element, _REGULAR_WORDS)


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
