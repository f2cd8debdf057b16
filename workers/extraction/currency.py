"""Currencies as ISO 4217 codes, from what a page shows and where the page is.

Codes, symbols, territories and number formats come from babel (CLDR data):

- `resolve(found, where)`: a code or symbol as found on a page -> an ISO 4217 code.
  A code is checked against CLDR's list and redenominated codes are mapped to the
  current one (RUR -> RUB, BYR -> BYN, …). An ambiguous symbol ($, kr, ¥, Rs, £)
  is resolved by the store's configured currency, then by the page's territory
  (`<html lang>`, og:locale, the country TLD), then by the country its language is
  mostly spoken in (the declared language, else the language of the page's own words:
  "kr" on a Danish page is DKK), then by its most common use. A word that is not a
  currency is never taken for one.
- `Where`: the page's territory, language and the store's currency, read once per
  page (`where_from`), also giving the locale's decimal separator and whether the
  currency has minor units (CLP, KRW, JPY have none: "24.990" is 24990).
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from babel import Locale, UnknownLocaleError, localedata
from babel.core import get_global, parse_locale
from babel.numbers import get_currency_precision, get_territory_currencies, list_currencies

__all__ = ["Where", "resolve", "where_from"]

#: codes that were replaced by a redenomination or a new currency
REDENOMINATED = {"RUR": "RUB", "BYR": "BYN", "BYB": "BYN", "TRL": "TRY", "ROL": "RON",
                 "VEF": "VES", "VEB": "VES", "ZMK": "ZMW", "GHC": "GHS", "MRO": "MRU",
                 "STD": "STN", "MZM": "MZN", "SDD": "SDG", "AZM": "AZN", "TMM": "TMT",
                 "YUM": "RSD", "CSD": "RSD", "SRG": "SRD"}
#: local words for currencies that CLDR's symbols do not spell this way (lower case,
#: without dots and spaces)
WORDS: dict[str, frozenset[str]] = {
    "руб": frozenset({"RUB", "BYN"}), "р": frozenset({"RUB", "BYN"}),
    "рубль": frozenset({"RUB", "BYN"}), "рублей": frozenset({"RUB", "BYN"}),
    "белруб": frozenset({"BYN"}), "бр": frozenset({"BYN"}), "br": frozenset({"BYN"}),
    "тг": frozenset({"KZT"}), "тенге": frozenset({"KZT"}),
    "грн": frozenset({"UAH"}), "kn": frozenset({"HRK"}), "lei": frozenset({"RON"}),
    "leu": frozenset({"RON"}), "원": frozenset({"KRW"}), "tl": frozenset({"TRY"}),
    "fr": frozenset({"CHF"}), "sfr": frozenset({"CHF"}), "euro": frozenset({"EUR"}),
    "euros": frozenset({"EUR"}), "zl": frozenset({"PLN"}), "zł": frozenset({"PLN"}), "円": frozenset({"JPY"}),
    "元": frozenset({"CNY", "TWD"}), "kč": frozenset({"CZK"}), "ft": frozenset({"HUF"}),
    "rs": frozenset({"INR", "PKR", "LKR", "NPR", "MUR", "SCR"}),
    "₨": frozenset({"INR", "PKR", "LKR", "NPR", "MUR", "SCR"}),
    "лв": frozenset({"BGN"}), "дин": frozenset({"RSD"}), "ден": frozenset({"MKD"}),
    "сум": frozenset({"UZS"}), "сом": frozenset({"KGS"}), "ман": frozenset({"AZN"}),
    "₾": frozenset({"GEL"}), "֏": frozenset({"AMD"}), "ر.س": frozenset({"SAR"}),
    "د.إ": frozenset({"AED"}), "ج.م": frozenset({"EGP"}), "kr": frozenset(
        {"SEK", "NOK", "DKK", "ISK"}),
}
#: codes shops also write in lower case ("12 eur"); other lower-case words are words
LOWER_CODES = frozenset({"eur", "usd", "gbp", "rub", "pln", "chf", "sek", "nok", "dkk", "czk",
                         "huf", "uah", "byn", "kzt", "try", "jpy", "cny", "inr", "brl", "cad",
                         "aud", "nzd", "ron", "bgn", "ils", "mxn", "zar", "krw", "twd", "hkd"})
#: the most common reading of an ambiguous symbol when nothing about the page decides
USUAL = {"$": "USD", "£": "GBP", "¥": "JPY", "kr": "SEK", "rs": "INR", "₨": "INR",
         "руб": "RUB", "р": "RUB", "рубль": "RUB", "рублей": "RUB", "元": "CNY", "br": "BYN",
         "fr": "CHF"}
#: country TLDs used as generic names, which say nothing of the shop's country
VANITY_TLDS = frozenset({"io", "ai", "me", "tv", "cc", "co", "ly", "fm", "gg", "to", "ws",
                         "la", "sh", "ac", "vc", "nu"})
#: country TLDs that are not ISO 3166 codes
TLD_TERRITORY = {"uk": "GB", "el": "GR"}
_ISO = re.compile(r"^[A-Z]{3}$")
_LOCALE = re.compile(r"^([a-zA-Z]{2,3})(?:[-_]([a-zA-Z]{2}|\d{3}))?")


@dataclass(frozen=True)
class Where:
    """Where a page is: its territory (ISO 3166), language and the store's currency."""

    territory: str | None = None
    language: str | None = None
    hint: str | None = None
    #: the language of the page's own words (ISO 639-1), asked only when a symbol is
    #: ambiguous and nothing else decides (`workers.extraction.page_language.words_language`)
    words: Callable[[], str | None] | None = field(default=None, compare=False)

    @property
    def currencies(self) -> tuple[str, ...]:
        """The territory's current legal tenders (CLDR), most used first."""
        return _territory_currencies(self.territory) if self.territory else ()

    def language_currencies(self) -> Iterator[str]:
        """The currencies of the countries the page's declared language, then the
        language of its words, is mostly spoken in (CLDR likely subtags: da -> DK). The
        words are identified only when the declared language's did not do: the first
        identification loads py3langid's model (~75 MiB) into the process."""
        yield from _spoken_currencies(self.language)
        if self.words is not None:
            yield from _spoken_currencies(self.words())

    @property
    def default_currency(self) -> str | None:
        """The store's currency, else the territory's, else that of the country the
        declared language is mostly spoken in (for prices shown without one)."""
        if self.hint or self.currencies:
            return self.hint or self.currencies[0]
        territory = _likely_territory(self.language) if self.language else None
        spoken = _territory_currencies(territory) if territory else ()
        return spoken[0] if spoken else None

    @property
    def decimal_separator(self) -> str | None:
        """The locale's decimal separator, when the page says enough to know it."""
        return _locale_decimal(self.language, self.territory) if self.language else None


def where_from(url: str, lang: str | None = None, og_locale: str | None = None,
               hint: str | None = None) -> Where:
    """A page's `Where`: the country TLD first, then og:locale or `<html lang>` (region)."""
    language = territory = None
    host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].split(":", 1)[0].lower()
    tld = host.rsplit(".", 1)[-1]
    if len(tld) == 2 and tld.isalpha() and tld not in VANITY_TLDS:
        # the shop's country: a .by shop in Russian (ru_RU) still sells in BYN
        territory = TLD_TERRITORY.get(tld, tld.upper())
    for raw in (og_locale, lang):
        match = _LOCALE.match((raw or "").strip())
        if match:
            language = language or match.group(1).lower()
            region = match.group(2)
            if region and region.isalpha() and territory is None:
                territory = region.upper()
    code = resolve(hint.strip().upper(), Where()) if hint else None
    return Where(territory if territory and _territory_currencies(territory) else None,
                 language, code)


def resolve(found: str | None, where: Where = Where()) -> str | None:
    """The ISO 4217 code `found` (a code, symbol or local word) stands for, or None."""
    if not found:
        return None
    text = found.strip()
    if _ISO.match(text):  # a code is written in capitals: "sur" (French) is not SUR
        return _known(text)
    if text.lower() in LOWER_CODES:  # "12 eur": the common codes, also in lower case
        return text.upper()
    symbols = _symbols().get(text, frozenset())
    if text.isalpha() and len(text) <= 2:
        symbols = frozenset()  # CLDR's letter symbols (D, K, L, R…) are ordinary letters
    candidates = {*symbols, *WORDS.get(_word(text), ()), *WORDS.get(text.lower(), ())}
    candidates = {REDENOMINATED.get(c, c) for c in candidates} & _codes()
    if not candidates:
        return None
    if len(candidates) == 1:
        return str(next(iter(candidates)))
    if where.hint in candidates:
        return where.hint
    for code in where.currencies:
        if code in candidates:
            return code
    for code in where.language_currencies():
        if code in candidates:
            return code
    usual = USUAL.get(_word(text)) or USUAL.get(text)
    return usual if usual in candidates else sorted(candidates)[0]


def minor_units(code: str | None) -> int:
    """Digits after the decimal point the currency uses (2 when unknown)."""
    return int(get_currency_precision(code)) if code else 2


def _known(code: str) -> str | None:
    code = REDENOMINATED.get(code, code)
    return code if code in _codes() else None


def _word(text: str) -> str:
    return re.sub(r"[\s.]", "", text.lower())


@lru_cache(maxsize=1)
def _codes() -> frozenset[str]:
    return frozenset(list_currencies())


@lru_cache(maxsize=512)
def _territory_currencies(territory: str) -> tuple[str, ...]:
    try:
        return tuple(get_territory_currencies(territory))
    except Exception:  # noqa: BLE001 - not a territory CLDR knows
        return ()


def _spoken_currencies(language: str | None) -> tuple[str, ...]:
    territory = _likely_territory(language) if language else None
    return _territory_currencies(territory) if territory else ()


@lru_cache(maxsize=512)
def _likely_territory(language: str) -> str | None:
    """The territory a language is mostly spoken in ("da" -> "DK", "en" -> "US")."""
    likely_subtags = get_global("likely_subtags")
    parts = language.replace("-", "_").split("_")
    likely = likely_subtags.get("_".join([parts[0].lower(), *parts[1:]])) \
        or likely_subtags.get(parts[0].lower())
    territory = parse_locale(likely)[1] if likely else None
    return str(territory) if territory else None


@lru_cache(maxsize=1024)
def _locale_decimal(language: str, territory: str | None) -> str | None:
    try:
        locale = Locale.parse(f"{language}_{territory}" if territory else language)
    except (UnknownLocaleError, ValueError):
        return None
    return _decimal_symbol(str(locale))  # Locale.parse gave the identifier, loaded no data


@cache  # one entry per CLDR locale at most
def _decimal_symbol(identifier: str) -> str | None:
    """The decimal symbol (Latin digits) of the CLDR locale `identifier`, as babel's
    `get_decimal_symbol` gives it, read along the locale's inheritance from each one's
    own data file. `Locale.parse(...)`'s data would stay in babel's cache, ~1.1 MiB a
    locale, for every language and country a crawl process meets."""
    name = identifier
    while True:
        symbol = _own_data(name).get("number_symbols", {}).get("latn", {}).get("decimal")
        if symbol is not None or name == "root":
            return str(symbol) if symbol is not None else None
        name = _parent(name)


def _parent(name: str) -> str:
    """The locale `name` inherits from (babel's `localedata.load` rule: CLDR's parent
    exceptions, a script that is not the language's likely one, else one part less)."""
    parent = get_global("parent_exceptions").get(name)
    if parent:
        return str(parent)
    language, territory, script, variant, *rest = parse_locale(name)
    if script and not territory and not variant and not rest:
        likely = get_global("likely_subtags").get(language)
        if likely and script != parse_locale(likely)[2]:
            return "root"
    parts = name.split("_")
    return "root" if len(parts) == 1 else "_".join(parts[:-1])


def _own_data(identifier: str) -> dict[str, Any]:
    """One CLDR locale's own data (not merged with what it inherits), not cached."""
    with open(localedata.resolve_locale_filename(identifier), "rb") as data:
        own: dict[str, Any] = pickle.load(data)  # noqa: S301 - babel's own CLDR files
    return own


@lru_cache(maxsize=1)
def _symbols() -> dict[str, frozenset[str]]:
    """symbol -> the currencies some CLDR locale writes that way (built once, ~0.7 s).

    Each locale's own data file is read and dropped: a locale inherits its symbols from
    locales that are read too, so the union is the same as over the merged locales, while
    `Locale.parse` on every locale would keep all of CLDR in babel's cache (~200 MiB in
    every crawling process, for the first page that shows a symbol).
    """
    index: dict[str, set[str]] = {}
    for identifier in ("root", *localedata.locale_identifiers()):
        for code, symbol in _own_data(identifier).get("currency_symbols", {}).items():
            if not _ISO.match(symbol):  # a code is handled as a code
                index.setdefault(symbol, set()).add(code)
    return {symbol: frozenset(codes) for symbol, codes in index.items()}
