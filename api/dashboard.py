"""The web dashboard: server-rendered pages (Jinja2) over the same commands and read
models as the API, served by `crawl-ledger serve` at `/`.

Pages: overview, jobs (filters, sort, pagination, bulk actions with a result per
row), a job's live event timeline, stores (enable/disable with a reason, crawl
delay), products (search, filters) with a price and stock chart, workers, and a live
event tail. Sign-in takes a token and opens a session (`api.sessions`); every form
carries the session's CSRF secret; a read-scope session sees no action and is
refused (403) if it posts one. Every asset is served from the package (`/static`):
the pages reference nothing outside the server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from api.alert_routes import AlertSender
from api.auth import Token, allows
from api.chart import RANGES, build_chart
from api.consistency import Writes, lag
from api.dashboard_kit import PageKit, Refused, first_field
from api.dashboard_tools import add_tool_pages
from api.event_rows import event_page, stream_links, timeline_row
from api.formatting import money, stock
from api.hourly_chart import hourly_chart
from api.sessions import COOKIE, Session, Sessions
from domain.errors import LedgerError
from domain.job_operations import ACTION_STATES, actions_for
from projections.dashboard import JOB_SORTS, PRODUCT_SORTS, DashboardQueries
from projections.queries import JOB_STATES
from runtime.clock import Clock
from runtime.commands import (
    JOB_CONTROLS,
    ChangeStorePolicy,
    Command,
    DisableStore,
    EnableStore,
    Origin,
    RequeueDead,
    token_origin,
)
from runtime.heartbeats import Heartbeats, registry
from runtime.history import stream_history
from runtime.ledger import Ledger
from runtime.raw_pages import page_behind

__all__ = ["FORM_MAX_BYTES", "STATIC", "build_dashboard"]

STATIC = resources.files("api") / "static"
PAGE = 50
#: the largest form a dashboard page posts (also the body cap of its routes, `api.app`)
FORM_MAX_BYTES = 64 * 1024
#: the overview's results and failures per hour come from the latest events
RECENT_EVENTS = 5000

#: single-job actions asked again on a confirmation page before they are sent
CONFIRMED_ACTIONS = frozenset({"cancel"})

_env = Environment(loader=PackageLoader("api", "templates"),
                   autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
_env.filters["money"] = money
_env.filters["stock"] = stock


def build_dashboard(ledger: Ledger, sessions: Sessions, clock: Clock, writes: Writes,
                    relay_position: Callable[[], int] | None = None,
                    alert_sender: AlertSender | None = None) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    queries = DashboardQueries(ledger.db)
    heartbeats = Heartbeats(ledger.tables.heartbeats)
    #: the overview's results per hour and the log head they were read at
    hourly_at: list[Any] = [-1, []]

    def write(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A write as the server's writes (`api.consistency.Writes`); on a worker thread."""
        with writes:
            return function(*args, **kwargs)

    async def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A write from an async handler, off the event loop: `Writes` may wait for the
        projector, and a waiting handler must not stall every other request."""
        return await run_in_threadpool(write, function, *args, **kwargs)

    async def remember(who: tuple[Session, Token], outcomes: dict[str, str]) -> None:
        """The outcomes the next page shows once (kept in the session's table row)."""
        await run_in_threadpool(setattr, who[0], "flash", outcomes)

    async def send(command: Command) -> Any:
        return await call(ledger.commands.send, command, clock.now())

    def by(token: Token, fields: dict[str, list[str]]) -> Origin:
        """The signed-in token as the actor; the form's reason, if it gave one."""
        return token_origin(token.name, token.scope, "dashboard",
                            (fields.get("reason") or [""])[0][:500])

    def render(request: Request, template: str, who: tuple[Session, Token] | None,
               code: int = 200, **context: Any) -> HTMLResponse:
        session, token = who if who else (None, None)
        html = _env.get_template(template).render(
            request=request, path=request.url.path, token=token,
            can_operate=bool(token and allows(token.scope, "operate")),
            csrf=session.csrf if session else "", states=JOB_STATES, **context)
        return HTMLResponse(html, status_code=code, headers=_HEADERS)

    def viewer(request: Request) -> tuple[Session, Token] | None:
        return sessions.get(request.cookies.get(COOKIE))

    def to_login(request: Request) -> RedirectResponse:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?{urlencode({'next': target})}", status_code=303)

    async def form(request: Request) -> dict[str, list[str]]:
        body = await request.body()
        if len(body) > FORM_MAX_BYTES:
            raise Refused(413, "the form is too large")
        return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)

    async def acting(request: Request) -> tuple[tuple[Session, Token], dict[str, list[str]]]:
        """A signed-in operator's form, with its CSRF secret checked."""
        who = await run_in_threadpool(viewer, request)  # a table read: off the event loop
        if who is None:
            raise Refused(401, "sign in first")
        fields = await form(request)
        if not Sessions.csrf_ok(who[0], (fields.get("csrf") or [""])[0]):
            raise Refused(403, "the form's CSRF token is missing or stale: reload the page")
        if not allows(who[1].scope, "operate"):
            raise Refused(403, f"a {who[1].scope} token cannot change jobs or stores")
        return who, fields

    async def refusal(request: Request, error: Refused) -> HTMLResponse:
        """`refused` from an async handler: the viewer is a table read, off the event loop."""
        return await run_in_threadpool(refused, request, error)

    def refused(request: Request, error: Refused) -> HTMLResponse:
        return render(request, "refused.html", viewer(request), code=error.status,
                      detail=error.detail)

    # sign-in -----------------------------------------------------------------------
    @router.get("/login")
    def login_page(request: Request, next: str = "/") -> HTMLResponse:  # noqa: A002
        return render(request, "login.html", None, next=_local(next), error=None)

    @router.post("/login")
    async def login(request: Request) -> Response:
        try:
            fields = await form(request)
        except Refused as error:
            return await refusal(request, error)
        target = _local((fields.get("next") or ["/"])[0])
        opened = await run_in_threadpool(sessions.open, (fields.get("token") or [""])[0].strip())
        if opened is None:
            return render(request, "login.html", None, code=401, next=target,
                          error="That token is not valid (or is a bot token).")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, opened[0], httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path="/")
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        who = await run_in_threadpool(viewer, request)
        fields = await form(request)
        if who is not None and Sessions.csrf_ok(who[0], (fields.get("csrf") or [""])[0]):
            await run_in_threadpool(sessions.close, request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # pages -------------------------------------------------------------------------
    @router.get("/")
    def overview(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        now = clock.now()
        head, behind = lag(ledger)
        if hourly_at[0] != head:  # the same log head: the same hours
            hourly_at[:] = [head, _hourly(ledger.source.read_types(
                max(0, head - RECENT_EVENTS), RECENT_EVENTS, _HOURLY_TYPES))]
        hourly = hourly_at[1]
        counts = ledger.read.job_counts()
        failing = queries.failing_reasons()
        upcoming = queries.upcoming(now)
        workers = registry(ledger, heartbeats, now)
        relay_lag = None if relay_position is None else max(0, head - relay_position())
        return render(request, "overview.html", who, counts=counts, failing=failing,
                      hourly=hourly, hourly_chart=hourly_chart(hourly), upcoming=upcoming,
                      head=head, lag=behind,
                      relay_lag=relay_lag, stale=[w for w in workers if w["state"] == "stale"],
                      workers=len(workers))

    @router.get("/jobs")
    def jobs(request: Request, state: str = "", store: str = "", kind: str = "", q: str = "",
             sort: str = "next_run_at", desc: bool = False, page: int = 1) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        return jobs_page(request, who, state, store, kind, q, sort, desc, page,
                         who[0].take_flash())

    def jobs_page(request: Request, who: tuple[Session, Token], state: str, store: str,
                  kind: str, q: str, sort: str, desc: bool, page: int,
                  outcomes: dict[str, str]) -> HTMLResponse:
        sort = sort if sort in JOB_SORTS else "next_run_at"
        page = max(1, min(page, 100_000))
        rows, total = queries.job_table(state if state in JOB_STATES else None,
                                        store or None, kind or None, q[:200] or None,
                                        sort, desc, (page - 1) * PAGE, PAGE)
        stores = ledger.read.stores()
        filters = {"state": state, "store": store, "kind": kind, "q": q, "sort": sort,
                   "desc": "1" if desc else ""}
        return render(request, "jobs.html", who, rows=rows, total=total, page=page,
                      pages=max(1, -(-total // PAGE)), filters=filters, sorts=JOB_SORTS,
                      stores=stores, store_names={s["store_id"]: s["name"] for s in stores},
                      outcomes=outcomes, query=_query(filters), allowed_from=ACTION_STATES)

    @router.post("/jobs/actions")
    async def bulk(request: Request) -> Response:
        """Asks first (a confirmation page), then acts and redirects to the jobs page,
        which shows each job's outcome once."""
        try:
            who, fields = await acting(request)
            action, ids = first_field(fields, "action"), (fields.get("ids") or [])[:500]
            if action != "requeue-dead" and action not in JOB_CONTROLS:
                raise Refused(422, f"unknown action {action!r}" if action
                              else "choose an action for the selected jobs")
            if action != "requeue-dead" and not ids:
                raise Refused(422, "select at least one job first")
        except Refused as error:
            return await refusal(request, error)
        back = {k: first_field(fields, k) for k in ("state", "store", "kind", "q", "sort")}
        if first_field(fields, "confirmed") != "1":
            return await run_in_threadpool(
                confirm, request, who, action, ids, "/jobs/actions", "/jobs?" + _query(back),
                first_field(fields, "reason"), back)
        await remember(who, await run_in_threadpool(run_bulk, action, ids, by(who[1], fields)))
        return RedirectResponse("/jobs?" + _query(back), status_code=303)

    def run_bulk(action: str, ids: list[str], origin: Origin) -> dict[str, str]:
        outcomes: dict[str, str] = {}
        if action == "requeue-dead":
            writes.settle()  # the dead jobs the read models know of, this server's writes too
            dead = [r["job_id"] for r in ledger.read.jobs(state="dead")]
            for requeued in write(ledger.commands.send, RequeueDead(dead, origin), clock.now()):
                outcomes[str(requeued)] = "requeued"
            return outcomes or {"": "no dead job to requeue"}
        for job_id in ids:
            try:
                write(ledger.commands.send, JOB_CONTROLS[action](job_id, origin), clock.now())
                outcomes[job_id] = f"{action}: done"
            except (LedgerError, ValueError) as error:
                outcomes[job_id] = f"{action} refused: {error}"
        return outcomes

    def confirm(request: Request, who: tuple[Session, Token], action: str, ids: list[str],
                target: str, back_to: str, reason: str, hidden: dict[str, str]) -> HTMLResponse:
        """The page that asks before an action is sent (no script needed)."""
        found = [ledger.read.job(i) for i in ids] if action != "requeue-dead" else \
            ledger.read.jobs(state="dead")
        jobs = [j for j in found if j is not None]
        return render(request, "confirm.html", who, action=action, jobs=jobs, ids=ids,
                      target=target, back_to=back_to, reason=reason, hidden=hidden,
                      allowed=ACTION_STATES.get(action))

    @router.get("/jobs/{job_id}")
    def job(request: Request, job_id: str) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        try:
            found = ledger.app.get_job(job_id)
            head = ledger.source.head()  # before the history: the stream may repeat one
            status = ledger.read.job(str(found.id))
            history = stream_history(ledger, found.id)
        except (LedgerError, ValueError) as error:
            return refused(request, Refused(404, str(error)))
        return render(request, "job.html", who, job_id=str(found.id), status=status, head=head,
                      history=[timeline_row(e) for e in history], actions=list(JOB_CONTROLS),
                      allowed=actions_for(found.state), allowed_from=ACTION_STATES,
                      outcomes=who[0].take_flash())

    @router.post("/jobs/{job_id}/action")
    async def job_action(request: Request, job_id: str) -> Response:
        try:
            who, fields = await acting(request)
            action = first_field(fields, "action")
            if action not in JOB_CONTROLS:
                raise Refused(422, f"unknown action {action!r}")
            if action in CONFIRMED_ACTIONS and first_field(fields, "confirmed") != "1":
                return await run_in_threadpool(
                    confirm, request, who, action, [job_id], f"/jobs/{job_id}/action",
                    f"/jobs/{job_id}", first_field(fields, "reason"), {})
            try:
                await send(JOB_CONTROLS[action](job_id, by(who[1], fields)))
            except (LedgerError, ValueError) as error:
                raise Refused(409, f"{action} refused: {error}") from None
        except Refused as error:
            return await refusal(request, error)
        await remember(who, {job_id: f"{action}: done"})
        return RedirectResponse(f"/jobs/{job_id}", status_code=303)

    @router.get("/jobs/{job_id}/raw")
    def raw_page(request: Request, job_id: str, at: str = "") -> Response:
        """The page a run of this job stored (the chart's points link here), as plain
        text in a sandbox: a crawled page is never rendered on this origin."""
        who = viewer(request)
        if who is None:
            return to_login(request)
        try:
            when = datetime.fromisoformat(at) if at else clock.now()
            found = page_behind(ledger, job_id, when)
        except (LedgerError, ValueError) as error:
            return refused(request, Refused(404, str(error)))
        return Response(found.body, media_type="text/plain; charset=utf-8", headers={
            **_HEADERS, "Content-Security-Policy": "default-src 'none'; sandbox",
            "X-Crawl-Ledger-Raw-Ref": found.raw_ref,
            "Content-Disposition": f'inline; filename="{found.raw_ref.split(":")[-1]}.txt"'})

    @router.get("/stores")
    def stores(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        rows = ledger.read.stores()
        results = queries.store_results()
        return render(request, "stores.html", who, rows=rows, results=results)

    @router.post("/stores/{store_id}/{change}")
    async def store_change(request: Request, store_id: str, change: str) -> Response:
        try:
            (_, token), fields = await acting(request)
            value = (fields.get("reason") or fields.get("crawl_delay") or [""])[0].strip()
            try:
                if change == "disable":
                    if not value:
                        raise Refused(422, "say why the store is disabled")
                    await send(DisableStore(store_id, by(token, fields)))
                elif change == "enable":
                    await send(EnableStore(store_id, by(token, fields)))
                elif change == "policy":
                    delay = float(value)
                    if not 0 <= delay <= 86400:
                        raise Refused(422, "the crawl delay must be 0..86400 seconds")
                    await send(ChangeStorePolicy(store_id, delay, by(token, fields)))
                else:
                    raise Refused(404, f"no store change {change!r}")
            except (LedgerError, ValueError) as error:
                raise Refused(409 if isinstance(error, LedgerError) else 422, str(error)) from None
        except Refused as error:
            return await refusal(request, error)
        return RedirectResponse("/stores", status_code=303)

    @router.get("/products")
    def products(request: Request, q: str = "", store: str = "", out_of_stock: bool = False,
                 min_price: str = "", max_price: str = "", sort: str = "name",
                 page: int = 1) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        low, high = _decimal(min_price), _decimal(max_price)
        page = max(1, min(page, 100_000))
        rows, total = queries.product_table(q[:200] or None, store or None, out_of_stock,
                                            low, high, sort if sort in PRODUCT_SORTS
                                            else "name", (page - 1) * PAGE, PAGE)
        store_rows = ledger.read.stores()
        filters = {"q": q, "store": store, "out_of_stock": "1" if out_of_stock else "",
                   "min_price": min_price, "max_price": max_price, "sort": sort}
        return render(request, "products.html", who, rows=rows, total=total, page=page,
                      more=len(rows) == PAGE, filters=filters, stores=store_rows,
                      store_names={s["store_id"]: s["name"] for s in store_rows},
                      sorts=PRODUCT_SORTS, query=_query(filters))

    @router.get("/products/{product_id}")
    def product(request: Request, product_id: str,
                chart_range: str = Query("all", alias="range")) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        try:
            found = ledger.app.get_product(product_id)
            status = ledger.read.product(str(found.id))
            image = ledger.read.product_image(str(found.id))
            history = stream_history(ledger, found.id)
        except (LedgerError, ValueError) as error:
            return refused(request, Refused(404, str(error)))
        chart_range = chart_range if chart_range in RANGES else "all"
        return render(request, "product.html", who, product=status, product_id=str(found.id),
                      image=image, chart=build_chart(history, chart_range),
                      chart_range=chart_range, ranges=_RANGE_LABELS,
                      history=[timeline_row(e) for e in history[-50:]])

    @router.get("/workers")
    def workers(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        rows = registry(ledger, heartbeats, clock.now())
        return render(request, "workers.html", who, rows=rows)

    add_tool_pages(router, PageKit(viewer, render, to_login, acting, refusal, call, remember),
                   ledger, clock, alert_sender)

    @router.get("/events")
    def events(request: Request, type: str = "", stream: str = "",  # noqa: A002
               before: int = 0) -> Response:
        who = viewer(request)
        if who is None:
            return to_login(request)
        type, stream = type.strip()[:100], stream.strip().lower()[:36]  # noqa: A001
        head = ledger.source.head()
        found = event_page(ledger.source, before if 0 < before <= head else head + 1,
                           type, stream)
        links = stream_links(ledger.read, found.events)
        filters = {"type": type, "stream": stream}
        return render(request, "events.html", who, head=head, type=type, stream=stream,
                      rows=[timeline_row(e, links) for e in found.events], older=found.older,
                      latest=not before, query=_query(filters))

    return router


#: every page: only this server's assets, no framing, no sniffing
_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                       "frame-ancestors 'none'; form-action 'self'",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store"}


def _local(target: str) -> str:
    """Only a path on this server (no open redirect)."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text.strip()) if text.strip() else None
    except InvalidOperation:
        return None
    return value if value is None or value.is_finite() else None


def _query(filters: dict[str, str]) -> str:
    return urlencode({k: v for k, v in filters.items() if v})


#: the product chart's ranges as its picker names them
_RANGE_LABELS = [("7d", "7 days"), ("30d", "30 days"), ("all", "all")]

#: the event types `_hourly` counts
_HOURLY_TYPES = frozenset({"CrawlJob.Succeeded", "CrawlJob.Failed"})


def _hourly(events: list[Any]) -> list[tuple[str, int, dict[str, int]]]:
    """Results and failures per hour (by reason) in the latest events."""
    hours: dict[str, tuple[int, dict[str, int]]] = {}
    for env in events:
        if env.event_type == "CrawlJob.Succeeded":
            ok, failed = hours.get(env.occurred_at[:13], (0, {}))
            hours[env.occurred_at[:13]] = (ok + 1, failed)
        elif env.event_type == "CrawlJob.Failed":
            ok, failed = hours.get(env.occurred_at[:13], (0, {}))
            reason = str(env.payload.get("error_kind") or "failed")
            failed[reason] = failed.get(reason, 0) + 1
            hours[env.occurred_at[:13]] = (ok, failed)
    return [(hour, ok, failed) for hour, (ok, failed) in sorted(hours.items())][-24:]
