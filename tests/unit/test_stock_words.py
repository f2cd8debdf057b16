"""Stock lines as shops write them, in many languages (`workers.extraction.availability.from_text`)."""

from __future__ import annotations

import pytest

from workers.extraction.availability import from_text

OUT = ["Out of stock", "Dieser Artikel ist nicht mehr erhältlich", "Nicht mehr verfügbar",
       "Article non disponible", "Non più disponibile", "Niet meer leverbaar",
       "Nie je skladom", "Momentálně nedostupné", "Ei varastossa", "Нет на складе",
       "Нет в наличии", "Εξαντλήθηκε", "Stoc epuizat", "Nu este în stoc", "Ni na zalogi",
       "Ni dobavljivo", "אזל מהמלאי", "غير متوفر", "売り切れ", "品切れ", "Agotado",
       "Fuera de stock", "Sem estoque", "Tillfälligt slut", "Stokta yok", "无货"]
IN = ["In stock", "Auf Lager", "Sofort lieferbar", "En stock", "Disponible", "În stoc",
      "Na zalogi", "Dobavljivo", "Na stanju", "במלאי", "متوفر", "有货", "В наличии",
      "Skladem", "Op voorraad", "Laos"]


@pytest.mark.parametrize("text", OUT)
def test_out_of_stock_lines(text: str) -> None:
    assert from_text(text) == "out_of_stock"


@pytest.mark.parametrize("text", IN)
def test_in_stock_lines(text: str) -> None:
    assert from_text(text) == "in_stock"


@pytest.mark.parametrize("text", ["Free delivery", "Laoshan green tea", "Add to cart", ""])
def test_other_lines_say_nothing(text: str) -> None:
    assert from_text(text) == "unknown"
