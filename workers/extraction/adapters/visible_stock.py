"""The stock line of a product page, as a visitor reads it (`workers.extraction.adapters.visible`).

A line whose words say in or out of stock (`workers.extraction.availability.from_text`, many
languages) counts when it is about this product: near its heading or buy button,
not template text ("${x}") or a message the markup hides, and not inside an element
marked as something else (images, delivery, in-store pickup, sizes, features); one
inside an element marked as the availability wins.
"""

from __future__ import annotations

import re

import lxml.html

from workers.extraction.availability import from_text
from workers.extraction.caseless import Caseless

__all__ = ["hidden", "marks", "stock_words"]


def marks(element: lxml.html.HtmlElement) -> str:
    """What the markup says an element is: its class, id, itemprop and test id."""
    return " ".join(filter(None, (element.get("class"), element.get("id"),
                                  element.get("itemprop"), element.get("data-testid"))))


def stock_words(elements: list[lxml.html.HtmlElement], heading: int | None,
                buy: int | None) -> str:
    """The availability the page's own words about this product say (`elements` are the
    page's visible elements in order; `heading` and `buy` index the product's heading
    and buy button): a line in an element marked as the availability beats one that is
    merely nearest to the buy button or heading; without one, the buy control's label
    ("Pre-order", "Sold out")."""
    anchors = [a for a in (heading, buy) if a is not None]
    if not anchors:
        return "unknown"
    start, end = max(min(anchors) - 300, 0), max(anchors) + 600
    # the buy control's own words are its labels (read below, as the control's)
    control = elements[buy] if buy is not None else None
    said: list[tuple[bool, int, str]] = []
    for index, element in enumerate(elements[start:end], start):
        text = " ".join((element.text or "").split())
        if not 2 < len(text) <= 120 or _NOT_ABOUT_STOCK.found_in(text):
            continue
        found = from_text(text)
        if found != "unknown":
            if control is not None and any(a is control for a in element.iterancestors()):
                continue
            if _TEMPLATE.search(text) or hidden(element):
                continue  # an unrendered template's words ("${name} not available"), or
                # a message the page keeps hidden until a script shows it
            mark = _stock_mark(element)
            if mark == "other":
                continue
            marked = mark == "stock"
            if not marked and index < min(anchors) - 20:
                continue  # above the product, unmarked: the header's or a menu's words
            said.append((not marked, min(abs(index - a) for a in anchors), found))
    if said:
        return min(said)[2]
    return (_control_says(elements[buy]) if buy is not None else None) or "unknown"


def _control_says(control: lxml.html.HtmlElement) -> str | None:
    """What the buy control's label says about stock. A control holding several labels
    ("do koszyka", "Sprawdź dostępność w sklepie", "Produkt niedostępny") shows one of them
    by the page's styles, which the page's bytes do not settle: it says nothing."""
    labels = [e for e in control.iterdescendants() if isinstance(e.tag, str)
              and not hidden(e) and (e.text or "").strip()]
    if len(labels) > 1:
        return None
    label = " ".join(filter(None, (control.text_content() if control.tag != "input" else "",
                                   control.get("value"), control.get("aria-label"))))
    found = from_text(label[:120])
    return found if found in ("preorder", "backorder", "out_of_stock") else None


def _stock_mark(element: lxml.html.HtmlElement, levels: int = 3) -> str | None:
    """What the nearest marked element at or above `element` says the text is about:
    "stock" (an availability box), "other" (an image, delivery options, a feature
    list…) or None. The nearest marking decides: a stock line inside an
    availability box inside a feature container is about stock."""
    current: lxml.html.HtmlElement | None = element
    for _ in range(levels + 1):
        if current is None:
            break
        found = marks(current)
        if _NOT_ABOUT_STOCK_MARKS.found_in(found):
            return "other"
        if _STOCK_MARK.found_in(found):
            return "stock"
        current = current.getparent()
    return None


def hidden(element: lxml.html.HtmlElement) -> bool:
    """Whether the markup hides the element or one of its ancestors: the `hidden`
    attribute, an inline `display: none` / `visibility: hidden`, or a hiding class
    ("hidden", "is-hidden", "d-none", "x-hidden"; not "overflow-hidden" or
    "visually-hidden", not a responsive "hidden md:block")."""
    current: lxml.html.HtmlElement | None = element
    while current is not None:
        if current.get("hidden") is not None or _HIDING_STYLE.search(current.get("style") or ""):
            return True
        tokens = (current.get("class") or "").split()
        if any(_HIDING_CLASS.fullmatch(t) for t in tokens) and not any(":" in t for t in tokens):
            return True
        current = current.getparent()
    return False


_HIDING_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_HIDING_CLASS = re.compile(r"hidden|hide|d-none|invisible|is-hidden|(?!overflow-|visually-)[a-z]+-hidden",
                           re.IGNORECASE)
#: text of a client-side template, never shown as such ("${x}", "{{x}}", "<%= x %>")
_TEMPLATE = re.compile(r"\$\{|\{\{|<%")
#: stock words about something else than the product itself
_NOT_ABOUT_STOCK = Caseless(
    r"image|immagine|imagen|imagem|bild|photo|foto|video|in-?store|store availability|"
    r"click ?& ?collect|collect|delivery|lieferung|livraison|let you know|notify|"
    r"benachrichtig|alert me|email me|e-mail|size|taglia|talla|gr[öo]ße|farbe|colou?r")
_NOT_ABOUT_STOCK_MARKS = Caseless(r"image|photo|video|deliver|shipping|in-?store|collect|"
                                  r"notify|swatch|store-?locator|pickup|spec|feature|"
                                  r"attribute|param|(?<![\w-])(?:size|sizes|variant|option)(?![\w-])")
_STOCK_MARK = Caseless(r"avail|stock|lager|dispon|inventory|наличи|sklad|magazyn|zapas")
