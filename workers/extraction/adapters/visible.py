"""What a visitor sees: the product's name, price, struck-through price and stock text.

Pages without structured data (and structured data that leaves a field out) still
show the product: a heading, a price near it and near the buy button, sometimes a
struck-through regular price, a stock line. `read_visible(tree, where)` finds them
in the document, in any language:

- the heading is the first `<h1>` outside navigation, cookie banners and footers, or
  a later `<h1>`/`<h2>` when only that one is what the page's title names (a page with
  none is named by its `<title>` when its price is beside an enabled buy control, or,
  with no buy control, is the only amount shown as a price);
- navigation, banners, footers and side sections are not read, except one holding most
  of the document (a wrapper of the page, or a tag left open before the product); a
  stray second `<html>` document is read after the first;
- every short text that reads as a price (price-parser, with the page's locale and
  currency context from `workers.extraction.currency`; a bare number takes the currency set in
  the element beside it, as in `<b>2320</b><span>元</span>`) is a candidate, scored by
  what marks it (a `price` class or id or a "Price:" label in many languages, the
  marks platforms give the product's own price: buy box, our/deal/special/final/current
  price; a currency, `itemprop=price`) and what marks it down (struck through,
  "was"/"old"/"UVP", discount badges, instalments, shipping, a bulk total, one of
  several different amounts set alike as cards are), and by how close it is to the
  heading and to the buy button;
- the best candidate is the price paid; a struck-through candidate next to it and
  above it is the regular price (`workers.extraction.adapters.visible_marks` says what is struck
  through, named old, or labelled as before tax; a price a theme's classes name
  "old" is a regular price only beside a lower current one);
- the stock line near the product, or failing that an enabled buy button, gives
  the availability (`workers.extraction.availability.from_text`); the nearest marked element
  above a stock line says whether it is about stock, and neither template text
  ("${x}") nor a message the markup hides is read.

Every candidate is kept with its score (`Visible.prices`) so `extract --explain`
can show what lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import lxml.html

from workers.extraction.adapters.page_heading import heading_holders
from workers.extraction.adapters.visible_amounts import not_a_price, with_currency_beside
from workers.extraction.adapters.visible_buy import availability, disabled, is_buy, label, usable
from workers.extraction.adapters.visible_marks import (
    CONVERTED,
    MAIN_PRICE,
    another_offer,
    before_tax,
    labelled_regular,
    marked_old_by_class,
    struck,
    unit_price,
)
from workers.extraction.adapters.visible_stock import marks as _marks  # also what marks a price
from workers.extraction.adapters.visible_stock import stock_words
from workers.extraction.caseless import Caseless
from workers.extraction.currency import Where
from workers.extraction.prices import PRICE_WORDS, Money, parse_price

__all__ = ["Candidate", "Visible", "read_visible"]

_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "select",
                        "option", "textarea"})
_NOISE_TAGS = frozenset({"nav", "footer", "aside"})
_NOISE = Caseless(r"cookie|consent|gdpr|footer|breadcrumb|newsletter|minicart|mini-cart|"
                  r"megamenu|mega-menu|navigation|navbar|sidebar|recommend|similar|related|"
                  r"carousel|upsell|cross-?sell|recently|also-?(?:bought|viewed)|"
                  r"compare-?list|wishlist|login|signin|modal|swiper|slick-(?:slider|track|list)|"
                  r"owl-(?:carousel|stage)|splide|glide__|buy-?together|bought-?together|"
                  r"frequently-?bought")
_PRICE_MARK = Caseless(r"price|preis|prix|precio|prezzo|prijs|pris|pre[cç]o|cena|cijena|"
                       r"hinta|fiyat|[цЦ]ена|[сС]тоимость|amount|buybox|buy-box|"
                       r"價|价|가격|値段|価格")
_JUNK_WORDS = re.compile(r"%|/\s*(?:mo|month|monat|mois|mes)\b|per month|x\s*\d|\d\s*x\b|"
                         r"shipping|versand|livraison|env[ií]o|spedizione|delivery|доставка|"
                         r"save|savings?\b|spare|économisez|ahorra|risparmi|rabatt|discount|скидка|"
                         r"rating|review|bewertung|stars?\b|sterne|votes?\b|approx|circa|"
                         r"ungefähr|environ|≈|~|postage|p&p|s&[sh]\b|as low as", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
#: "Price: £60", "Preis: 12,00 €", "Цена: 500 ₽": a label saying the amount is the price
_PRICE_LABEL = re.compile(rf"\s*(?:our |sale |your )?(?:{PRICE_WORDS})\s*:", re.IGNORECASE)
_BID = re.compile(r"\bbid\b|gebot|ench[eè]re|puja|offerta|licytuj|ставк", re.IGNORECASE)
#: how near (in elements) the buy control a price is in its buy box
_BUY_BOX = 40
#: how near (in elements) the buy control the price of a page without a heading is
_TITLED_BUY_BOX = 120
#: price candidates read per page
_MAX_CANDIDATES = 400
#: noise elements a page may have counted to tell a wrapper of the page (`_Noise`)
_WRAPPER_COUNTS = 8
#: a text this long is a sentence, not a price
_MAX_PRICE_TEXT = 48


@dataclass(frozen=True)
class Candidate:
    """One visible price and why it scored what it did."""

    money: Money
    text: str
    score: float
    position: int
    struck: bool
    reasons: tuple[str, ...] = ()
    #: labelled as the price before tax (`workers.extraction.adapters.visible_tax`)
    net: bool = False
    #: marked old only by a class name ("price-old"), not struck through or worded so
    marked_old: bool = False
    #: labelled by the words beside it as a used or another seller's offer
    another_offer: bool = False
    #: how it is set: its and its two parents' tags and classes, digits left out
    setting: str = field(default="", compare=False)


@dataclass(frozen=True)
class Visible:
    name: str | None = None
    price: Money | None = None
    regular: Money | None = None
    availability: str = "unknown"
    prices: tuple[Candidate, ...] = field(default_factory=tuple)
    #: the price is a current bid: the buy button places a bid and the price is beside it
    bidding: bool = False
    #: the page's buy control is disabled (not merely waiting for an option to be chosen)
    buy_disabled: bool = False
    #: what the page's own stock words say (`availability` adds the buy control's state)
    stock_words: str = "unknown"
    #: the document's `<title>`, when the page has no heading but offers one price right
    #: beside an enabled buy button (a product whose name is set in an image or a logo)
    title: str | None = None


@dataclass
class _Walk:
    """One pass over the document's visible elements, in order."""

    elements: list[lxml.html.HtmlElement] = field(default_factory=list)
    heading: int | None = None
    name: str | None = None
    buy: int | None = None
    buy_enabled: bool = False
    titled: bool = False
    headings: list[int] = field(default_factory=list)


def read_visible(tree: lxml.html.HtmlElement, where: Where) -> Visible:
    walk = _walk(tree)
    if walk.heading is None and walk.buy is None:
        # neither a heading nor a buy control outside the noise: the page may be held by
        # a noise-named wrapper or a tag left open before the product (`_Noise`)
        walk = _walk(tree, wrappers=True)
    can_buy = usable(walk.elements[walk.buy] if walk.buy is not None else None)
    words = stock_words(walk.elements, walk.heading, walk.buy)
    candidates = sorted(_below_the_buy_box(_old_beside_a_lower(_repeated(
        _candidates(walk, where))), walk.buy), key=lambda c: (-c.score, c.position))
    price = next((c for c in candidates if not c.struck and c.score > 0), None)
    regular = _regular(candidates, price)
    offered = price is not None and walk.buy is not None and walk.buy_enabled \
        and abs(price.position - walk.buy) <= 40
    return Visible(
        name=walk.name,
        price=price.money if price else None,
        regular=regular.money if regular else None,
        availability=availability(words, walk.buy, can_buy),
        stock_words=words,
        prices=tuple(candidates[:12]),
        buy_disabled=can_buy is False,
        title=_title(tree) if walk.name is None and _one_product(price, candidates, walk)
        else None,
        bidding=offered and walk.buy is not None and bool(
            _BID.search(label(walk.elements[walk.buy]))),
    )


def _one_product(price: Candidate | None, candidates: list[Candidate], walk: _Walk) -> bool:
    """Whether a page without a heading offers one product, named by its `<title>`: its
    price is in the buy box (near an enabled buy control), or, on a page with no buy
    control, it is the only amount shown as a price."""
    if price is None:
        return False
    if walk.buy is not None:
        return walk.buy_enabled and abs(price.position - walk.buy) <= _TITLED_BUY_BOX
    return sum(1 for c in candidates if c.score > 0 and not c.struck) == 1


def _title(tree: lxml.html.HtmlElement) -> str | None:
    titles = tree.xpath("//title")
    text = " ".join(titles[0].text_content().split()) if titles else ""
    return text if 2 < len(text) <= 300 else None


def _walk(tree: lxml.html.HtmlElement, wrappers: bool = False) -> _Walk:
    walk = _Walk()
    root = tree.getroottree().getroot()
    # a stray second `<html>` (a server-side include of a whole document) is parsed as a
    # sibling of the first: the page's product may be in it
    roots = [root, *root.itersiblings()]
    skipped = _Noise(sum(_count(top) for top in roots)) if wrappers else _is_noise
    own = heading_holders(tree)  # the product's section, whatever its classes say

    def noise(element: lxml.html.HtmlElement) -> bool:
        return element not in own and skipped(element)

    # depth first in document order, never entering skipped subtrees (no recursion: a
    # hostile page may nest deeper than Python's stack)
    stack = list(reversed(roots))
    while stack:
        element = stack.pop()
        if not isinstance(element.tag, str) or element.tag in _SKIP_TAGS or noise(element):
            continue
        walk.elements.append(element)
        index = len(walk.elements) - 1
        if element.tag == "h1" and (walk.heading is None or (
                not walk.titled and _TITLE.search(_marks(element)))):
            text = " ".join(element.text_content().split())
            if 2 < len(text) <= 300:
                # the first heading, or a later one marked as the product's title
                walk.heading, walk.name = index, text
                walk.titled = bool(_TITLE.search(_marks(element)))
        if element.tag in ("h1", "h2") and len(walk.headings) < 50:
            walk.headings.append(index)
        if walk.buy is None and is_buy(element):
            walk.buy = index
            walk.buy_enabled = not disabled(element)
        stack.extend(reversed(element))
    _titled_heading(walk, tree)
    return walk


def _titled_heading(walk: _Walk, tree: lxml.html.HtmlElement) -> None:
    """A page whose first `<h1>` is not what its title names (a logo, a listing's card)
    but whose `<h1>`/`<h2>` further on is: that one is the product's heading."""
    titles = tree.xpath("//meta[@property='og:title']/@content") + [
        t.text_content() for t in tree.xpath("//title")[:1]]
    said = [" ".join(str(t).split()).lower() for t in titles if t and str(t).strip()]
    if not said or (walk.name and any(walk.name.lower() in t for t in said)):
        return
    for index in walk.headings:
        text = " ".join(walk.elements[index].text_content().split())
        if len(text) >= 8 and any(text.lower() in t for t in said):
            walk.heading, walk.name = index, text
            return


def _is_noise(element: lxml.html.HtmlElement) -> bool:
    if element.tag in _NOISE_TAGS:
        return True
    marks = _marks(element)
    return bool(marks) and _NOISE.found_in(marks) and element.tag not in ("body", "html")


@dataclass
class _Noise:
    """Whether an element is navigation, a banner, a footer or a side section, and so
    not read, on a second walk of a page whose first found neither a heading nor a buy
    control: one holding most of the document is read, for it wraps the page (a sticky
    footer's "footerPush" wrapper) or holds it because a tag before the product was
    never closed (a `<nav>` left open swallows the rest of the page)."""

    elements: int
    #: how many noise elements may still be counted (a page nesting thousands of them
    #: must not cost a count each)
    counts: int = _WRAPPER_COUNTS

    def __call__(self, element: lxml.html.HtmlElement) -> bool:
        if not _is_noise(element):
            return False
        if self.counts <= 0:
            return True
        self.counts -= 1
        return _count(element, self.elements // 2) * 2 <= self.elements


def _count(element: lxml.html.HtmlElement, enough: int | None = None) -> int:
    """The elements in `element`'s subtree (counting stops past `enough`)."""
    held = 0
    for _ in element.iter():
        held += 1
        if enough is not None and held > enough:
            break
    return held


def _candidates(walk: _Walk, where: Where) -> list[Candidate]:
    found: list[Candidate] = []
    for index, element in enumerate(walk.elements):
        if len(found) >= _MAX_CANDIDATES:
            break  # a page of thousands of prices is a listing: the first ones are enough
        text = _price_text(element)
        if text is None:
            continue
        if len(_WORD.findall(text)) > 3 or not_a_price(text, where):
            continue  # a phrase, a date, a measure, a count, a model name: not a price
        text = with_currency_beside(element, text, where)
        money = parse_price(text, where.hint, where=where)
        if money is None or money.amount <= 0:
            continue
        if money.currency is None and element.get("content"):
            # itemprop=price content="253" shown as "253.0 грн": the shown currency counts
            shown = parse_price(_joined(element)[:_MAX_PRICE_TEXT], where.hint, where=where)
            if shown is not None and shown.amount == money.amount and shown.currency:
                money, text = shown, _joined(element)
        marked, around = _context(element), _own_words(element)
        if unit_price(text, marked, around):
            continue  # "$0.75 each", "1,50 € / 100 g"
        struck_through = struck(element, text, around)
        marked_old = marked_old_by_class(marked) or (
            not struck_through and labelled_regular(element, text, around))
        net = before_tax(text, around, marked)
        reasons = ["labelled as before tax"] if net else []
        score = 0.0
        said = _PRICE_MARK.found_in(marked) or element.get("itemprop") == "price"
        if said:
            score += 4
            reasons.append("marked as a price")
        elif _PRICE_LABEL.match(text) or _PRICE_LABEL.match(around):
            said = True
            score += 4
            reasons.append("labelled as the price")
        if MAIN_PRICE.search(marked):
            score += 2
            reasons.append("marked as the product's own price")
        if money.currency and _has_currency_text(text):
            score += 2
            reasons.append("shows a currency")
        elif not said:
            continue  # a bare number with nothing saying it is a price
        if _JUNK_WORDS.search(text) or CONVERTED.search(marked):
            continue  # a discount, instalment, shipping cost, rating or converted amount
        if _JUNK_WORDS.search(around):
            score -= 4
            reasons.append("discount, instalment, shipping or rating text beside it")
        score += _near(index, walk.heading, "the heading", reasons)
        score += _near(index, walk.buy, "the buy button", reasons, before_ok=True)
        if money.currency is None and where.default_currency:
            money = Money(money.amount, where.default_currency)
        found.append(Candidate(money, text, score, index, struck_through or marked_old,
                               tuple(reasons), net, marked_old and not struck_through,
                               another_offer(text, around, marked), _setting(element)))
    return found


def _setting(element: lxml.html.HtmlElement) -> str:
    parts, current = [], element
    for _ in range(3):
        if current is None:
            break
        parts.append(f"{current.tag}.{current.get('class') or ''}")
        current = current.getparent()
    return _DIGITS.sub("", " ".join(parts))


def _repeated(candidates: list[Candidate]) -> list[Candidate]:
    """Prices set alike (same tags and classes) with `_REPEATS` or more different amounts
    are a listing's or recommendations' cards, not the product's own price: -3."""
    amounts: dict[str, set[object]] = {}
    for c in candidates:
        amounts.setdefault(c.setting, set()).add(c.money.amount)
    return [replace(c, score=c.score - 3, reasons=(
        *c.reasons, f"one of {len(amounts[c.setting])} different prices set alike (cards)"))
        if len(amounts[c.setting]) >= _REPEATS else c for c in candidates]


def _old_beside_a_lower(candidates: list[Candidate]) -> list[Candidate]:
    """A price a theme's class names "old" is a regular price only beside a lower
    current one; alone (or beside only prices before tax), its class means nothing."""
    current = [c for c in candidates if not c.struck and not c.net]
    return [replace(c, struck=False, reasons=(*c.reasons, "named old, no lower price beside"))
            if c.marked_old and not any(
                abs(d.position - c.position) <= 40 and d.money.amount < c.money.amount
                and d.money.currency == c.money.currency for d in current) else c
            for c in candidates]


def _below_the_buy_box(candidates: list[Candidate], buy: int | None) -> list[Candidate]:
    """A used or another seller's offer loses to the price beside the buy control (the
    buy box); on a page with no such price it is what a buyer can pay, and stays."""
    boxed = buy is not None and any(
        not c.another_offer and not c.struck and abs(c.position - buy) <= _BUY_BOX
        for c in candidates)
    return [replace(c, score=c.score - 4, reasons=(
        *c.reasons, "labelled as a used or another seller's offer, beside a buy box price"))
        if boxed and c.another_offer else c for c in candidates]


def _near(index: int, anchor: int | None, what: str, reasons: list[str],
          before_ok: bool = False) -> float:
    if anchor is None:
        return 0.0
    distance = index - anchor
    if distance < 0 and not before_ok:
        return -1.0 if distance > -400 else -2.0
    distance = abs(distance)
    for limit, points in ((40, 3.0), (120, 2.0), (400, 1.0)):
        if distance <= limit:
            reasons.append(f"within {limit} elements of {what}")
            return points
    return 0.0


def _price_text(element: lxml.html.HtmlElement) -> str | None:
    """The element's text when it is short, holds a digit and no single child holds it all."""
    own = element.text or ""
    if element.get("content") and element.get("itemprop") == "price":
        return str(element.get("content"))
    if len(element) > 6:
        return None
    # cheap first: a price has a digit in the element's own text or its children's
    if not _DIGIT.search(own) and not any(
            _DIGIT.search((child.text or "") + (child.tail or "")) for child in element
            if isinstance(child.tag, str)):
        return None
    text = _joined(element)
    if not text or len(text) > _MAX_PRICE_TEXT or not _DIGIT.search(text):
        return None
    numbers = _NUMBER.findall(text)
    if len(numbers) == 2 and numbers[0].strip() == numbers[1].strip():
        text = text[:text.index(numbers[1], len(numbers[0]))].strip()  # "1679 1679": shown twice
    elif len(numbers) > 1 and any(
            isinstance(child.tag, str) and _DIGIT.search(child.text_content())
            for child in element):
        return None  # several prices in children: each child is a candidate of its own
    if not _DIGIT.search(own) and len(element) == 1:
        child = element[0]
        if isinstance(child.tag, str) and " ".join(" ".join(child.itertext()).split()) == text:
            return None  # the child is the price element
    return text


def _joined(element: lxml.html.HtmlElement) -> str:
    """The element's text; cents set as a superscript ("$229<sup>99</sup>") join as "229.99"."""
    parts = [element.text or ""]
    for child in element:
        if not isinstance(child.tag, str):
            parts.append(child.tail or "")
            continue
        inner = " ".join(" ".join(child.itertext()).split())
        cents = child.tag in ("sup", "sub", "small") or _CENT_MARK.search(_marks(child))
        if cents and _CENTS.fullmatch(inner) and _DIGIT.search("".join(parts)[-1:] or ""):
            parts.append("." + inner)
        else:
            parts.append(" " + inner)
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())


def _context(element: lxml.html.HtmlElement, levels: int = 3) -> str:
    marks = []
    current: lxml.html.HtmlElement | None = element
    for _ in range(levels + 1):
        if current is None:
            break
        marks.append(_marks(current))
        current = current.getparent()
    return " ".join(marks)


def _own_words(element: lxml.html.HtmlElement) -> str:
    parent = element.getparent()
    if parent is None or len(parent) > 8:
        return ""
    text = " ".join(" ".join(parent.itertext()).split())
    return text if len(text) <= 80 else ""


_CENTS = re.compile(r"\d{2}")
_DIGITS = re.compile(r"\d+")
#: different amounts set alike that make a listing's cards (`_repeated`)
_REPEATS = 3
_CENT_MARK = re.compile(r"cent|fraction|decimal|sup|small", re.IGNORECASE)
_NUMBER = re.compile(r"\d[\d\s.,']*")
_TITLE = re.compile(r"title|name|product", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}")
_CURRENCY_TEXT = re.compile(r"[^\d\s.,\-–—:;()/+]")


def _has_currency_text(text: str) -> bool:
    return bool(_CURRENCY_TEXT.search(text))


def _regular(candidates: list[Candidate], price: Candidate | None) -> Candidate | None:
    if price is None:
        return None
    near = [c for c in candidates if c.struck and abs(c.position - price.position) <= 40
            and c.money.amount > price.money.amount
            and c.money.currency in (None, price.money.currency)]
    return min(near, key=lambda c: abs(c.position - price.position)) if near else None
