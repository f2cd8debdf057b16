"""Reading API payloads: JSON with exact decimals, and tolerant field access.

Platform payloads are only loosely typed in practice (ids as numbers or
strings, prices as strings or numbers, nulls everywhere), so adapters read
fields through these helpers instead of trusting the shape.
"""

from __future__ import annotations

import html
import json
import re
from decimal import Decimal
from typing import Any

from workers.extraction.adapters.base import ExtractionError, Page

__all__ = ["as_dicts", "as_list", "first_text", "load_json", "plain_text", "sniff_json", "text"]


def load_json(page: Page) -> Any:
    """The page as JSON; money stays exact because floats become `Decimal`."""
    try:
        return json.loads(page.text, parse_float=Decimal)
    except (ValueError, RecursionError) as error:
        raise ExtractionError(f"{page.url}: not valid JSON ({error})") from None


def sniff_json(page: Page) -> Any:
    """Like `load_json` for `detects`: None when the page is not JSON at all."""
    stripped = page.text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return load_json(page)
    except ExtractionError:
        return None


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def as_dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in as_list(value) if isinstance(item, dict)]


def text(value: Any) -> str | None:
    """A non-empty string for a scalar field (ids may arrive as numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int, Decimal)):
        cleaned = str(value).strip()
        return cleaned or None
    return None


#: characters of a product description kept (the start says what it is; search
#: needs no more, and every change of it is an event)
DESCRIPTION_LIMIT = 2000
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def plain_text(value: Any, limit: int = DESCRIPTION_LIMIT) -> str | None:
    """A text field that may hold HTML (Shopify's `body_html`) as plain text: tags
    dropped, entities decoded, whitespace collapsed, at most `limit` characters."""
    raw = text(value) if not isinstance(value, list) else first_text(*value)
    if raw is None:
        return None
    cleaned = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", raw))).strip()
    return cleaned[:limit] or None


def first_text(*values: Any) -> str | None:
    return next((found for found in map(text, values) if found), None)
