"""The simulated stores and their catalogs: a pure function of (seed, store, epoch).

An *epoch* is a simulated time bucket (the demo advances it once per crawl
cycle). Epoch 0 is the starting catalog; each later epoch applies small random
changes to the previous one (prices, specials, sold out, products that vanish
for a few epochs and come back, new products). Every random draw comes from a
`random.Random` seeded with a string derived from (seed, store, epoch), never
the global generator, so the same inputs always give the same catalog.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal

PLATFORMS = ("dispensary", "shopify", "woocommerce", "jsonld", "microdata")

_CENT = Decimal("0.01")
_ADJECTIVES = ("Green", "Golden", "Urban", "Coastal", "Northern", "Happy", "Blue", "Wild")
_NOUNS = ("Leaf", "Harvest", "Market", "Supply", "Goods", "Garden", "Outfitters", "Co")
_REGIONS = (
    ("US-CA", "America/Los_Angeles"),
    ("US-CO", "America/Denver"),
    ("US-IL", "America/Chicago"),
    ("US-NY", "America/New_York"),
    ("US-WA", "America/Los_Angeles"),
)
_EU_REGION = ("DE-BE", "Europe/Berlin")
_STRAINS = ("Indica", "Sativa", "Hybrid")
_WEED_NAMES = ("Blue Dream", "Sour Diesel", "OG Kush", "Gelato", "Wedding Cake", "Zkittlez",
               "Pineapple Express", "Runtz", "Gorilla Glue", "Jack Herer", "Durban Poison")
_WEED_BRANDS = ("Stiiizy", "Cookies", "Raw Garden", "Kiva", "Wyld", "Jeeter")
_WEED_CATEGORIES = (
    ("Flower", "flower", ("1g", "1/8oz", "1/4oz", "1/2oz")),
    ("Pre-Rolls", "singles", ("0.5g", "1g")),
    ("Vaporizers", "cartridges", ("0.5g", "1g")),
    ("Edible", "gummies", ("100mg",)),
)
_SHOP_ITEMS = ("Tee", "Hoodie", "Cap", "Mug", "Tote", "Socks", "Notebook", "Candle", "Poster")
_SHOP_STYLES = ("Classic", "Organic", "Vintage", "Everyday", "Limited", "Studio", "Field")
_SHOP_BRANDS = ("Northwind", "Acme", "Kettle & Co", "Mossy Oak Goods", "Paperleaf")
_SIZED = ("Tee", "Hoodie", "Socks")


@dataclass(frozen=True)
class StoreSpec:
    """One simulated store; `key` ("store-3") is its id in config and truth."""

    key: str
    index: int
    name: str
    slug: str
    platform: str
    region: str
    timezone: str
    currency: str
    platform_id: str


@dataclass(frozen=True)
class Variant:
    """One option of a product; `quantity == 0` means sold out."""

    option: str
    variant_id: str
    sku: str
    price: Decimal
    special_price: Decimal | None = None
    quantity: int = 10

    @property
    def on_sale(self) -> bool:
        return self.special_price is not None and self.special_price < self.price


@dataclass(frozen=True)
class Product:
    """One catalog entry; `provider_id` is what the platform exposes as the id."""

    provider_id: str
    handle: str
    name: str
    brand: str
    category: str
    subcategory: str
    variants: tuple[Variant, ...]
    strain_type: str | None = None
    thc: tuple[float, float] | None = None
    cbd: tuple[float, float] | None = None
    #: the epoch up to which the product is off the catalog (exclusive), or None
    hidden_until: int | None = None

    @property
    def listed(self) -> bool:
        return self.hidden_until is None

    @property
    def in_stock(self) -> bool:
        return any(v.quantity > 0 for v in self.variants)


@dataclass(frozen=True)
class Catalog:
    """A store's catalog at one epoch; `products` includes hidden ones."""

    store: StoreSpec
    epoch: int
    products: tuple[Product, ...]

    @property
    def listed(self) -> tuple[Product, ...]:
        return tuple(p for p in self.products if p.listed)

    @property
    def hidden(self) -> tuple[Product, ...]:
        return tuple(p for p in self.products if not p.listed)

    def find_by_handle(self, handle: str) -> Product | None:
        return next((p for p in self.listed if p.handle == handle), None)


@dataclass(frozen=True)
class Simulation:
    """N deterministic stores, platforms assigned round-robin over `PLATFORMS`.

    `catalog(key, epoch)` is memoised per instance (it replays epochs 0..E).
    """

    seed: int = 0
    store_count: int = 5
    min_products: int = 8
    max_products: int = 20
    #: one jsonld store prices in EUR (comma decimals in visible text)
    eur_store: bool = True
    _memo: dict[tuple[str, int], Catalog] = field(
        default_factory=dict, repr=False, compare=False, hash=False
    )

    @property
    def stores(self) -> tuple[StoreSpec, ...]:
        return tuple(self._store(i) for i in range(self.store_count))

    def store(self, key: str) -> StoreSpec:
        for spec in self.stores:
            if spec.key == key:
                return spec
        raise KeyError(f"no simulated store {key!r}")

    def catalog(self, key: str, epoch: int) -> Catalog:
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        cached = self._memo.get((key, epoch))
        if cached is not None:
            return cached
        if epoch == 0:
            result = _initial_catalog(self, self.store(key))
        else:
            result = _evolve(self, self.catalog(key, epoch - 1))
        self._memo[(key, epoch)] = result
        return result

    def rng(self, *parts: object) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts)))

    def _store(self, index: int) -> StoreSpec:
        rng = self.rng(f"store-{index}", "spec")
        platform = PLATFORMS[index % len(PLATFORMS)]
        name = f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {index}"
        eur = self.eur_store and platform == "jsonld" and index == PLATFORMS.index("jsonld")
        region, tz = _EU_REGION if eur else _REGIONS[index % len(_REGIONS)]
        return StoreSpec(
            key=f"store-{index}",
            index=index,
            name=name,
            slug=name.lower().replace(" ", "-"),
            platform=platform,
            region=region,
            timezone=tz,
            currency="EUR" if eur else "USD",
            platform_id=f"{rng.getrandbits(96):024x}",
        )


def money(value: float | Decimal) -> Decimal:
    return Decimal(str(value)).quantize(_CENT, rounding=ROUND_HALF_UP)


def _initial_catalog(sim: Simulation, store: StoreSpec) -> Catalog:
    rng = sim.rng(store.key, 0)
    count = rng.randint(sim.min_products, sim.max_products)
    products = tuple(_new_product(rng, store, n) for n in range(count))
    return Catalog(store=store, epoch=0, products=products)


def _new_product(rng: random.Random, store: StoreSpec, serial: int) -> Product:
    if store.platform == "dispensary":
        return _new_dispensary_product(rng, store, serial)
    return _new_shop_product(rng, store, serial)


def _provider_id(rng: random.Random, store: StoreSpec, serial: int) -> str:
    if store.platform == "dispensary":
        return f"{rng.getrandbits(96):024x}"
    if store.platform in ("shopify", "woocommerce"):
        return str(1000 * (store.index + 1) + serial + (7_000_000_000 if store.platform == "shopify" else 0))
    return f"SKU-{store.index}-{serial:04d}"


def _new_dispensary_product(rng: random.Random, store: StoreSpec, serial: int) -> Product:
    category, subcategory, options = rng.choice(_WEED_CATEGORIES)
    pid = _provider_id(rng, store, serial)
    chosen = sorted(rng.sample(options, rng.randint(1, min(3, len(options)))), key=options.index)
    base = rng.uniform(8, 30)
    variants = tuple(
        Variant(option=o, variant_id=f"{pid}-{o}", sku=f"{pid[:8]}-{i}",
                price=money(round(base * (1 + 2.2 * i)) - 0.01 if i else round(base)),
                quantity=rng.randint(1, 40))
        for i, o in enumerate(chosen)
    )
    low = round(rng.uniform(12, 28), 1)
    name = f"{rng.choice(_WEED_NAMES)} {category if category != 'Flower' else ''}".strip()
    return Product(
        provider_id=pid, handle=f"{name.lower().replace(' ', '-')}-{serial}", name=name,
        brand=rng.choice(_WEED_BRANDS), category=category, subcategory=subcategory,
        variants=variants, strain_type=rng.choice(_STRAINS),
        thc=(low, round(low + rng.uniform(0.5, 3), 1)), cbd=(0.0, round(rng.uniform(0.1, 1), 1)),
    )


def _new_shop_product(rng: random.Random, store: StoreSpec, serial: int) -> Product:
    item = rng.choice(_SHOP_ITEMS)
    name = f"{rng.choice(_SHOP_STYLES)} {item} {serial}"
    pid = _provider_id(rng, store, serial)
    sized = item in _SIZED and store.platform != "woocommerce"
    options = ("S", "M", "L")[: rng.randint(1, 3)] if sized else ("default",)
    price = money(rng.randint(5, 60) + 0.99)
    variants = tuple(
        Variant(option=o, variant_id=f"{pid}{i + 1:02d}", sku=f"{store.index}-{serial}-{o}",
                price=price, quantity=rng.randint(1, 25))
        for i, o in enumerate(options)
    )
    return Product(
        provider_id=pid, handle=name.lower().replace(" ", "-"), name=name,
        brand=rng.choice(_SHOP_BRANDS), category="Apparel" if sized else "Goods",
        subcategory=item, variants=variants,
    )


def _evolve(sim: Simulation, previous: Catalog) -> Catalog:
    epoch = previous.epoch + 1
    rng = sim.rng(previous.store.key, epoch)
    products = [_step_product(rng, p, epoch) for p in previous.products]
    if rng.random() < 0.15:
        products.append(_new_product(rng, previous.store, len(products)))
    return Catalog(store=previous.store, epoch=epoch, products=tuple(products))


def _step_product(rng: random.Random, product: Product, epoch: int) -> Product:
    roll = rng.random()
    if product.hidden_until is not None:
        visible = epoch >= product.hidden_until
        return replace(product, hidden_until=None if visible else product.hidden_until)
    if roll < 0.05:
        return replace(product, hidden_until=epoch + rng.randint(1, 3))
    variants = tuple(_step_variant(rng, v) for v in product.variants)
    if roll > 0.96:  # sold out (dispensary: quantityAvailable 0), or restocked
        quantity = 0 if product.in_stock else rng.randint(1, 30)
        variants = tuple(replace(v, quantity=quantity) for v in variants)
    return replace(product, variants=variants)


def _step_variant(rng: random.Random, variant: Variant) -> Variant:
    roll = rng.random()
    if roll < 0.08:
        factor = Decimal(str(rng.choice((0.85, 0.9, 0.95, 1.05, 1.1, 1.2))))
        price = max(money(variant.price * factor), Decimal("1.00"))
        special = variant.special_price if variant.special_price and variant.special_price < price else None
        return replace(variant, price=price, special_price=special)
    if roll < 0.16 and variant.special_price is None:
        off = Decimal(str(rng.choice((0.7, 0.8, 0.9))))
        return replace(variant, special_price=money(variant.price * off))
    if roll > 0.7 and variant.special_price is not None:
        return replace(variant, special_price=None)
    return variant
