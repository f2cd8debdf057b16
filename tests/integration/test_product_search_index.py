"""The product search index as a read model, on both backends: it equals a rebuild
(and `verify` catches an index out of step with its table), a read model from before
it gets it on catch-up, its results agree with a plain reading of the documents, and
no user text makes a query fail, widen or touch anything."""

from __future__ import annotations

import re
from pathlib import Path

import backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_fixtures import PRODUCTS, seeded

from domain.errors import InvalidInput
from ledger.bootstrap import Ledger
from projections.framework import table_rows
from projections.product_search import ProductSearchProjection
from projections.rebuild import rebuild, verify
from projections.search import search_table

QUERIES = ("blue", "blue dre", "dream", "green leaf", "citrus", "kush", "fl", "jeeter pre")
EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def results(ledger: Ledger) -> dict[str, list[str]]:
    return {q: [r["product_id"] for r in ledger.read.search_products(q)] for q in QUERIES}


def ensure_seeded(ledger: Ledger) -> None:
    ledger.catch_up()
    if not ledger.read.stores():
        seeded(ledger)


def test_a_rebuild_finds_what_the_live_index_found(ledger: Ledger) -> None:
    seeded(ledger)
    live = results(ledger)
    assert all(live.values())
    rebuild(ledger.source, ledger.db, ledger.projections)
    assert results(ledger) == live


def test_verify_compares_the_documents_and_checks_the_index(ledger: Ledger) -> None:
    seeded(ledger)
    comparisons = {c.table: c for c in verify(ledger.source, ledger.db, ledger.projections)}
    assert comparisons["product_search"].equal and comparisons["product_search"].live_rows == 5
    assert comparisons["search_stores"].equal
    assert comparisons["product_search search index"].equal


def test_verify_catches_an_index_out_of_step_with_its_table(tmp_path: Path) -> None:
    """SQLite's index is a table of its own (PostgreSQL's is a generated column)."""
    with backends.store_url("sqlite", tmp_path) as url, \
            backends.open_ledger(url, tmp_path) as ledger:
        seeded(ledger)
        fts = search_table("product_search")
        with ledger.db.transaction() as tx:  # the table keeps the row; the index loses it
            tx.execute(f"INSERT INTO {fts} ({fts}, rowid, name, brand, category, store_name, "
                       "description) SELECT 'delete', rowid, name, brand, category, "
                       "store_name, description FROM product_search LIMIT 1")
        comparisons = {c.table: c for c in verify(ledger.source, ledger.db, ledger.projections)}
        assert comparisons["product_search"].equal
        assert not comparisons["product_search search index"].equal


def test_a_read_model_from_before_search_gets_it_on_catch_up(ledger: Ledger) -> None:
    seeded(ledger)
    found = results(ledger)
    ProductSearchProjection().drop(ledger.db)  # as an older version left the read models
    for projection in ledger.projections():  # what opening the ledger does
        projection.create(ledger.db)
    ledger.catch_up()
    assert results(ledger) == found


def test_a_product_seen_before_its_store_ends_as_in_log_order(ledger: Ledger) -> None:
    """A Kafka projector reads stores and products from different topics: whichever
    comes first, the documents end as a rebuild in log order makes them."""
    seeded(ledger)
    envelopes = ledger.source.read(0, 1000)
    products = [e for e in envelopes if e.event_type.startswith("Product.")]
    stores = [e for e in envelopes if e.event_type.startswith("Store.")]
    for batches in ([products, stores], [products + stores]):
        projection = ProductSearchProjection(prefix="kafka_")
        projection.drop(ledger.db)
        projection.create(ledger.db)
        for batch in batches:
            with ledger.db.transaction() as tx:
                projection.apply(tx, batch)
        for table in projection.tables:
            assert table_rows(ledger.db, table, "kafka_") == table_rows(ledger.db, table, "")
        projection.drop(ledger.db)


def _tokens(*texts: str | None) -> set[str]:
    return {w for t in texts if t for w in re.findall(r"[^\W_]+", t.lower())}


DOCUMENTS = {name: _tokens(name, brand, category, description, "Green Leaf")
             for name, brand, category, description in PRODUCTS}
VOCABULARY = sorted(w for words in DOCUMENTS.values() for w in words if w.isascii())


@EXAMPLES
@given(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3), st.integers(1, 12),
       st.sampled_from([" ", "  ", ", ", " -", '" ', " (", " * ", ":"]))
def test_results_are_the_documents_holding_every_word(ledger: Ledger, words: list[str],
                                                      cut: int, between: str) -> None:
    """Against a plain reading of the documents: every word a whole word of one of its
    columns, the last a word's start."""
    ensure_seeded(ledger)
    *whole, last = words
    last = last[:cut]
    expected = {name for name, tokens in DOCUMENTS.items()
                if set(whole) <= tokens and any(t.startswith(last) for t in tokens)}
    assert set(names := [r["name"] for r in ledger.read.search_products(
        between.join([*whole, last]))]) == expected
    assert len(names) == len(expected)


SYNTAX = st.text(alphabet=st.sampled_from(list('"*()-:^&|!<>\'{}[]+~;%_\\ NEARANDORTabé1')),
                 min_size=1, max_size=40)


@EXAMPLES
@given(st.one_of(SYNTAX, st.text(min_size=1, max_size=60)))
def test_no_text_breaks_a_query_or_widens_it(ledger: Ledger, text: str) -> None:
    """Query syntax in the text (quotes, *, AND, NEAR, :, &, !, parentheses) is only
    words: a query never fails, and a word found nowhere still finds nothing."""
    ensure_seeded(ledger)
    try:
        assert len(ledger.read.search_products(text)) <= len(PRODUCTS)
    except InvalidInput:
        pass
    assert ledger.read.search_products(f"{text} zqxj") == []
    assert ledger.read.search_products(f"zqxj {text} ") == []


def test_sql_in_the_text_is_only_words(ledger: Ledger) -> None:
    seeded(ledger)
    for text in ("'; DROP TABLE product_search; --", "x') OR 1=1 --", "blue\" OR \"1\"=\"1"):
        assert ledger.read.search_products(text) == []
    assert len(ledger.read.products()) == len(PRODUCTS)
    assert len(ledger.read.search_products("green")) == len(PRODUCTS)
