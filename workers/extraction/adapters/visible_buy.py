"""The product's buy control, as a visitor meets it (`workers.extraction.adapters.visible`).

The buy control is the first button, submit input or link whose label says "add to
cart" in one of many languages (or "pre-order", "place bid"). Whether it can be used
is part of what the page says about stock: enabled, the product can be bought; disabled
(the attribute, `aria-disabled`, a "disabled" class), it cannot, unless the page asks
for an option first (a `<select>`, radio buttons or swatches near it): such a control is
enabled by a script once a size or colour is chosen, and says nothing about stock.
"""

from __future__ import annotations

import re

import lxml.html

from workers.extraction.adapters.visible_stock import marks
from workers.extraction.caseless import Caseless

__all__ = ["availability", "disabled", "is_buy", "is_picker", "label", "usable"]

_BUY = Caseless(r"add[ -]?to[ -]?(?:cart|basket|bag|trolley)|addtocart|add-to-cart|buy[ -]?now|"
                r"in den (?:warenkorb|einkaufswagen)|warenkorb|ajouter au panier|"
                r"a[ñn]adir al carrito|agregar al carrito|aggiungi al carrello|"
                r"in winkelwagen|dodaj do koszyka|do koszyka|в корзину|купить|"
                r"до кошика|sepete ekle|kosárba|do košíku|lägg i varukorgen|"
                r"læg i kurv|legg i handlekurven|lisää ostoskoriin|"
                r"カートに入れる|加入購物車|加入购物车|장바구니|comprar|kaufen|"
                r"adicionar ao carrinho|bid now|place bid|pre-?order|vorbestellen|précommander|"
                r"back-?order now")
_CART = Caseless(r"cart|basket|trolley|korb|panier|carrito|carrello|winkelwagen|koszyk|"
                 r"košík|kosár|varukorg|kurv|ostoskori|sepet|корзин|кошик|carrinho")
_DIGIT = re.compile(r"\d")
#: a buy control disabled until an option is chosen (WooCommerce's variable products)
_CHOOSE_FIRST = Caseless(r"selection|select|choose|variation|option")
#: the marks of swatches and option lists a product page asks to choose from
_PICKER = Caseless(r"swatch|size|variant|variation|option|attribute")
#: how many levels above the buy control the product area it gates may begin
_PICKER_LEVELS = 5


def availability(words: str, buy: int | None, usable: bool | None) -> str:
    """The stock words' verdict; without one, an enabled buy control says in stock and a
    disabled one out of stock (one disabled until an option is chosen says nothing)."""
    if words != "unknown" or buy is None or usable is None:
        return words
    return "in_stock" if usable else "out_of_stock"


def usable(control: lxml.html.HtmlElement | None) -> bool | None:
    """Whether the buy control can be used: True when there is none to say otherwise,
    None when it is disabled while the product area around it asks for an option first
    (a script enables it once a size or colour is chosen)."""
    if control is None or not disabled(control):
        return True
    scope = control
    for _ in range(_PICKER_LEVELS):
        parent = scope.getparent()
        if parent is None or parent.tag == "html":
            break
        scope = parent
    return None if any(is_picker(e) for e in scope.iter() if isinstance(e.tag, str)) else False


def is_picker(element: lxml.html.HtmlElement) -> bool:
    """Whether `element` lets a buyer choose an option (a size, a colour)."""
    if element.tag == "select":
        return True
    if element.tag == "input":
        return str(element.get("type", "")).lower() == "radio"
    return bool(_PICKER.found_in(element.get("class") or ""))


def disabled(element: lxml.html.HtmlElement) -> bool:
    """Whether a buy control is disabled (attribute, aria-disabled or a "disabled" class),
    not merely waiting for a size or colour to be chosen."""
    said = element.get("disabled") is not None or (
        element.get("aria-disabled") or "").strip().lower() == "true" or any(
        "disabled" in token for token in (element.get("class") or "").lower().split())
    return said and not _CHOOSE_FIRST.found_in(marks(element))


def is_buy(element: lxml.html.HtmlElement) -> bool:
    """Whether `element` is a control that puts the product in the cart."""
    if element.tag not in ("button", "input", "a", "img"):
        return False
    if element.tag == "input" and element.get("type", "").lower() not in ("submit", "button",
                                                                         "image"):
        return False
    said = label(element)
    if _BUY.found_in(said):
        return True
    # "Do košíka", "In den Korb": a cart word on a real button (not a header cart link)
    return element.tag in ("button", "input") and _CART.found_in(said) \
        and not _DIGIT.search(element.text_content() if element.tag != "input" else "")


def label(element: lxml.html.HtmlElement) -> str:
    """What a control says it does: its text, value, title, alt, aria-label and marks."""
    text = element.text_content() if element.tag not in ("input", "img") else ""
    return " ".join(filter(None, (text, element.get("value"), element.get("title"),
                                  element.get("alt"), element.get("aria-label"),
                                  marks(element), element.get("name"),
                                  element.get("data-test"))))[:300]
