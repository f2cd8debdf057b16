"""The adapter registry: which adapter reads a page, and which one a job starts with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain.values import CrawlTask
from workers.extraction.adapters.base import Adapter, Page

#: job kinds that always start with one adapter, whatever the store's platform
_BY_KIND = {"store_discovery": "locator", "feed": "feeds"}


class Registry:
    """Adapters in the order content detection tries them, plus platform aliases, plus
    fallbacks: generic readers tried only when no adapter recognises a page."""

    def __init__(self, adapters: Sequence[Adapter], aliases: Mapping[str, str] | None = None,
                 fallbacks: Sequence[Adapter] = ()) -> None:
        self.adapters = tuple(adapters)
        self.aliases = dict(aliases or {})
        self.fallbacks = tuple(fallbacks)

    def by_name(self, name: str) -> Adapter:
        """The adapter called `name` (or a platform alias); KeyError if unknown."""
        wanted = self.aliases.get(name.lower(), name.lower())
        for adapter in self.adapters + self.fallbacks:
            if adapter.name == wanted:
                return adapter
        known = ", ".join(a.name for a in self.adapters + self.fallbacks)
        raise KeyError(f"no adapter named {name!r}; known: {known}")

    def detect(self, page: Page) -> Adapter | None:
        """The first adapter that recognises the page's content, else the first fallback
        that does, else None."""
        return next((adapter for adapter in self.adapters + self.fallbacks
                     if adapter.detects(page)), None)

    def for_task(self, task: CrawlTask) -> Adapter | None:
        """The adapter a job starts with: by kind first, then by store platform; None when
        neither names one (the crawler then detects it from the first page's content)."""
        if task.kind in _BY_KIND:
            return self.by_name(_BY_KIND[task.kind])
        if task.kind == "entry_point" and task.platform == "dispensary":
            return self.by_name("dispensary-resolver")
        return self.by_name(task.platform) if task.platform else None
