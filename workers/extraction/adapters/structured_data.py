"""Structured data of an HTML page: JSON-LD, microdata, RDFa and OpenGraph.

Each syntax is read on its own, so one broken block (invalid JSON-LD, RDFa
the parser chokes on) never hides the others. Sections that are visibly
"related products" are cut out first: their items must never be mistaken for
the page's own product.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import lxml.etree
import lxml.html

from workers.extraction.adapters.page_heading import heading_holders
from workers.extraction.adapters.rdfa import flatten_rdfa
from workers.extraction.adapters.schema_product import type_name
from workers.extraction.caseless import Caseless

__all__ = [
    "PageData", "parse_html", "read_head_data", "with_embedded_markup",
]

#: class/id words that mark a block of other products (recommendations).
_RELATED = Caseless(
    r"related|similar|recommend|upsell|up-sell|cross-?sell|also-?(bought|viewed|like)"
    r"|you-may-(also-)?like|recently-viewed")
_KEEP_TAGS = {"html", "body", "main", "head"}
#: every class and id value of the tree's elements, in document order (each value knows
#: its element: `getparent()`)
_NAMES = lxml.etree.XPath("descendant-or-self::*/@class | descendant-or-self::*/@id")
_XML_SPACE = re.compile(r"[ \t\r\n]+")
#: lxml.html's parser, but each element's class picked in C: lxml.html's own lookup is a
#: Python call for every element a walk touches (it picks form-control classes, which
#: nothing here uses): ~3 % of a crawl's time under cProfile went to it
_PARSER = lxml.html.HTMLParser()
_PARSER.set_element_class_lookup(lxml.etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction, entity=lxml.html.HtmlEntity))


@dataclass(frozen=True)
class PageData:
    jsonld: tuple[dict[str, Any], ...] = ()
    microdata: tuple[dict[str, Any], ...] = ()
    rdfa: tuple[dict[str, Any], ...] = ()
    opengraph: dict[str, str] = field(default_factory=dict)
    canonical: str | None = None
    #: every `priceCurrency` code the JSON-LD blocks declare, anywhere in them
    declared_currencies: frozenset[str] = frozenset()
    #: the language `<meta http-equiv="content-language">` declares ("da-DK")
    content_language: str | None = None


#: `"priceCurrency": "EUR"` as JSON writes it (a key never needs escapes)
_DECLARED_CURRENCY = re.compile(r'"priceCurrency"\s*:\s*"\s*([A-Z]{3})\s*"')


def parse_html(text: str) -> lxml.html.HtmlElement | None:
    """An lxml tree, or None when there is no markup to speak of."""
    # lxml refuses str input that carries its own encoding declaration.
    cleaned = re.sub(r"^\s*<\?xml[^>]*>", "", text.replace("\x00", ""))
    if not cleaned.strip():
        return None
    try:
        return lxml.html.fromstring(cleaned, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return None


def read_head_data(tree: lxml.html.HtmlElement) -> PageData:
    """JSON-LD, OpenGraph and the canonical link: the cheap part of a page's structured
    data (`with_embedded_markup` adds microdata and RDFa).

    Cuts the related sections out of `tree` first.
    """
    _drop_related_sections(tree)
    # one walk of the document for the three (what `//script`, `//meta` and `//link`
    # from `tree` would find, in document order)
    scripts: list[lxml.html.HtmlElement] = []
    metas: list[lxml.html.HtmlElement] = []
    links: list[lxml.html.HtmlElement] = []
    by_tag = {"script": scripts, "meta": metas, "link": links}
    for element in tree.getroottree().getroot().iter("script", "meta", "link"):
        by_tag[element.tag].append(element)
    jsonld, declared = _jsonld(scripts)
    return PageData(jsonld=tuple(jsonld), opengraph=_opengraph(metas),
                    canonical=_canonical(links), declared_currencies=declared,
                    content_language=_content_language(metas))


def with_embedded_markup(data: PageData, tree: lxml.html.HtmlElement, url: str,
                         types: Iterable[str]) -> PageData:
    """`data` plus the page's microdata and RDFa (extruct: ~90 % of a page's extraction)
    when the page's markup names one of `types` (schema.org type names, such as
    "Product"): an item is typed only by its `itemtype` or `typeof`, so a page whose
    markup names none of them has no such item, and the (slow) parsers are skipped.
    RDFa builds a whole rdflib graph (~0.5 s on a large page), and real shops often
    carry RDFa or microdata for their breadcrumbs only."""
    wanted = {name.lower() for name in types}
    rdfa = (_extruct(lxml.html.tostring(tree, encoding="unicode"), "rdfa", url)
            if _names_one(_TYPEOF(tree), wanted) else [])
    microdata = _extruct(tree, "microdata", url) if _names_one(_ITEMTYPE(tree), wanted) else []
    return replace(data, microdata=tuple(microdata), rdfa=tuple(flatten_rdfa(rdfa)))


_TYPEOF = lxml.etree.XPath("//@typeof")
_ITEMTYPE = lxml.etree.XPath("//*[@itemscope]/@itemtype")


def _names_one(values: list[str], wanted: set[str]) -> bool:
    """Whether a type in `values` (space-separated IRIs, CURIEs or terms) is in `wanted`
    (lower-case names, compared as `schema_product.is_type` compares them)."""
    return any(type_name(token) in wanted for value in values for token in value.split())


def _drop_related_sections(tree: lxml.html.HtmlElement) -> None:
    """Cut out every element whose class or id `_RELATED` matches (ignoring case).

    Only elements with a class or id can be marked; their values come from one
    XPath and each is searched on its own, which equals searching "class id"
    (the pattern has no space). An EXSLT `re:test` in the XPath, calling back
    into Python per element, took ~2.4× as long on the crawl bench's pages and
    ~1.1× on the corpus's real pages (~1,600 class and id values a page). An element
    holding the product's heading is the product's own section and stays."""
    found_in = _RELATED.found_in
    marked = dict.fromkeys(value.getparent() for value in _NAMES(tree) if found_in(value))
    # the product's own section, whatever its classes say (`page_heading`)
    own = heading_holders(tree) if marked else frozenset()
    for element in marked:
        if element.tag in _KEEP_TAGS or element in own:
            continue
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)


def _jsonld(scripts: list[lxml.html.HtmlElement]
           ) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """The JSON-LD blocks' items, and the `priceCurrency` codes they declare (read off
    the blocks' text: walking the parsed items cost ~90 µs a page)."""
    items: list[dict[str, Any]] = []
    declared: set[str] = set()
    for script in scripts:
        if "ld+json" not in script.get("type", ""):  # contains(@type, "ld+json")
            continue
        text = script.text_content() or ""
        try:
            data = json.loads(text, parse_float=Decimal, strict=False)
        except (ValueError, RecursionError):
            continue  # a broken block: the rest of the page may still be fine
        declared.update(_DECLARED_CURRENCY.findall(text))
        items.extend(
            item for item in (data if isinstance(data, list) else [data]) if isinstance(item, dict)
        )
    return items, frozenset(declared)


def _extruct(document: Any, syntax: str, url: str) -> list[dict[str, Any]]:
    # imported on the first page that has microdata or RDFa: extruct brings rdflib,
    # html5lib, mf2py and requests (~30 MiB of a worker's RSS), which pages whose
    # JSON-LD says everything never need
    import extruct

    # extruct and rdflib emit deprecation/parse warnings on odd markup, and pytest
    # runs with warnings as errors; here they are noise about third-party code.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = extruct.extract(document, base_url=url, syntaxes=[syntax], uniform=True)
        except Exception:  # noqa: BLE001 - a parser failing on hostile markup is "no items"
            return []
    return [item for item in found.get(syntax, []) if isinstance(item, dict)]


def _opengraph(metas: list[lxml.html.HtmlElement]) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in metas:
        if meta.get("property") is None and meta.get("name") is None:
            continue
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        content = meta.get("content")
        if key.startswith(("og:", "product:", "twitter:")) and content and key not in found:
            found[key] = content.strip()
    return found


def _content_language(metas: list[lxml.html.HtmlElement]) -> str | None:
    for meta in metas:
        if (meta.get("http-equiv") or "").strip().lower() == "content-language":
            return (meta.get("content") or "").strip() or None
    return None


def _canonical(links: list[lxml.html.HtmlElement]) -> str | None:
    # the first <link> whose rel has the token "canonical" and that has an href (XPath's
    # normalize-space splits on XML whitespace only)
    for link in links:
        href = link.get("href")
        if href is not None and "canonical" in _XML_SPACE.split(link.get("rel", "")):
            return str(href).strip()
    return None
