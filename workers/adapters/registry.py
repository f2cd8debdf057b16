"""The adapter registry: which adapter reads a page, and which one a job starts with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain.values import CrawlTask
from workers.adapters.base import Adapter, Page

#: job kinds that always start with one adapter, whatever the store's platform
_BY_KIND = {"store_discovery": "locator", "feed": "feeds"}


class Registry:
    """Adapters in the order content detection tries them, plus platform aliases."""

    def __init__(self, adapters: Sequence[Adapter], aliases: Mapping[str, str] | None = None) -> None:
        self.adapters = tuple(adapters)
        self.aliases = dict(aliases or {})

    def by_name(self, name: str) -> Adapter:
        """The adapter called `name` (or a platform alias); KeyError if unknown."""
        wanted = self.aliases.get(name.lower(), name.lower())
        for adapter in self.adapters:
            if adapter.name == wanted:
                return adapter
        known = ", ".join(a.name for a in self.adapters)
        raise KeyError(f"no adapter named {name!r}; known: {known}")

    def detect(self, page: Page) -> Adapter | None:
        """The first adapter that recognises the page's content, if any."""
        return next((adapter for adapter in self.adapters if adapter.detects(page)), None)

    def for_task(self, task: CrawlTask) -> Adapter | None:
        """The adapter a job starts with: by kind first, then by store platform; None when
        neither names one (the crawler then detects it from the first page's content)."""
        if task.kind in _BY_KIND:
            return self.by_name(_BY_KIND[task.kind])
        if task.kind == "entry_point" and task.platform == "dispensary":
            return self.by_name("dispensary-resolver")
        return self.by_name(task.platform) if task.platform else None
