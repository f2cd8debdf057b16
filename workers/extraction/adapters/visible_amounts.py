"""Which short texts of a page read as an amount (`workers.extraction.adapters.visible`).

A date, a measure ("500 ml", "/100 g"), a count in brackets, a model name glued to
digits ("MP3", "3D") or an option's signed difference ("(+5,00 €)") is no price;
a bare number takes the currency set in the element beside it.
"""

from __future__ import annotations

import re

import lxml.html

from workers.extraction.currency import Where, resolve

__all__ = ["not_a_price", "with_currency_beside"]

_DATE = re.compile(r"\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}|\d{1,2}:\d{2}")
_MEASURE = re.compile(r"\d\s*(?:cm|mm|m|km|kg|g|mg|ml|cl|l|oz|lb|lbs|in|inch|gb|tb|mb|mah|"
                      r"w|kw|v|hz|mp|px|x|pcs|pc|stk|шт|см|мм|кг|г|мл|л)\b|per\s+\d|"
                      r"/\s*\d*\s*(?:kg|g|ml|l|m|100)\b", re.IGNORECASE)
_BRACKETED = re.compile(r"\(\s*[\d\s.,]+\s*\)")
_GLUED = re.compile(r"[^\W\d_]+\d[\w]*|\d+[^\W\d_]+")
_SIGNED = re.compile(r"(?:^|\()\s*[+\-−]\s*[^\w\s]{0,3}\s*\d")
_BARE = re.compile(r"\d[\d\s.,']*")
_DIGIT = re.compile(r"\d")


def with_currency_beside(element: lxml.html.HtmlElement, text: str, where: Where) -> str:
    """`text` with the currency set in the element beside it when it is a bare number
    (`<b>2320</b><span>元</span>`, `<i>€</i><b>19.99</b>`); else `text` unchanged."""
    if not _BARE.fullmatch(text):
        return text
    if element.tag in ("sup", "sub"):
        return text  # the cents of the number before it
    after = element.tail if (element.tail or "").strip() else None
    if after is None:
        following = element.getnext()
        after = following.text_content() if following is not None and isinstance(
            following.tag, str) else None
    before = element.getprevious()
    if before is not None:
        ahead = (before.tail or "").strip() or (
            before.text_content() if isinstance(before.tag, str) else "")
    else:
        parent = element.getparent()
        ahead = (parent.text or "") if parent is not None else ""
    for beside, ordered in ((after, "{0} {1}"), (ahead, "{1} {0}")):
        token = (beside or "").strip()
        if 0 < len(token) <= 4 and not _DIGIT.search(token) and resolve(token, where):
            return ordered.format(text, token)
    return text


def not_a_price(text: str, where: Where) -> bool:
    """A date, a measure, a count in brackets, a model name ("3D", "MP3") or an option's
    signed difference ("(+5,00 €)", "-40.00€") is no price."""
    if _DATE.search(text) or _MEASURE.search(text) or _BRACKETED.fullmatch(text) or \
            _SIGNED.search(text):
        return True
    for glued in _GLUED.findall(text):
        letters = "".join(ch for ch in glued if not ch.isdigit())
        if resolve(letters, where) is None:
            return True
    return False
