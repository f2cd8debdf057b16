"""The control app: store locator, link feeds, and the `/__sim/*` admin API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from simulator import feeds
from simulator.state import SimState
from simulator.truth import record_json

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ControlApp:
    """Routes of the control port; requests are recorded with `store=None`."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    def build(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        routes = app.router
        routes.add_get("/", self.index)
        routes.add_get("/locator.json", self.locator)
        routes.add_get("/feeds/rss.xml", self.rss)
        routes.add_get("/feeds/atom.xml", self.atom)
        routes.add_get("/feeds/social.json", self.social)
        routes.add_get("/__sim/truth", self.truth)
        routes.add_get("/__sim/requests", self.requests)
        routes.add_post("/__sim/epoch", self.epoch)
        routes.add_get("/__sim/stores", self.stores)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        epoch = self.state.epoch
        try:
            response = await handler(request)
        except web.HTTPException as error:
            self._record(request, epoch, error.status)
            raise
        self._record(request, epoch, response.status)
        return response

    def _record(self, request: web.Request, epoch: int, status: int) -> None:
        self.state.log.record(None, epoch, request.method, request.path,
                              request.query_string, status)

    def _items(self) -> tuple[feeds.FeedItem, ...]:
        return feeds.feed_items(self.state.simulation, self.state.urls, self.state.epoch)

    async def index(self, request: web.Request) -> web.Response:
        links = ["/locator.json", "/feeds/rss.xml", "/feeds/atom.xml", "/feeds/social.json",
                 "/__sim/truth", "/__sim/requests", "/__sim/stores"]
        items = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
        html = f"<!DOCTYPE html><html><body><h1>Store simulator</h1><ul>{items}</ul></body></html>"
        return web.Response(text=html, content_type="text/html")

    async def locator(self, request: web.Request) -> web.Response:
        return web.json_response(feeds.locator(self.state.simulation, self.state.urls))

    async def rss(self, request: web.Request) -> web.Response:
        text = feeds.rss(self._items(), self.state.control_url)
        return web.Response(text=text, content_type="application/rss+xml")

    async def atom(self, request: web.Request) -> web.Response:
        text = feeds.atom(self._items(), self.state.control_url)
        return web.Response(text=text, content_type="application/atom+xml")

    async def social(self, request: web.Request) -> web.Response:
        return web.json_response(feeds.social(self._items()))

    async def truth(self, request: web.Request) -> web.Response:
        raw = request.query.get("epoch")
        if raw is not None and not raw.isdigit():
            raise web.HTTPBadRequest(text="epoch must be a non-negative integer\n")
        return web.json_response(self.state.truth(None if raw is None else int(raw)))

    async def requests(self, request: web.Request) -> web.Response:
        store = request.query.get("store")
        records = self.state.log.requests(store) if store else self.state.log.requests()
        return web.json_response({"requests": [record_json(r) for r in records]})

    async def epoch(self, request: web.Request) -> web.Response:
        """Body `{"epoch": E}` sets the epoch; no body (or `{}`) advances it by one."""
        try:
            body = await request.json() if request.can_read_body else {}
        except ValueError:
            raise web.HTTPBadRequest(text="body must be JSON\n") from None
        value = body.get("epoch") if isinstance(body, dict) else None
        if value is None:
            return web.json_response({"epoch": self.state.advance()})
        if not isinstance(value, int) or value < 0:
            raise web.HTTPBadRequest(text="epoch must be a non-negative integer\n")
        return web.json_response({"epoch": self.state.set_epoch(value)})

    async def stores(self, request: web.Request) -> web.Response:
        return web.json_response({"epoch": self.state.epoch, "stores": [
            {"key": s.key, "name": s.name, "platform": s.platform, "slug": s.slug,
             "platform_id": s.platform_id, "currency": s.currency,
             "url": self.state.urls[s.key],
             "entry_url": feeds.entry_url(s, self.state.urls[s.key])}
            for s in self.state.simulation.stores
        ]})
