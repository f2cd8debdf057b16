"""`/api/v1/tokens` on both backends over real HTTP: admin creates (the secret once),
lists (never a secret) and revokes; read and operate tokens get 403."""

from __future__ import annotations

import httpx
from test_api import bearer, serving

from ledger.bootstrap import Ledger


def test_admin_creates_lists_and_revokes_a_token(ledger: Ledger) -> None:
    with serving(ledger) as (base, secrets), httpx.Client(base_url=base) as http:
        admin = bearer(secrets["admin"])
        created = http.post("/api/v1/tokens", json={"name": "grafana", "scope": "read"},
                            headers=admin)
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["name"] == "grafana" and body["scope"] == "read"
        new = bearer(body["token"])
        assert http.get("/api/v1/jobs", headers=new).status_code == 200

        listed = http.get("/api/v1/tokens", headers=admin)
        assert listed.status_code == 200
        names = {t["name"]: t for t in listed.json()["items"]}
        assert names["grafana"]["token_id"] == body["token_id"]
        assert names["grafana"]["revoked_at"] is None
        every_secret = [body["token"], *secrets.values()]
        assert not any(secret in listed.text for secret in every_secret)

        revoked = http.delete(f"/api/v1/tokens/{body['token_id']}", headers=admin)
        assert revoked.status_code == 200
        assert http.get("/api/v1/jobs", headers=new).status_code == 401
        again = http.delete(f"/api/v1/tokens/{body['token_id']}", headers=admin)
        assert again.status_code == 404
        after = {t["name"]: t for t in http.get("/api/v1/tokens", headers=admin).json()["items"]}
        assert after["grafana"]["revoked_at"] is not None


def test_only_admin_manages_tokens_and_bad_input_changes_nothing(ledger: Ledger) -> None:
    with serving(ledger) as (base, secrets), httpx.Client(base_url=base) as http:
        for scope in ("read", "operate", "bot"):
            who = bearer(secrets[scope])
            assert http.get("/api/v1/tokens", headers=who).status_code == 403
            assert http.post("/api/v1/tokens", json={"name": "x", "scope": "admin"},
                             headers=who).status_code == 403
            assert http.delete("/api/v1/tokens/abcd", headers=who).status_code == 403
        assert http.get("/api/v1/tokens").status_code == 401
        admin = bearer(secrets["admin"])
        before = http.get("/api/v1/tokens", headers=admin).json()["items"]
        for bad in ({"name": "x", "scope": "root"}, {"name": "", "scope": "read"},
                    {"scope": "read"}):
            assert http.post("/api/v1/tokens", json=bad, headers=admin).status_code == 422
        assert http.get("/api/v1/tokens", headers=admin).json()["items"] == before
