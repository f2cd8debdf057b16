"""`/api/v1/proxies` on both backends: scoped tokens, the address guard, validation,
and no credential in any answer."""

from __future__ import annotations

import json

import httpx
from test_api import bearer, serving

from ledger.bootstrap import Ledger
from workers.fetching.addresses import AddressGuard

SECRET = "api-pr0xy-pw"


def test_proxies_over_http(ledger: Ledger) -> None:
    guard = AddressGuard(["127.0.0.0/8"])  # loopback proxies allowed on purpose
    with serving(ledger, proxy_guard=guard) as (url, tokens), httpx.Client(base_url=url) as http:
        read, operate = bearer(tokens["read"]), bearer(tokens["operate"])
        new = {"url": f"http://u:{SECRET}@127.0.0.1:3128", "region": "eu"}
        assert http.post("/api/v1/proxies", json=new, headers=read).status_code == 403
        bad = http.post("/api/v1/proxies", json={"url": "ftp://127.0.0.1:21"}, headers=operate)
        assert bad.status_code == 422, bad.text
        made = http.post("/api/v1/proxies", json=new, headers=operate)
        assert made.status_code == 201, made.text
        proxy = made.json()
        assert (proxy["address"], proxy["region"], proxy["enabled"], proxy["healthy"]) == (
            "http://127.0.0.1:3128", "eu", True, True)
        again = http.post("/api/v1/proxies", json=new, headers=operate)
        assert again.status_code == 422 and SECRET not in again.text
        off = http.post(f"/api/v1/proxies/{proxy['id']}/disable", json={"reason": "moved"},
                        headers=operate)
        assert off.status_code == 200 and off.json()["disabled_reason"] == "moved", off.text
        on = http.post(f"/api/v1/proxies/{proxy['id']}/enable", headers=operate)
        assert on.status_code == 200 and on.json()["enabled"] is True
        listed = http.get("/api/v1/proxies", headers=read)
        assert [p["id"] for p in listed.json()] == [proxy["id"]]
        unknown = http.post("/api/v1/proxies/00000000-0000-0000-0000-000000000000/enable",
                            headers=operate)
        assert unknown.status_code == 404
        changes = [(e.event_type, e.payload["actor"], e.payload["surface"])
                   for e in ledger.source.read(0, 100_000)
                   if e.event_type in ("Proxy.Disabled", "Proxy.Enabled")]
        assert changes == [("Proxy.Disabled", "token:operate (operate)", "api"),
                           ("Proxy.Enabled", "token:operate (operate)", "api")]
        answers = json.dumps([made.json(), off.json(), on.json(), listed.json()])
        assert SECRET not in answers and "u:" not in answers


def test_a_private_proxy_needs_the_allow_list(ledger: Ledger) -> None:
    with serving(ledger) as (url, tokens), httpx.Client(base_url=url) as http:
        refused = http.post("/api/v1/proxies", json={"url": f"http://u:{SECRET}@10.1.2.3:3128"},
                            headers=bearer(tokens["operate"]))
        assert refused.status_code == 422 and "refused" in refused.text, refused.text
        assert SECRET not in refused.text
        assert http.get("/api/v1/proxies", headers=bearer(tokens["read"])).json() == []
