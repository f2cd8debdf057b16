"""`connect(dataset_dir)`: an in-memory DuckDB with views over the Parquet datasets.

Base views (one per dataset): `price_observations`, `stock_events`,
`job_runs`, `job_states`. Derived views:

- `products_latest`: the latest observation per product, pricing type and option;
  read from the writer's materialised `products_latest.parquet` plus any
  observation after the position it covers (so it is never stale);
- `price_changes`: every regular-price change the ledger recorded
  (`Product.PriceChanged` with old and new price), from the writer's
  `price_changes` dataset, with `old_price`, `new_price`, `abs_change`, `pct_change`.

Table macros `product_as_of(ts)` and `job_as_of(ts)` (analytics/as_of_macros.py) give each
product's and job's state as the ledger knew it at `ts`.

No view runs a window over every observation (see docs/analytics.md, Performance).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from analytics.as_of_macros import AS_OF_MACROS
from analytics.schema import DATASETS
from projections.parquet_writer import FILES, LATEST, latest_through

LATEST_KEY = ("PARTITION BY product_id, pricing_type, option "
              "ORDER BY observed_at DESC, position DESC")

PRODUCTS_LATEST = f"""
CREATE OR REPLACE VIEW products_latest AS
SELECT * FROM price_observations
QUALIFY row_number() OVER ({LATEST_KEY}) = 1
"""

#: the materialised rows plus the tail after them; duplicates (a reader older than the
#: file) collapse in the window, which now runs over ~one row per key, not every row
PRODUCTS_LATEST_MATERIALISED = """
CREATE OR REPLACE VIEW products_latest AS
SELECT * FROM (
    SELECT * FROM read_parquet({path})
    UNION ALL BY NAME
    SELECT * FROM price_observations WHERE position > {through})
QUALIFY row_number() OVER ({key}) = 1
"""

PRICE_CHANGES = """
CREATE OR REPLACE VIEW price_changes AS
SELECT changed_at, previous_at, store_id, store_name, product_id, name, brand,
       category, option, pricing_type, currency, old_price, new_price,
       old_special_price, new_special_price,
       new_price - old_price AS abs_change,
       round(100 * (new_price - old_price) / old_price, 2)::DOUBLE AS pct_change,
       event_id, position, job_id, provider_product_id, date
FROM {source}
"""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _source(root: Path, name: str) -> str:
    """The dataset's files (globbed per query, so new parts show up), or a typed empty set."""
    if any((root / name).glob(FILES)):  # date parts and month files; each has `date`
        pattern = _quote(str(root / name / FILES))
        return f"read_parquet({pattern}, hive_partitioning = false)"
    typed = ", ".join(f"CAST(NULL AS {kind}) AS {column}" for column, kind in DATASETS[name].items())
    return f"(SELECT {typed} WHERE false)"


def _products_latest(root: Path) -> str:
    through = latest_through(root)
    if through is None:
        return PRODUCTS_LATEST.strip()
    return PRODUCTS_LATEST_MATERIALISED.format(
        path=_quote(str(root / LATEST)), through=through, key=LATEST_KEY).strip()


def view_statements(dataset_dir: Path | str) -> list[str]:
    """The SQL that creates every view and macro (also written out for the DuckDB CLI)."""
    root = Path(dataset_dir).resolve()
    base = [f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {_source(root, name)}"
            for name in DATASETS if name != "price_changes"]
    return [*base, _products_latest(root),
            PRICE_CHANGES.format(source=_source(root, "price_changes")).strip(), *AS_OF_MACROS]


def create_views(con: duckdb.DuckDBPyConnection, dataset_dir: Path | str) -> None:
    """(Re)create every view on `con` over the datasets in `dataset_dir`."""
    for statement in view_statements(dataset_dir):
        con.execute(statement)


def connect(dataset_dir: Path | str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the dataset views (empty if nothing yet).

    Parquet footers are cached per connection: repeated lookups skip re-reading them.
    """
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")
    create_views(con, dataset_dir)
    return con
