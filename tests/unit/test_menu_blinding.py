"""The leave-one-platform-out blinding the extraction bench scores the generic menu reader with."""

from __future__ import annotations

import menu_scoring as ms


def test_words_only_one_platform_uses_become_opaque_and_shared_words_stay() -> None:
    own = {"promoPrice", "price", "name", "availableQty"}
    others = {"price", "name", "special_price", "quantity", "available"}
    names = ms.blinded_names(own, others, "words")
    assert set(names) == {"promoPrice", "availableQty"}
    assert names["promoPrice"].endswith("_price") and "promo" not in names["promoPrice"]
    assert names["availableQty"].startswith("available_") and "qty" not in names["availableQty"]


def test_keys_only_one_platform_uses_become_opaque() -> None:
    names = ms.blinded_names({"promoPrice", "price", "name"}, {"price"}, "keys")
    assert set(names) == {"promoPrice", "name"}
    assert all(value.startswith("k") for value in names.values())
