"""schema.org availability values and platform flags -> the ledger vocabulary.

The result is always one of `domain.values.AVAILABILITIES`; anything we do
not recognise is "unknown" rather than a guess.
"""

from __future__ import annotations

import re

from domain.values import AVAILABILITIES

__all__ = ["from_flag", "from_text", "to_availability"]

_MAP: dict[str, str] = {
    "instock": "in_stock",
    "onlineonly": "in_stock",
    "instoreonly": "in_stock",
    "available": "in_stock",
    "outofstock": "out_of_stock",
    "soldout": "out_of_stock",
    "oos": "out_of_stock",
    "unavailable": "out_of_stock",
    "preorder": "preorder",
    "presale": "preorder",
    "backorder": "backorder",
    "availablefororder": "backorder",  # OpenGraph's word for "orderable, not on hand"
    "discontinued": "discontinued",
    "limitedavailability": "limited",
    "limited": "limited",
}
_NOT_ALNUM = re.compile(r"[^a-z]")


def to_availability(value: object) -> str:
    """Map "https://schema.org/InStock", "InStock", "in stock", True… to the vocabulary."""
    if isinstance(value, bool):
        return from_flag(value)
    if isinstance(value, (list, tuple)):
        return next((a for a in map(to_availability, value) if a != "unknown"), "unknown")
    if not isinstance(value, str):
        return "unknown"
    text = value.strip().lower()
    if text in AVAILABILITIES:
        return text
    # The last path segment covers http(s)://schema.org/X and schema:X alike.
    tail = text.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return _MAP.get(_NOT_ALNUM.sub("", tail), "unknown")


def from_flag(in_stock: bool | None) -> str:
    """A platform's boolean stock flag; None means the platform did not say."""
    if in_stock is None:
        return "unknown"
    return "in_stock" if in_stock else "out_of_stock"


#: stock lines as shops write them, in the languages of the shops we crawl; the
#: negative forms come first ("nicht auf Lager" must not read as "auf Lager")
_OUT_OF_STOCK = re.compile(
    r"out of stock|sold out|currently unavailable|no longer available|not available|"
    r"unavailable|temporarily out|ausverkauft|nicht (?:auf lager|verfügbar|lieferbar|vorrätig)|"
    r"derzeit nicht|vergriffen|épuisé|epuise|rupture de stock|indisponible|"
    r"plus disponible|agotado|sin stock|no disponible|sin existencias|esaurito|"
    r"non disponibile|esgotado|indisponível|uitverkocht|niet (?:op voorraad|leverbaar)|"
    r"brak w magazynie|niedostępny|wyprzedany|vyprodáno|není skladem|nedostupné|"
    r"нет в наличии|отсутствует|распродано|закончился|немає в наявності|"
    r"slutsåld|ej i lager|udsolgt|ikke på lager|utsolgt|loppu|stokta yok|tükendi|"
    r"elfogyott|nincs készleten|品切れ|在庫なし|售完|缺貨|缺货|已售完|품절|재고 ?없음|"
    r"nicht mehr (?:erhältlich|verfügbar|lieferbar|vorrätig)|nicht erhältlich|"
    r"non disponible|non (?:è )?più disponibile|fuera de stock|fora de estoque|sem estoque|"
    r"niet (?:meer )?(?:beschikbaar|verkrijgbaar|leverbaar)|nie je skladom|vypredan|"
    r"nedostupn|brak towaru|tillfälligt slut|slut i lager|ei varastossa|loppuunmyyty|"
    r"нет на складе|товар закончился|відсутн|закінчився|изчерпан|няма наличност|"
    r"εξαντλήθηκε|μη διαθέσιμ|stoc epuizat|indisponibil|nu este [iî]n stoc|"
    r"nije dostupn|rasprodan|ni na zalogi|nėra sandėlyje|nav noliktavā|ei ole laos|"
    r"ni dobavljiv|nedobavljiv|אזל מהמלאי|לא במלאי|غير متوفر|نفذت|売り切れ|在庫切れ|售罄|无货|"
    r"無貨",
    re.IGNORECASE)
_IN_STOCK = re.compile(
    r"\bin stock\b|available now|ready to ship|ships? (?:today|tomorrow|in)|"
    r"auf lager|sofort (?:lieferbar|verfügbar)|lieferbar|verfügbar|vorrätig|en stock|"
    r"disponible|en existencia|disponibile|in magazzino|disponível|em estoque|"
    r"op voorraad|leverbaar|dostępny|w magazynie|skladem|на складе|в наличии|"
    r"есть в наличии|в наявності|i lager|på lager|varastossa|stokta var|készleten|"
    r"在庫あり|有現貨|有货|现货|재고 ?있음|"
    r"σε απόθεμα|διαθέσιμο|[iî]n stoc|na zalogi|na stanju|dobavljivo|yra sandėlyje|"
    r"noliktavā|(?<!\w)laos(?!\w)|в наличност|במלאי|متوفر",
    re.IGNORECASE)
_PREORDER = re.compile(
    r"pre-?order|pre order|vorbestell|précommande|précommander|preordina|pre-?venta|"
    r"en preventa|pré-?venda|przedsprzedaż|предзаказ|предварительный заказ|передзамовлення|"
    r"förhandsbok|forhåndsbestill|forudbestil|ennakkotilaus|予約受付|予約商品|預購|预购|预售|"
    r"예약 ?판매|ön sipariş",
    re.IGNORECASE)
#: orderable now, shipped when the shop has it again (not the same as sold out)
_BACKORDER = re.compile(
    r"back-?order|back order|available (?:to|for|on) order|special order|"
    r"nachbestellt|im zulauf|wird nachgeliefert|sur commande|en réapprovisionnement|"
    r"bajo pedido|por encargo|su ordinazione|op bestelling|na zamówienie|"
    r"под заказ|на заказ|beställningsvara|bestillingsvare|restordre|tilaustuote|"
    r"お取り寄せ|取り寄せ|可訂購|可订购",
    re.IGNORECASE)


def from_text(text: str) -> str:
    """A visible stock line ("Nur noch 3 auf Lager", "Нет в наличии") -> the vocabulary.

    Pre-order and backorder come first: "Sold out – pre-order now" can be bought."""
    if _PREORDER.search(text):
        return "preorder"
    if _BACKORDER.search(text):
        return "backorder"
    if _OUT_OF_STOCK.search(text):
        return "out_of_stock"
    if _IN_STOCK.search(text):
        return "in_stock"
    return "unknown"
