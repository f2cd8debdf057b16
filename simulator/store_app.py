"""The aiohttp app of one simulated store (served on its own port).

A middleware decides, per request, whether the store's planned fault for the
current epoch applies (never to robots.txt), and records every request served.
"""

from __future__ import annotations

import asyncio
import functools
import io
from collections.abc import Awaitable, Callable

from aiohttp import web
from PIL import Image, ImageDraw

from simulator import api_formats, html_formats
from simulator.catalog import Catalog, Product, StoreSpec
from simulator.faults import PlannedFault
from simulator.state import SimState

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
EPOCH = web.RequestKey("epoch", int)


@functools.cache
def product_jpeg() -> bytes:
    """Every simulated product's picture: one small real JPEG (48x32)."""
    image = Image.new("RGB", (48, 32), (236, 240, 232))
    draw = ImageDraw.Draw(image)
    draw.rectangle((8, 6, 40, 26), fill=(46, 125, 50))
    draw.ellipse((18, 10, 30, 22), fill=(250, 250, 250))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=70)
    return out.getvalue()


class StoreApp:
    """Routes and handlers for one store; build the app with `build()`."""

    def __init__(self, state: SimState, spec: StoreSpec) -> None:
        self.state = state
        self.spec = spec

    @property
    def base_url(self) -> str:
        return self.state.urls[self.spec.key]

    def build(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/", self.home)
        app.router.add_get("/robots.txt", self.robots)
        app.router.add_get("/private/{tail:.*}", self.private)
        app.router.add_get("/images/{name}", self.image)
        for method, path, handler in self._platform_routes():
            app.router.add_route(method, path, handler)
        return app

    def _platform_routes(self) -> list[tuple[str, str, Handler]]:
        platform = self.spec.platform
        if platform == "dispensary":
            return [("POST", "/graphql", self.graphql),
                    ("GET", "/embedded-menu/{slug}", self.menu),
                    ("GET", "/embedded-menu/{slug}/product/{handle}", self.product)]
        if platform == "shopify":
            return [("GET", "/products.json", self.shopify),
                    ("GET", "/products/{handle}", self.product)]
        if platform == "woocommerce":
            return [("GET", "/wp-json/wc/store/v1/products", self.woocommerce),
                    ("GET", "/product/{handle}/", self.product)]
        return [("GET", "/collections/all", self.listing),
                ("GET", "/products/{handle}", self.product)]

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        epoch = self.state.epoch
        request[EPOCH] = epoch
        # robots.txt and images (static files) are never faulty
        static = request.path == "/robots.txt" or request.path.startswith("/images/")
        fault = None if static else self.state.claim_fault(self.spec.key, epoch)
        try:
            response = await (self._faulty(fault, request, handler) if fault else handler(request))
        except web.HTTPException as error:
            self._record(request, epoch, error.status, fault)
            raise
        self._record(request, epoch, response.status, fault)
        return response

    def _record(self, request: web.Request, epoch: int, status: int,
                fault: PlannedFault | None) -> None:
        self.state.log.record(self.spec.key, epoch, request.method, request.path,
                              request.query_string, status, fault.kind if fault else None)

    async def _faulty(self, fault: PlannedFault, request: web.Request,
                      handler: Handler) -> web.StreamResponse:
        config = self.state.faults
        if fault.kind == "http_429":
            return web.Response(status=429, text="Too Many Requests\n",
                                headers={"Retry-After": str(config.retry_after)})
        if fault.kind == "http_500":
            return web.Response(status=500, text="Internal Server Error\n")
        if fault.kind == "oversized":
            return web.Response(body=b" " * config.oversized_bytes, content_type="text/html")
        if fault.kind == "slow":
            await asyncio.sleep(config.slow_seconds)
            return await handler(request)
        return _truncated(await handler(request))

    def catalog(self, request: web.Request) -> Catalog:
        return self.state.catalog(self.spec.key, request[EPOCH])

    async def home(self, request: web.Request) -> web.Response:
        html = f"<!DOCTYPE html><html><body><h1>{self.spec.name}</h1></body></html>"
        return web.Response(text=html, content_type="text/html")

    async def robots(self, request: web.Request) -> web.Response:
        return web.Response(text=self.state.robots_txt(self.spec.key), content_type="text/plain")

    async def private(self, request: web.Request) -> web.Response:
        return web.Response(text=html_formats.private_page(), content_type="text/html")

    async def image(self, request: web.Request) -> web.Response:
        return web.Response(body=product_jpeg(), content_type="image/jpeg")

    async def graphql(self, request: web.Request) -> web.Response:
        try:
            payload = await request.json()
            operation = payload.get("operationName")
            variables = payload.get("variables") or {}
        except (ValueError, AttributeError):
            return web.json_response(api_formats.graphql_error("malformed request"), status=400)
        if operation == "ConsumerDispensaries":
            return web.json_response(api_formats.consumer_dispensaries(self.spec, variables))
        if operation == "FilteredProducts":
            body = api_formats.filtered_products(self.catalog(request), self.base_url, variables)
            return web.json_response(body)
        return web.json_response(api_formats.graphql_error(f"unknown operation {operation!r}"))

    async def menu(self, request: web.Request) -> web.Response:
        if request.match_info["slug"] != self.spec.slug:
            raise web.HTTPNotFound()
        html = html_formats.embedded_menu_page(self.spec, self.base_url)
        return web.Response(text=html, content_type="text/html")

    async def shopify(self, request: web.Request) -> web.Response:
        page, limit = _int(request, "page", 1), min(_int(request, "limit", 30), 250)
        return web.json_response(
            api_formats.shopify_products(self.catalog(request), self.base_url, page, limit))

    async def woocommerce(self, request: web.Request) -> web.Response:
        page, per_page = _int(request, "page", 1), min(_int(request, "per_page", 10), 100)
        body, pages = api_formats.woocommerce_products(
            self.catalog(request), self.base_url, page, per_page)
        total = str(len(self.catalog(request).listed))
        return web.json_response(body, headers={"X-WP-TotalPages": str(pages), "X-WP-Total": total})

    async def listing(self, request: web.Request) -> web.Response:
        html = html_formats.listing_page(self.catalog(request), self.base_url)
        return web.Response(text=html, content_type="text/html")

    async def product(self, request: web.Request) -> web.Response:
        catalog = self.catalog(request)
        product = catalog.find_by_handle(request.match_info["handle"])
        if product is None:
            raise web.HTTPNotFound(text="No such product\n")
        html = html_formats.product_page(catalog, self.base_url, product, _related(catalog, product))
        return web.Response(text=html, content_type="text/html")


def _int(request: web.Request, name: str, default: int) -> int:
    try:
        return max(int(request.query.get(name, default)), 1)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be an integer\n") from None


def _related(catalog: Catalog, product: Product) -> Product | None:
    listed = catalog.listed
    if len(listed) < 2:
        return None
    return listed[(listed.index(product) + 1) % len(listed)]


def _truncated(response: web.StreamResponse) -> web.StreamResponse:
    """The same answer cut in half: a malformed page with a valid HTTP framing."""
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return response
    body = response.body[: max(len(response.body) // 2, 1)]
    return web.Response(body=body, status=response.status, content_type=response.content_type,
                        headers={k: v for k, v in response.headers.items()
                                 if k.lower().startswith("x-")})

