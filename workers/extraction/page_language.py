"""The language a page is written in: what its markup declares, else its own words.

`declared_language(...)` reads `<html lang>`, og:locale and the Content-Language meta;
`words_language(tree)` identifies the language of the page's visible words with
py3langid (a model shipped inside the package, deterministic, well under a millisecond
a page once loaded). The language decides what an ambiguous currency symbol means when
neither the URL nor the store says where the shop is ("kr" on a Danish page is DKK,
`workers.extraction.currency.Where.language_currencies`) and how numbers are written.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import lxml.html

__all__ = ["declared_language", "words_language"]

#: enough of a page's words to tell its language
_SAMPLE_CHARS = 1500
#: fewer letters than this say nothing reliable
_MIN_LETTERS = 40
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "select",
                   "option", "textarea"})
_LOCALE = re.compile(r"^\s*([a-zA-Z]{2,3})(?:[-_]([a-zA-Z]{2}))?\b")
_LETTER = re.compile(r"[^\W\d_]")
#: common characters Traditional and Simplified Chinese write differently, pairwise
_TRADITIONAL = "價購車貨會買與這們個為說時來頁網運費單號關開實點選產將東長現電發經"
_SIMPLIFIED = "价购车货会买与这们个为说时来页网运费单号关开实点选产将东长现电发经"


def declared_language(*declared: str | None) -> str | None:
    """The first of `declared` (lang, og:locale, Content-Language: "da-DK", "sv_SE",
    "nb") that names a language, as given (with its region when it has one)."""
    for value in declared:
        if value and _LOCALE.match(value.split(",")[0]):
            return value.split(",")[0].strip()
    return None


def words_language(tree: lxml.html.HtmlElement) -> str | None:
    """The ISO 639-1 language of the page's visible words, or None when it shows too
    few of them to tell."""
    sample = _sample(tree)
    if len(_LETTER.findall(sample)) < _MIN_LETTERS:
        return None
    language, _ = _identifier().classify(sample)
    if language in ("zh", "yue") and _traditional(sample):
        return "zh_Hant"  # written in Traditional characters: Taiwan's, not China's
    return str(language)


def _traditional(sample: str) -> bool:
    """Whether Chinese text is written in Traditional rather than Simplified characters
    (by the common characters the two write differently)."""
    traditional = sum(sample.count(ch) for ch in _TRADITIONAL)
    return traditional > sum(sample.count(ch) for ch in _SIMPLIFIED)


def _sample(tree: lxml.html.HtmlElement) -> str:
    """The first words of the title and the body, skipping scripts and styles."""
    parts: list[str] = [t.text_content() for t in tree.iter("title")][:1]
    size = len(parts[0]) if parts else 0
    for body in tree.iter("body"):
        for element in body.iter():
            if size >= _SAMPLE_CHARS:
                break
            if not isinstance(element.tag, str) or element.tag in _SKIP:
                continue
            for text in (element.text,) + ((element.tail,) if element is not body else ()):
                if text and text.strip():
                    parts.append(text.strip())
                    size += len(text)
        break
    return " ".join(parts)[:_SAMPLE_CHARS * 2]


@lru_cache(maxsize=1)
def _identifier() -> Any:
    # imported and loaded (~1 s, once a process) only for a page that needs it
    import py3langid

    return py3langid
