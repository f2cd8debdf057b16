"""Import scrapinghub/product-extraction-benchmark into tests/corpus (run once, by hand).

    python bench/corpus_import_peb.py /path/to/product-extraction-benchmark

Copies each annotated page (`dataset/html/<sha>.html.gz`, bytes unchanged) to
`.corpus-cache/pages/peb-<sha[:12]>.html.gz` (the bytes stay out of the repository, see
tests/corpus/README.md) and writes a manifest entry from the
benchmark's ground truth (price, availability; currency symbols mapped to ISO 4217
by the shop's country). `OVERRIDES` holds the corrections made when the entries
were checked by hand against each page's visible content. Entries already in the
manifest keep their hand-checked truth; only new pages are added.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
CACHE = Path(__file__).resolve().parent.parent / ".corpus-cache"
REPO = "scrapinghub/product-extraction-benchmark"
LICENCE = "MIT"

#: a symbol (or none) -> ISO 4217, by the shop's country where the symbol is ambiguous
SYMBOLS = {"€": "EUR", "£": "GBP", "EUR": "EUR", "CHF": "CHF", "BRL": "BRL", "NZD": "NZD",
           "ARS": "ARS", "Kn": "HRK", "Lei": "RON", "zł": "PLN", "тг.": "KZT", "ر.س": "SAR",
           "₹": "INR", "₽": "RUB", "원~": "KRW", "Rs": "PKR"}
BY_TLD = {"tw": "TWD", "ca": "CAD", "cl": "CLP", "ar": "ARS", "by": "BYN", "ru": "RUB",
          "il": "ILS", "kr": "KRW", "lv": "EUR", "ie": "EUR", "it": "EUR", "fr": "EUR",
          "de": "EUR", "uk": "GBP", "pk": "PKR", "kz": "KZT", "pl": "PLN"}
BY_HOST = {"www.johnlewis.com": "GBP", "www.usedvictoria.com": "CAD",
           "www.puntoticket.com": "CLP", "www.gomaji.com": "TWD"}


def currency(symbol: str | None, host: str) -> str | None:
    if symbol in SYMBOLS:
        return SYMBOLS[symbol]
    if host in BY_HOST:
        return BY_HOST[host]
    tld = host.rsplit(".", 1)[-1]
    return BY_TLD.get(tld, "USD" if tld in ("com", "net", "org") else None)


MARKETPLACES = ("amazon.", "ebay.", "alibaba.", "aliexpress.", "market.yandex.", "olx.",
                "mercadolibre.", "rakuten.", "etsy.", "ozon.", "wildberries.", "allegro.",
                "liveauctioneers.", "tmon.", "gomaji.", "emag.", "flipkart.")


def slices_for(html: bytes, url: str, truth: dict[str, object]) -> list[str]:
    """How the page carries its data (what extruct finds), and what kind of page it is."""
    import extruct
    import lxml.html

    found = extruct.extract(html, base_url=url, syntaxes=["json-ld", "microdata", "opengraph"],
                            uniform=True, errors="ignore")
    products = {syntax for syntax in ("json-ld", "microdata")
                if "Product" in json.dumps(found.get(syntax, []))}
    og_price = "price:amount" in json.dumps(found.get("opengraph", []))
    slices = sorted(s.replace("json-ld", "jsonld") for s in products)
    if og_price:
        slices.append("opengraph_price")
    if not products and not og_price:
        slices.append("no_structured_data")
    host = urlsplit(url).hostname or ""
    if any(m in host for m in MARKETPLACES):
        slices.append("marketplace")
    if truth.get("availability") == "out_of_stock":
        slices.append("out_of_stock")
    lang = (lxml.html.fromstring(html).get("lang") or "").lower()
    if not lang.startswith("en") and not host.endswith((".com", ".uk", ".ie", ".ca")):
        slices.append("non_english")
    return slices


def main(repo_dir: Path) -> None:
    commit = subprocess.run(["git", "-C", str(repo_dir), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    truth = json.loads((repo_dir / "dataset" / "ground-truth.json").read_text())
    manifest_path = CORPUS / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    known = {entry["id"] for entry in manifest}
    overrides = json.loads((CORPUS / "peb-overrides.json").read_text())
    for sha, item in sorted(truth.items()):
        entry_id = f"peb-{sha[:12]}"
        if entry_id in known:
            continue
        host = urlsplit(item["url"]).hostname or ""
        prices = [Decimal(p.strip()) for p in item.get("price", [])]
        target = CACHE / "pages" / f"{entry_id}.html.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo_dir / "dataset" / "html" / f"{sha}.html.gz", target)
        entry = {
            "id": entry_id, "file": f"pages/{entry_id}.html.gz", "url": item["url"],
            "shop": host.removeprefix("www."), "slices": [],
            "source": {"repo": REPO, "path": f"dataset/html/{sha}.html.gz", "commit": commit,
                       "licence": LICENCE},
            "truth": {
                "price": [format(p, "f") for p in prices] or None,
                "currency": currency((item.get("currency") or [None])[0], host) if prices
                else None,
                "regular_price": None,
                "availability": {"InStock": "in_stock", "OutOfStock": "out_of_stock"}.get(
                    item["availability"][0]),
            },
        }
        checked = dict(overrides.get(entry_id, {}))
        if "note" in checked:
            entry["checked"] = checked.pop("note")
        entry["truth"].update(checked)
        entry["slices"] = slices_for(gzip.decompress(target.read_bytes()), item["url"],
                                     entry["truth"])
        manifest.append(entry)
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(manifest)} entries in {manifest_path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
