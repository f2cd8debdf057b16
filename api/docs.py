"""Interactive API docs at `/docs`: Swagger UI over `/openapi.json`.

The Swagger UI files (version 5, which reads OpenAPI 3.1) come from the installed
`fastapi-swagger` package (MIT; only its bundled files are used) and are served by
this process under `/docs/assets/`: the page loads nothing from the internet (a
server that cannot reach it, or should not, still has its docs). The page's own
start-up script is `static/api-docs.js`, so the Content-Security-Policy allows
scripts from this origin only.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["add_docs"]

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>crawl-ledger API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/static/api-docs.js"></script>
</body>
</html>
"""
# Swagger UI sets style attributes and shows inline SVG / data: images
_HEADERS = {"Content-Security-Policy": "default-src 'self'; script-src 'self'; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
            "X-Content-Type-Options": "nosniff"}


def add_docs(app: FastAPI) -> None:
    """`GET /docs` and its assets (the app is created with `docs_url=None`)."""

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(_PAGE, headers=_HEADERS)

    app.mount("/docs/assets", StaticFiles(directory=str(files("fastapi_swagger") / "resources")), name="docs-assets")
