"""URL normalisation for the workers: the domain's canonical form (one definition)."""

from __future__ import annotations

from domain.urls import TRACKING_PARAMS, is_http_url, normalize_url

__all__ = ["TRACKING_PARAMS", "is_http_url", "normalize_url"]
