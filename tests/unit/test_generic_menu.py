"""The generic menu reader on small hand-written payloads of the shapes menu APIs use
(field names as public platforms spell them; products and prices invented)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from domain.values import Observation
from ledger.cli import main
from workers.extraction.adapters.base import Page
from workers.extraction.adapters.generic_menu import cross_check, read_menu
from workers.extraction.adapters.json_walk import Budget, load
from workers.extraction.extract import extract_page


def menu(payload: Any, currency: str = "USD") -> tuple[Observation, ...]:
    return read_menu(load(json.dumps(payload)), currency)


def paid(observations: tuple[Observation, ...]) -> dict[tuple[str, str], Decimal | None]:
    """(name, option) -> what a buyer pays."""
    return {(obs.name, offer.option): offer.special_price if offer.special_price is not None
            else offer.price for obs in observations for offer in obs.offers}


def test_products_in_a_nested_envelope_with_variant_objects_and_specials() -> None:
    payload = {"data": {"menu": {"products": [
        {"id": "a1", "name": "Blue Dream", "brand": {"name": "Acme"}, "variants": [
            {"option": "1g", "priceRec": 12, "specialPriceRec": 9.5, "quantity": 3},
            {"option": "3.5g", "priceRec": 35, "specialPriceRec": 40, "quantity": 0}]}]}}}
    (obs,) = menu(payload)
    assert (obs.provider_product_id, obs.brand) == ("a1", "Acme")
    assert paid((obs,)) == {("Blue Dream", "1g"): Decimal("9.5"), ("Blue Dream", "3.5g"): 35}
    assert [o.availability for o in obs.offers] == ["in_stock", "out_of_stock"]
    assert obs.offers[0].price == 12  # the regular price stays beside the special


def test_prices_in_cents_by_field_name() -> None:
    payload = {"items": [{"title": "Gummies", "priceInCents": 1850},
                         {"title": "Pre-roll", "amount_cents": 700, "sale_price_cents": 500}]}
    assert paid(menu(payload)) == {("Gummies", "default"): Decimal("18.5"),
                                   ("Pre-roll", "default"): Decimal(5)}


def test_prices_in_cents_by_magnitude_over_the_whole_list_but_not_whole_dollars() -> None:
    cents = {"products": [{"name": "Flower", "options": [{"label": "1/8 oz", "price": 4500},
                                                         {"label": "1 oz", "price": 24000}]},
                          {"name": "Vape", "options": [{"label": "0.5g", "price": 3000}]}]}
    assert paid(menu(cents)) == {("Flower", "1/8 oz"): 45, ("Flower", "1 oz"): 240,
                                 ("Vape", "0.5g"): 30}
    dollars = {"products": [{"name": "Flower", "price": 45}, {"name": "Vape", "price": 30}]}
    assert paid(menu(dollars)) == {("Flower", "default"): 45, ("Vape", "default"): 30}


def test_point_of_sale_shapes_weight_tiers_in_minor_units_and_a_pricing_object() -> None:
    tiers = {"data": [{"productName": "Blue Dream", "currencyCode": "USD", "weightTierInformation": [
        {"name": "1g", "gramAmount": 1, "pricePerUnitInMinorUnits": 1200},
        {"name": "1/8 oz", "gramAmount": 3.5, "pricePerUnitInMinorUnits": 3500}],
        "pricePerGram": 12, "quantity": 40}]}
    assert paid(menu(tiers)) == {("Blue Dream", "1g"): 12, ("Blue Dream", "1/8 oz"): 35}
    pricing = {"data": {"product_list": [{"name": "Rosin", "total_quantity": 0, "pricing": {
        "price_type": "FLAT", "price_sell": 60, "discounted_price": 45, "tier_name": None}}]}}
    (obs,) = menu(pricing)
    assert paid((obs,)) == {("Rosin", "default"): 45} and obs.availability == "out_of_stock"


def test_option_labels_from_an_amount_and_its_unit_or_a_unit_alone() -> None:
    amounts = {"data": [{"name": "Sour", "options": [
        {"amount": 3.5, "unit": "g", "price": 4500}, {"amount": 7, "unit": "g", "price": 8000}]}]}
    assert paid(menu(amounts)) == {("Sour", "3.5g"): 45, ("Sour", "7g"): 80}
    units = {"menu": [{"name": "Tonic", "prices": [{"unit": "100ml", "price_cents": 1200},
                                                 {"unit": "250ml", "price_cents": 2500}]}]}
    assert paid(menu(units)) == {("Tonic", "100ml"): 12, ("Tonic", "250ml"): 25}
    old_style = [{"name": "Og", "prices": {"unit": 0, "gram": 12, "eighth": 40}}]
    assert paid(menu(old_style)) == {("Og", "gram"): 12, ("Og", "eighth"): 40}


def test_per_weight_slots_on_the_record_and_in_a_price_object() -> None:
    slots = [{"name": "Kush", "price_gram": 10, "price_eighth_ounce": 45,
              "discounted_price_eighth_ounce": 33.75, "price_ounce": None,
              "special_price_gram": {"price": 10, "discount_price": 8}}]
    assert paid(menu(slots)) == {("Kush", "gram"): 8, ("Kush", "eighth ounce"): Decimal("33.75")}
    keyed = {"menu_items": [{"name": "Haze", "prices": {"1g": "9.00", "3.5g": "30.00", "7g": 0}}]}
    assert paid(menu(keyed)) == {("Haze", "1g"): 9, ("Haze", "3.5g"): 30}


def test_a_percentage_sale_object_applies_to_every_option() -> None:
    payload = {"data": [{"type": "menu_item", "attributes": {
        "name": "Cart", "prices": {"price_unit": 55, "price_gram": 0},
        "sale": {"type": "percentage", "amount": 25}}}]}
    assert paid(menu(payload)) == {("Cart", "default"): Decimal("41.25")}


def test_graphql_edges_and_parallel_option_arrays_with_medical_prices() -> None:
    payload = {"data": {"filteredProducts": {"edges": [{"node": {
        "Name": "Live Sugar 1g", "Options": ["1g", "2g"], "Prices": [43, 80], "recPrices": [43, 80],
        "recSpecialPrices": [27.95, None], "medicalPrices": [40, 75]}}]}}}
    (obs,) = menu(payload)
    found = {(o.option, o.pricing_type): (o.price, o.special_price) for o in obs.offers}
    assert found == {("1g", "regular"): (43, Decimal("27.95")), ("2g", "regular"): (80, None),
                     ("1g", "medical"): (40, None), ("2g", "medical"): (75, None)}
    assert len(obs.offers) == 4  # `Prices` names the same options as `recPrices`


def test_a_json_string_inside_the_json_is_read() -> None:
    inner = json.dumps({"products": [{"name": "Tincture", "price": "24.99", "stock": 2}]})
    (obs,) = menu({"success": True, "html": "<div>menu</div>", "data": inner})
    assert paid((obs,)) == {("Tincture", "default"): Decimal("24.99")}
    assert obs.availability == "in_stock" and obs.quantity == 2


def test_struck_and_minor_unit_prices_as_shop_apis_give_them() -> None:
    store_api = [{"name": "Grinder", "is_in_stock": False, "prices": {
        "price": "1999", "regular_price": "2499", "sale_price": "1999",
        "currency_code": "EUR", "currency_minor_unit": 2}}]
    (obs,) = menu(store_api)
    assert (obs.offers[0].price, obs.offers[0].special_price) == (Decimal("24.99"), Decimal("19.99"))
    assert obs.availability == "out_of_stock" and obs.offers[0].currency == "EUR"
    catalog = [{"type": "ITEM", "item_data": {"name": "Cone", "variations": [
        {"item_variation_data": {"name": "half", "price_money": {"amount": 300}}}]}}]
    assert paid(menu(catalog)) == {("Cone", "half"): 3}
    compare = {"products": [{"title": "Lighter", "variants": [
        {"title": "Red", "price": "2.00", "compare_at_price": "3.00", "available": True}]}]}
    assert paid(menu(compare)) == {("Lighter", "Red"): 2}


def test_tiers_named_in_a_nested_object_and_the_currency_beside_the_list() -> None:
    payload = {"store": {"currency": "CAD"}, "products": [
        {"productName": "Sativa Mix", "priceRanges": [
            {"weightTolerance": {"name": "1/8th"}, "price": 35},
            {"weightTolerance": {"name": "1/4"}, "price": 65}]}]}
    (obs,) = menu(payload)
    assert paid((obs,)) == {("Sativa Mix", "1/8th"): 35, ("Sativa Mix", "1/4"): 65}
    assert {o.currency for o in obs.offers} == {"CAD"}


def test_stock_flags_in_their_usual_spellings() -> None:
    payload = [{"name": "A", "price": 1, "soldOut": True}, {"name": "B", "price": 1, "inStock": True},
               {"name": "C", "price": 1, "availability": "Out of stock"},
               {"name": "D", "price": 1, "availableQty": 0}]
    assert [o.availability for o in menu(payload)] == ["out_of_stock", "in_stock",
                                                      "out_of_stock", "out_of_stock"]


def test_products_grouped_in_categories_are_products_and_categories_are_not() -> None:
    payload = {"categories": [
        {"name": "Flower", "products": [{"name": "Haze", "price": 30}, {"name": "Kush", "price": 35}]},
        {"name": "Edibles", "products": [{"name": "Chews", "price": 12}]}]}
    assert [obs.name for obs in menu(payload)] == ["Haze", "Kush", "Chews"]


def test_a_product_detail_is_one_product_with_its_variants() -> None:
    payload = {"product": {"title": "Hoodie", "variants": [
        {"title": "S", "price": "40.00"}, {"title": "M", "price": "42.00", "sale_price": "35.00"}]}}
    assert paid(menu(payload)) == {("Hoodie", "S"): 40, ("Hoodie", "M"): 35}


def test_a_variant_price_in_a_money_object_held_in_another() -> None:
    payload = {"data": {"product": {"name": "Carrot Juice", "variants": [
        {"name": "1l", "pricing": {"price": {"gross": {"amount": 4.5, "currency": "USD"}}}},
        {"name": "2l", "pricing": {"price": {"gross": {"amount": 6.3, "currency": "USD"}}}}]}}}
    assert paid(menu(payload)) == {("Carrot Juice", "1l"): Decimal("4.5"),
                                   ("Carrot Juice", "2l"): Decimal("6.3")}


def test_a_sku_priced_by_its_first_sellers_offer_keeps_the_skus_name() -> None:
    def sku(name: str, price: int, listed: int) -> dict[str, Any]:
        return {"itemId": "99", "name": name, "unitMultiplier": 1, "images": [{"imageId": "7"}],
                "sellers": [{"sellerId": "1", "commertialOffer": {
                    "AvailableQuantity": 3, "Price": price, "ListPrice": listed}}]}
    payload = {"products": [{"productName": "Echo Dot", "items": [sku("white", 280, 310),
                                                                   sku("black", 290, 310)]}]}
    assert paid(menu(payload)) == {("Echo Dot", "white"): 280, ("Echo Dot", "black"): 290}


def test_an_offer_deeper_than_the_offer_depth_is_not_an_options_price() -> None:
    payload = {"products": [{"name": "Echo Dot", "items": [
        {"name": "white", "a": {"b": {"c": {"price": 280}}}}]}]}
    assert paid(menu(payload)) == {}


def test_option_arrays_per_unit_inside_a_price_object_and_a_per_unit_price_beside() -> None:
    payload = {"ms": [{"name": "Georgia Pie", "prices": {"gramsPerEighth": 3.5, "ounce": [
        {"price": 70, "label": "1/8 oz", "originalPrice": 70, "gramUnitPrice": 20,
         "thcUnitPrice": 0.83}], "gram": [{"price": 22, "label": "1 g"}]}},
        {"name": "Sticky Buns", "price": {"price": 65, "label": "1/8 oz", "originalPrice": 65}}]}
    assert paid(menu(payload)) == {("Georgia Pie", "1/8 oz"): 70, ("Georgia Pie", "1 g"): 22,
                                   ("Sticky Buns", "1/8 oz"): 65}


def test_a_pagers_links_are_not_products() -> None:
    payload = {"products": [{"productName": "Mouse", "price": 950}],
               "pagination": {"after": [{"index": 2, "proxyUrl": "search/p/1?page=2&count=5"},
                                        {"index": 3, "proxyUrl": "search/p/1?page=3&count=5"}]}}
    assert paid(menu(payload)) == {("Mouse", "default"): 950}


def test_a_special_under_a_key_that_says_nothing_is_told_by_round_discounts_over_the_menu() -> None:
    def variant(size: str, price: str, promo: str | None, stock: str) -> dict[str, Any]:
        return {"name": size, "price": price, "k36": promo, "k1": stock, "k39": "1.0"}
    payload = {"list": [
        {"name": "Ice Cream Cake", "variants": [variant("3.5g", "30.0", "21.0", "38.0")]},
        {"name": "L'Orange", "variants": [variant("3.5g", "55.0", "38.5", "12.0")]},
        {"name": "Dos Si Dos", "variants": [variant("14g", "75.0", "56.25", "40.0"),
                                            variant("28g", "120.0", None, "9.0")]}]}
    assert paid(menu(payload)) == {("Ice Cream Cake", "3.5g"): 21, ("L'Orange", "3.5g"): Decimal("38.5"),
                                   ("Dos Si Dos", "14g"): Decimal("56.25"), ("Dos Si Dos", "28g"): 120}


def test_an_unnamed_column_below_the_price_but_not_round_discounts_off_it_is_no_special() -> None:
    payload = {"list": [{"name": "Kush", "price": "30.0", "k1": "17.0"},
                        {"name": "Haze", "price": "55.0", "k1": "12.0"},
                        {"name": "Cake", "price": "75.0", "k1": "40.0"}]}
    assert paid(menu(payload)) == {("Kush", "default"): 30, ("Haze", "default"): 55, ("Cake", "default"): 75}


def test_parallel_lists_whose_special_is_an_empty_list_where_unset_keys_saying_nothing() -> None:
    def product(name: str, size: str, price: int, special: list[str]) -> dict[str, Any]:
        return {"Name": name, "k24": [size], "k27": [price], "k69": special,
                "k66": [{"option": size, "k60": 30}]}
    payload = {"data": {"k56": {"products": [
        product("Forza | Live Sugar", "1gC", 43, ["27.95"]), product("Serving Tray", "N/A", 12, []),
        product("Animal Mntz", "1/8oz", 34, []), product("Troche", "N/A", 25, ["18.75"])]}}}
    assert paid(menu(payload)) == {("Forza | Live Sugar", "1gC"): Decimal("27.95"),
                                   ("Serving Tray", "N/A"): 12, ("Animal Mntz", "1/8oz"): 34,
                                   ("Troche", "N/A"): Decimal("18.75")}


def test_a_money_object_in_a_wrapper_whose_key_says_nothing() -> None:
    payload = {"product": {"name": "Carrot Juice", "variants": [
        {"name": "1l", "k3": {"price": {"k9": {"amount": 4.5, "currency": "USD"}, "__typename": "T"}}}]}}
    assert paid(menu(payload)) == {("Carrot Juice", "1l"): Decimal("4.5")}


def test_a_price_objects_one_set_amount_under_keys_that_say_nothing_is_the_price() -> None:
    payload = {"data": [{"attributes": {"name": "Salve", "prices": {"k26": 22, "k23": 0, "k22": None}}},
                        {"attributes": {"name": "Cart", "prices": {"k26": 40, "k23": 0, "k22": 0}}}]}
    assert paid(menu(payload)) == {("Salve", "default"): 22, ("Cart", "default"): 40}


def test_one_size_on_every_product_labels_no_price_but_sizes_that_differ_do() -> None:
    names = ("Salve", "Soda", "Cart", "Gummies", "Tincture")
    same = [{"name": name, "price": 10 + i, "k11": "3.5 grams"} for i, name in enumerate(names)]
    assert set(paid(menu(same))) == {(name, "default") for name in names}
    differ = [{"name": name, "price": 10 + i, "size": f"{i + 1}g"} for i, name in enumerate(names)]
    assert set(paid(menu(differ))) == {(name, f"{i + 1}g") for i, name in enumerate(names)}
    few = same[:2]
    assert set(paid(menu(few))) == {("Salve", "3.5 grams"), ("Soda", "3.5 grams")}


def test_a_price_listed_in_several_currencies_is_read_in_the_menus_in_cents_by_magnitude() -> None:
    def variant(title: str, eur: int, usd: int) -> dict[str, Any]:
        return {"title": title, "prices": [{"currency_code": "eur", "amount": eur},
                                           {"currency_code": "usd", "amount": usd}]}
    payload = [{"title": "T-Shirt", "variants": [variant("S", 1950, 2200), variant("M", 1950, 2400)]},
               {"title": "Mug", "variants": [variant("One Size", 1000, 1200)]}]
    assert paid(menu(payload, "USD")) == {("T-Shirt", "S"): 22, ("T-Shirt", "M"): 24, ("Mug", "One Size"): 12}
    assert paid(menu(payload, "EUR"))[("T-Shirt", "S")] == Decimal("19.5")
    assert paid(menu(payload, "GBP"))[("Mug", "One Size")] == 10  # none in the menu's: the first


def test_a_records_one_weight_in_a_list_labels_a_price_nothing_else_labels() -> None:
    payload = [{"name": "Cereal Milk", "k17": ["eighth ounce"], "k97": {"price": "45.0"}},
               {"name": "Live Rosin", "k17": ["1g"], "k97": {"price": "60.0"}},
               {"name": "Gummies", "k17": ["eighth ounce", "ounce"], "k97": {"price": "20.0"}}]
    assert paid(menu(payload)) == {("Cereal Milk", "eighth ounce"): 45, ("Live Rosin", "1g"): 60,
                                   ("Gummies", "default"): 20}


def test_whole_yen_are_not_taken_for_cents() -> None:
    payload = {"currency": "JPY", "items": [{"name": "Tea", "price": 1500},
                                            {"name": "Cup", "price": 2400}]}
    assert paid(menu(payload)) == {("Tea", "default"): 1500, ("Cup", "default"): 2400}


def test_json_without_products_yields_none() -> None:
    stores = {"stores": [{"name": "Downtown", "address": "1 Main St", "lat": 1.5}]}
    assert menu(stores) == ()
    assert menu({"price": 10, "currency": "USD"}) == ()  # a price with no product name
    assert menu([{"name": "Gift card", "price": 0}]) == ()  # zero is no price


@pytest.mark.parametrize("text", [
    "[" * 200_000 + "]" * 200_000,  # deeper than the parser goes
    '{"a": ' * 5_000 + "1" + "}" * 5_000,
    '[{"name": "x", "price": 1e999999}, {"name": "y", "price": NaN}, {"name": "z", "price": '
    + "9" * 5000 + "}]",
    json.dumps({"d": json.dumps({"d": json.dumps({"d": json.dumps({"d": json.dumps(
        [{"name": "deep", "price": 1}])})})})}),
])
def test_hostile_json_neither_raises_nor_runs_unbounded(text: str) -> None:
    data = load(text)
    budget = Budget()
    found = read_menu(data, budget=budget)
    assert budget.spent <= budget.nodes + 1
    assert all(o.price is None or o.price < 10**7 for obs in found for o in obs.offers)


def test_the_walk_stops_at_its_node_budget_and_its_depth() -> None:
    wide = {"groups": [{"other": list(range(50))} for _ in range(10_000)]
            + [{"products": [{"name": "late", "price": 1}]}]}
    budget = Budget(nodes=5_000)
    assert read_menu(wide, budget=budget) == ()
    assert budget.exhausted
    deep: Any = [{"name": "buried", "price": 2}]
    for _ in range(100):
        deep = {"level": deep}
    assert read_menu(deep, budget=Budget(depth=48)) == ()
    assert [o.name for o in read_menu(deep, budget=Budget(depth=200))] == ["buried"]


def test_the_walk_stops_when_its_time_is_up() -> None:
    ticks = iter(range(10**9))
    budget = Budget(seconds=3, clock=lambda: float(next(ticks)))
    payload = {"groups": [{"x": [1, 2, 3]} for _ in range(5_000)]
               + [{"products": [{"name": "late", "price": 1}]}]}
    assert read_menu(payload, budget=budget) == ()
    assert budget.exhausted and budget.spent < 5_000


def test_an_unknown_platform_payload_is_read_when_no_adapter_claims_it() -> None:
    payload = {"result": {"catalog": [{"displayName": "Rosin 1g", "unitPrice": 60,
                                       "promoPrice": 48, "onHand": 5}]}}
    adapter, extraction = extract_page(Page(url="https://menu.invalid/api", text=json.dumps(payload)))
    assert adapter.name == "generic-menu"
    assert paid(extraction.observations) == {("Rosin 1g", "default"): 48}


def test_the_cli_extracts_an_unknown_platform_payload(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "menu.json"
    path.write_text(json.dumps({"data": {"products": [
        {"title": "Balm", "price_cents": 2200, "variants": []}]}}))
    assert main(["extract", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    products = json.loads(captured.out)
    assert [(p["name"], p["offers"][0]["price"]) for p in products] == [("Balm", "22")]
    assert "adapter: generic-menu" in captured.err


def test_the_cross_check_counts_options_read_alike_and_apart() -> None:
    adapter = menu({"products": [{"name": "Haze", "variants": [
        {"option": "1g", "price": 10}, {"option": "3.5g", "price": 30, "specialPrice": 25}]}]})
    generic = menu([{"name": "haze ", "variants": [
        {"option": "1 g", "price": 10}, {"option": "3.5g", "price": 30}, {"option": "7g", "price": 55}]}])
    checked = cross_check(adapter, generic)
    assert (checked.agreed, checked.adapter_only, checked.generic_only) == (1, 1, 2)
    assert checked.line() == "generic menu reader agrees on 1 of 2 options (2 more of its own)"


def test_explain_on_a_platform_payload_says_whether_the_generic_reader_agrees(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "products.json"
    path.write_text(json.dumps({"products": [{"id": 7, "title": "Mug", "handle": "mug", "variants": [
        {"title": "Blue", "price": "12.00", "compare_at_price": "15.00", "available": True}]}]}))
    assert main(["extract", str(path), "--explain", "--json"]) == 0
    note = capsys.readouterr().err
    assert "adapter shopify" in note and "generic menu reader agrees on 1 of 1 options" in note


def test_a_size_valued_field_labels_a_records_own_price_but_a_ratio_does_not() -> None:
    payload = [{"Name": "Rise Flower - Fireworks", "Weight": 3.5, "Weight_Str": "3.5g", "Price": 29.4},
               {"Name": "Tincture", "Size": "30 ml", "Price": 45},
               {"Name": "LLR Cartridge | 0.5g", "Weight_Str": ".5g", "Price": 24},
               {"name": "Vape Cart", "grams_per_eighth": "3.5 grams", "price": 40}]
    assert paid(menu(payload)) == {("Rise Flower - Fireworks", "3.5g"): Decimal("29.4"),
                                   ("Tincture", "30 ml"): 45, ("LLR Cartridge | 0.5g", ".5g"): 24,
                                   ("Vape Cart", "default"): 40}


def test_the_only_option_held_in_an_object_of_its_own() -> None:
    payload = [{"id": 1, "name": "Gummies 100mg", "msrp": None, "dispensary": {"name": "Shop"},
                "bestOfferVariant": {"price": 10, "quantity": 1, "unit": "pc"}},
               {"id": 2, "name": "Chocolate", "bestOfferVariant": {"price": 16, "displayQuantity": "each"}}]
    assert paid(menu(payload)) == {("Gummies 100mg", "1pc"): 10, ("Chocolate", "each"): 16}


def test_one_product_listed_by_two_stores_at_two_prices_keeps_both() -> None:
    payload = [{"name": "Flower 1g", "store": "A", "price": 10},
               {"name": "Flower 1g", "store": "B", "price": 12},
               {"name": "Flower 1g", "store": "B", "price": 12}]
    prices = sorted(o.offers[0].price for o in menu(payload))
    assert prices == [10, 12]


def test_a_product_list_whose_keys_say_nothing_is_read_by_value_shape() -> None:
    payload = {"k0": [
        {"k1": "Rise Flower 3.5g - Fireworks", "k2": "3.5g", "k3": 3.5, "k4": 29.4, "k5": 8.4,
         "k6": 0.324, "k7": "https://x.invalid/a", "k8": 1001, "k9": None},
        {"k1": "Rest Flower 1g - Bagel", "k2": "1g", "k3": 1, "k4": 12, "k5": 12,
         "k6": 0.616, "k7": "https://x.invalid/b", "k8": 1002, "k9": 9.99},
        {"k1": "Tincture 30ml", "k2": "30 ml", "k3": 30, "k4": 45.5, "k5": 1.52,
         "k6": 2.017, "k7": "https://x.invalid/c", "k8": 1003, "k9": None}]}
    assert paid(menu(payload)) == {("Rise Flower 3.5g - Fireworks", "3.5g"): Decimal("29.4"),
                                   ("Rest Flower 1g - Bagel", "1g"): Decimal("9.99"),
                                   ("Tincture 30ml", "30 ml"): Decimal("45.5")}


def test_options_whose_keys_say_nothing_are_read_by_structure() -> None:
    payload = [{"a": "Blue Dream Flower", "b": [{"c": "1g", "d": 12.5, "e": 991}, {"c": "3.5g", "d": 35, "e": 992}]},
               {"a": "Sour Diesel Cart", "b": [{"c": "0.5g", "d": 25, "e": 993}]}]
    assert paid(menu(payload)) == {("Blue Dream Flower", "1g"): Decimal("12.5"),
                                   ("Blue Dream Flower", "3.5g"): 35, ("Sour Diesel Cart", "0.5g"): 25}


def test_arrays_that_are_not_products_are_not_read_as_products() -> None:
    payload = {"a": [{"lat": 33.388697, "lon": -111.6762}, {"lat": 33.1, "lon": -111.2}],
               "b": [{"open": 540, "close": 1260}, {"open": 1980, "close": 2700}],
               "c": [{"slug": "edibles-1", "n": 4}, {"slug": "flower-2", "n": 7}],
               "d": [{"when": "2024-03-29T06:17:10Z", "v": 12.5}, {"when": "2024-03-30T06:17:10Z", "v": 13}]}
    assert menu(payload) == ()


def test_a_second_plain_price_lower_than_the_first_is_the_special() -> None:
    payload = [{"name": "Ice Cream Cake", "variants": [{"name": "3.5g", "price": 30.0, "q7Price": 21.0}]},
               {"name": "Tincture", "price": 40, "pricePerUnit": 4}]
    assert paid(menu(payload)) == {("Ice Cream Cake", "3.5g"): 21, ("Tincture", "default"): 40}


def test_parallel_lists_whose_keys_say_nothing_are_options_with_their_specials() -> None:
    payload = {"a": [{"b": "Live Sugar 1g", "c": ["1gC", "2gC"], "d": [43, 80], "e": [27.95, None]},
                     {"b": "Serving Tray", "c": ["N/A 1"], "d": [12], "e": [None]},
                     {"b": "Animal Mintz", "c": ["1/8oz"], "d": [64], "e": [None]}]}
    assert paid(menu(payload)) == {("Live Sugar 1g", "1gC"): Decimal("27.95"),
                                   ("Live Sugar 1g", "2gC"): 80, ("Serving Tray", "N/A 1"): 12,
                                   ("Animal Mintz", "1/8oz"): 64}


def test_a_sparse_column_far_below_the_price_is_not_its_special() -> None:
    payload = [{"n": "Cherry Punch 3.5g", "p": 24, "t": None}, {"n": "Funk Mountain 1g", "p": 7.8, "t": 1.21},
               {"n": "LA Kush Cake 3.5g", "p": 24.5, "t": None}]
    assert paid(menu(payload)) == {("Cherry Punch 3.5g", "default"): 24,
                                   ("Funk Mountain 1g", "default"): Decimal("7.8"),
                                   ("LA Kush Cake 3.5g", "default"): Decimal("24.5")}


def test_keys_in_other_languages_name_the_price_and_the_offer() -> None:
    payload = {"productos": [{"nombre": "Aceite CBD 10%", "precio": "39.90", "precio_oferta": "29.90"},
                             {"nombre": "Flor Amnesia", "precio": "12.00"}]}
    assert paid(menu(payload, "EUR")) == {("Aceite CBD 10%", "default"): Decimal("29.90"),
                                          ("Flor Amnesia", "default"): Decimal("12.00")}


def test_fields_of_a_wrapper_object_are_columns_and_zero_is_not_set() -> None:
    payload = {"z": [{"i": "1", "a": {"t": "Blackberry Kush 2g Disposable", "p": {"u": 55, "g": 0}}},
                     {"i": "2", "a": {"t": "Mendo Breath 1g Wax", "p": {"u": 30.5, "g": 0}}},
                     {"i": "3", "a": {"t": "Gorilla Guava 1g Wax", "p": {"u": 30, "g": 0}}}]}
    assert paid(menu(payload)) == {("Blackberry Kush 2g Disposable", "default"): 55,
                                   ("Mendo Breath 1g Wax", "default"): Decimal("30.5"),
                                   ("Gorilla Guava 1g Wax", "default"): 30}
