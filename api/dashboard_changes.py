"""The dashboard's changes page (`/changes`): what changed today or in the last 7 days
— the biggest price drops and rises, back in stock, gone — counted back from the
ledger's latest crawl time (`projections.changes`), not the wall clock, so a ledger
replayed or simulated in the past shows its own "today"."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from api.dashboard_kit import PageKit
from projections.changes import ChangeQueries, period_start
from runtime.ledger import Ledger

__all__ = ["PERIODS", "SECTIONS", "add_changes_page"]

#: the period switch: query value -> (days, label)
PERIODS = {"today": (1, "today"), "7d": (7, "7 days")}
#: the page's sections in order: kind -> heading
SECTIONS = {"drop": "Biggest drops", "rise": "Biggest rises", "back": "Back in stock",
            "gone": "Gone"}
#: rows shown per section
SECTION_ROWS = 25


def add_changes_page(router: APIRouter, kit: PageKit, ledger: Ledger) -> None:
    queries = ChangeQueries(ledger.db)

    @router.get("/changes")
    def changes(request: Request, period: str = "today", store: str = "",
                category: str = "") -> Response:
        who = kit.viewer(request)
        if who is None:
            return kit.to_login(request)
        period = period if period in PERIODS else "today"
        found = _sections(queries, PERIODS[period][0], store, category)
        store_rows = ledger.read.stores()
        return kit.render(request, "changes.html", who, period=period, periods=PERIODS,
                          store=store, category=category, stores=store_rows,
                          store_names={s["store_id"]: s["name"] for s in store_rows},
                          headings=SECTIONS, **found)


def _sections(queries: ChangeQueries, days: int, store: str, category: str) -> dict[str, Any]:
    latest = queries.latest_at()
    if latest is None:
        return {"latest": None, "since": None, "sections": {}, "categories": []}
    since = period_start(latest, days)
    sections = {kind: queries.section(kind, since, store or None, category or None,
                                      limit=SECTION_ROWS) for kind in SECTIONS}
    # the shown rows' categories: listing every category would read every product
    shown = {row["category"] for rows in sections.values() for row in rows if row["category"]}
    return {"latest": latest, "since": since, "sections": sections,
            "categories": sorted(shown | ({category} if category else set()))}
