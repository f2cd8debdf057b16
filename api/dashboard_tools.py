"""The dashboard's tool pages: the proxy pool (`/proxies`: addresses only, disable with
a reason, enable), alert subscriptions and their deliveries (`/alerts`, with its actions:
`api.dashboard_alerts`), full-text product search (`/search`) and the schedule's runs per time slot
(`/schedule`), over the same read models and application as the API's `api.proxy_routes`,
`api.alert_routes`, product search and `api.schedule`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from api.alert_routes import AlertSender
from api.dashboard_alerts import add_alert_pages
from api.dashboard_changes import add_changes_page
from api.dashboard_kit import PageKit, Refused, first_field
from api.schedule_chart import slot_chart
from domain.errors import LedgerError
from runtime.clock import Clock
from runtime.commands import DisableProxy, EnableProxy, token_origin
from runtime.ledger import Ledger
from runtime.proxy_pool import proxy_rows
from runtime.slots import planned_load, rebalance
from runtime.tables import ProxyTable

__all__ = ["SCHEDULE_HOURS", "SCHEDULE_SLOTS", "add_tool_pages"]

#: the schedule page's slot lengths (seconds) and horizons (hours)
SCHEDULE_SLOTS = (300, 900, 1800, 3600)
SCHEDULE_HOURS = (6, 24, 48, 168)
#: search results shown
RESULTS = 50


def add_tool_pages(router: APIRouter, kit: PageKit, ledger: Ledger, clock: Clock,
                   alert_sender: AlertSender | None = None) -> None:
    proxy_stores: list[ProxyTable] = []

    def proxy_store() -> ProxyTable:
        if not proxy_stores:
            proxy_stores.append(ledger.tables.proxies)
        return proxy_stores[0]

    add_changes_page(router, kit, ledger)
    add_alert_pages(router, kit, ledger, clock, alert_sender)

    @router.get("/proxies")
    def proxies(request: Request) -> Response:
        who = kit.viewer(request)
        if who is None:
            return kit.to_login(request)
        rows = proxy_rows(ledger, proxy_store())
        return kit.render(request, "proxies.html", who, rows=rows, outcomes=who[0].take_flash())

    @router.post("/proxies/{proxy_id}/{change}")
    async def proxy_change(request: Request, proxy_id: str, change: str) -> Response:
        try:
            who, fields = await kit.acting(request)
            reason = first_field(fields, "reason").strip()[:400]
            try:
                origin = token_origin(who[1].name, who[1].scope, "dashboard", reason or None)
                if change == "disable":
                    if not reason:
                        raise Refused(422, "say why the proxy is disabled")
                    await kit.call(ledger.commands.send, DisableProxy(proxy_id, origin), clock.now())
                elif change == "enable":
                    await kit.call(ledger.commands.send, EnableProxy(proxy_id, origin), clock.now())
                else:
                    raise Refused(404, f"no proxy change {change!r}")
            except (LedgerError, ValueError) as error:
                raise Refused(409 if isinstance(error, LedgerError) else 422, str(error)) from None
        except Refused as error:
            return await kit.refused(request, error)
        await kit.remember(who, {proxy_id: f"{change}: done"})
        return RedirectResponse("/proxies", status_code=303)

    @router.get("/search")
    def search(request: Request, q: str = "", store: str = "") -> Response:
        who = kit.viewer(request)
        if who is None:
            return kit.to_login(request)
        rows: list[dict[str, Any]] = []
        error = None
        store_rows = ledger.read.stores()
        if q.strip():
            try:
                rows = ledger.read.search_products(q, store or None, limit=RESULTS)
            except LedgerError as refused_text:
                error = str(refused_text)
        return kit.render(request, "search.html", who, q=q, store=store, rows=rows, error=error,
                      stores=store_rows,
                      store_names={s["store_id"]: s["name"] for s in store_rows},
                      code=422 if error else 200)

    @router.get("/schedule")
    def schedule(request: Request, slot: int = 900, hours: int = 24) -> Response:
        who = kit.viewer(request)
        if who is None:
            return kit.to_login(request)
        slot = slot if slot in SCHEDULE_SLOTS else 900
        hours = hours if hours in SCHEDULE_HOURS else 24
        found, recurring = planned_load(ledger, clock.now(), slot, hours * 3600)
        return kit.render(request, "schedule.html", who, chart=slot_chart(found), slot=slot,
                      hours=hours, slots=SCHEDULE_SLOTS, horizons=SCHEDULE_HOURS,
                      recurring=recurring, outcomes=who[0].take_flash())

    @router.post("/schedule/rebalance")
    async def rebalance_runs(request: Request) -> Response:
        """Spread the next runs over the slots: a preview first (how many runs move, the
        spread score before and after), applied only once confirmed (as `POST
        /api/v1/schedule/rebalance`)."""
        try:
            who, fields = await kit.acting(request)
            slot, hours = _choice(fields, "slot", SCHEDULE_SLOTS, 900), _choice(
                fields, "hours", SCHEDULE_HOURS, 24)
            apply = first_field(fields, "confirmed") == "1"
            try:
                moves, before, after = await kit.call(
                    rebalance, ledger, clock.now(), apply, slot, hours * 3600,
                    token_origin(who[1].name, who[1].scope, "dashboard"))
            except (LedgerError, ValueError) as error:
                raise Refused(422, str(error)) from None
        except Refused as error:
            return await kit.refused(request, error)
        if not apply:
            return kit.render(request, "schedule_confirm.html", who, moves=len(moves),
                              before=before.score, after=after.score, slot=slot, hours=hours)
        await kit.remember(who, {"rebalance": f"{len(moves)} next runs moved; spread score "
                                              f"{before.score} -> {after.score}"})
        return RedirectResponse(f"/schedule?slot={slot}&hours={hours}", status_code=303)


def _choice(fields: dict[str, list[str]], name: str, allowed: tuple[int, ...] | list[int],
            default: int) -> int:
    """A form's whole-number field when it is one of `allowed`, else `default`."""
    text = first_field(fields, name)
    return int(text) if text.isdigit() and int(text) in allowed else default
