"""Small API promises: a bad filter is refused like the CLI refuses it, workers' kinds
are a list, and the event count is a counter."""

from __future__ import annotations

import httpx
from test_api import T0, bearer, serving

from ledger.bootstrap import Ledger
from runtime.heartbeats import register


def test_a_bad_state_or_kind_filter_is_refused(ledger: Ledger) -> None:
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as http:
        read = bearer(secrets["read"])
        for query in ({"state": "bogus"}, {"kind": "bogus"}):
            refused = http.get("/api/v1/jobs", params=query, headers=read)
            assert refused.status_code == 422, query
            assert "bogus" in refused.json()["detail"]
        assert http.get("/api/v1/jobs", params={"state": "paused"}, headers=read).status_code == 200


def test_workers_kinds_are_a_list_and_events_total_a_counter(ledger: Ledger) -> None:
    register(ledger, "w1", "embedded", 4, ["catalog", "product_page"], T0)
    with serving(ledger) as (url, secrets), httpx.Client(base_url=url) as http:
        workers = http.get("/api/v1/workers", headers=bearer(secrets["read"])).json()["items"]
        assert [w["kinds"] for w in workers] == [["catalog", "product_page"]]
        metrics = http.get("/metrics", headers=bearer(secrets["read"])).text
        assert "# TYPE crawl_ledger_events_total counter" in metrics
        head = ledger.source.head()
        assert f"crawl_ledger_events_total {float(head)}" in metrics
