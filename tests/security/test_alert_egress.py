"""Issue 43 rows 1-3: an alert channel reaches only what the address guard admitted.

The operator's allowlist opens one "allowed host" (127.0.0.2); a listener on
127.0.0.1, which is not allowed, stands for every internal service. Each attack
goes through the real API (an operate token, `POST /alerts` and
`POST /alerts/{id}/test`) or the real sender, over real HTTP on loopback, and the
listener must see no connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alert_harness import (
    ALLOWED,
    ALLOWED_HOST,
    Listener,
    bearer,
    listener,
    redirecting,
    sender_for,
    serving,
    subscription,
)
from backends import open_ledger, store_url
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.errors import InvalidInput
from ledger.bootstrap import Ledger
from workers.alert_delivery.channels import Channel
from workers.alert_delivery.notify import Notifier
from workers.fetching.addresses import AddressGuard

#: Apprise services whose host the guard never looked at on b30b796 (row 1)
UNCHECKED_SERVICES = [
    "ncloud://user:pass@127.0.0.1:{port}/admin",
    "hassio://127.0.0.1:{port}/long-lived-access-token",
    "emby://user:pass@127.0.0.1:{port}",
    "jellyfin://user:pass@127.0.0.1:{port}",
    "kodi://127.0.0.1:{port}",
    "signal://127.0.0.1:{port}/12345678901/12345678902",
    "gorush://127.0.0.1:{port}/devicetoken",
    "bark://127.0.0.1:{port}/devicekey",
    "misskey://accesstoken@127.0.0.1:{port}",
    "mastodon://accesstoken@127.0.0.1:{port}",
    "enigma2://127.0.0.1:{port}/web/chosen/path",
    "parsep://appid:masterkey@127.0.0.1:{port}",
    "pjet://127.0.0.1:{port}/secretkey",
    "smseagle://token@127.0.0.1:{port}/12345678901",
]


@pytest.fixture
def sqlite_ledger(tmp_path: Path) -> Iterator[Ledger]:
    with store_url("sqlite", tmp_path) as url, open_ledger(url, tmp_path) as opened:
        yield opened


@pytest.fixture
def internal() -> Iterator[Listener]:
    with listener() as box:
        yield box


def send(channel: Channel, allow: list[str]) -> tuple[bool, str]:
    async def go() -> tuple[bool, str]:
        async with sender_for(allow) as notifier:
            outcome = await notifier.send(channel, json.dumps(
                {"title": "t", "message": "m"}).encode(), {"X-Crawl-Ledger-Delivery": "k"})
            return outcome.ok, outcome.error
    return asyncio.run(go())


def admit(channel: Channel, allow: list[str]) -> str:
    async def go() -> str:
        async with sender_for(allow) as notifier:
            return await notifier.check(channel)
    return asyncio.run(go())


@pytest.mark.parametrize("template", UNCHECKED_SERVICES, ids=lambda t: t.split(":")[0])
def test_a_service_the_guard_cannot_check_is_refused_and_never_reached(
        template: str, sqlite_ledger: Ledger, internal: Listener) -> None:
    url = template.format(port=internal.port)
    with serving(sqlite_ledger, ALLOWED) as (base, tokens), httpx.Client(base_url=base) as http:
        operate = bearer(tokens["operate"])
        made = http.post("/api/v1/alerts", json=subscription("apprise", url), headers=operate)
        assert made.status_code == 422, made.text
        detail = made.json()["detail"]
        assert "not allowed" in detail and "\n" not in detail
        assert "pass" not in detail and "token" not in detail.lower().replace("tokens", "")
        assert http.get("/api/v1/alerts", headers=bearer(tokens["read"])).json() == []
    # a channel kept before the policy existed is refused when it is sent too
    ok, error = send(Channel("apprise", url), ALLOWED)
    assert not ok and "not allowed" in error
    assert internal.connections() == 0
    assert sqlite_ledger.source.read(0, 10) == []


@pytest.mark.parametrize("scheme", ["json", "form", "xml"])
def test_a_redirect_from_an_allowed_host_to_an_internal_one_is_not_followed(
        scheme: str, sqlite_ledger: Ledger, internal: Listener) -> None:
    inside = f"http://127.0.0.1:{internal.port}/admin"
    with (redirecting(ALLOWED_HOST, inside) as port,
          serving(sqlite_ledger, ALLOWED) as (base, tokens), httpx.Client(base_url=base) as http):
        operate = bearer(tokens["operate"])
        made = http.post("/api/v1/alerts", headers=operate,
                         json=subscription("apprise", f"{scheme}://{ALLOWED_HOST}:{port}/hook"))
        assert made.status_code == 201, made.text
        tested = http.post(f"/api/v1/alerts/{made.json()['id']}/test", headers=operate)
        assert tested.json() == {"delivered": False, "status": 307, "error": "HTTP 307"}
    assert internal.connections() == 0


def test_a_webhook_redirect_is_not_followed_either(sqlite_ledger: Ledger,
                                                   internal: Listener) -> None:
    with redirecting(ALLOWED_HOST, f"http://127.0.0.1:{internal.port}/") as port:
        ok, error = send(Channel("webhook", f"http://{ALLOWED_HOST}:{port}/hook", "k"), ALLOWED)
    assert (ok, error) == (False, "HTTP 307")
    assert internal.connections() == 0


def test_mail_through_an_internal_smtp_server_is_refused(sqlite_ledger: Ledger,
                                                         internal: Listener) -> None:
    url = f"mailto://user:pw@{ALLOWED_HOST}?smtp=127.0.0.1&port={internal.port}&from=alerts@shop.example&to=a@b.example"
    with serving(sqlite_ledger, ALLOWED) as (base, tokens), httpx.Client(base_url=base) as http:
        made = http.post("/api/v1/alerts", json=subscription("apprise", url),
                         headers=bearer(tokens["operate"]))
        assert made.status_code == 422, made.text
        assert "127.0.0.1 is loopback" in made.json()["detail"]
        assert "pw" not in made.json()["detail"]
    ok, error = send(Channel("apprise", url), ALLOWED)
    assert not ok and "blocked_address" in error
    assert internal.connections() == 0


def test_mail_through_an_allowed_smtp_server_is_admitted() -> None:
    url = f"mailto://user:pw@{ALLOWED_HOST}?smtp={ALLOWED_HOST}&port=2525&from=alerts@shop.example&to=a@b.example"
    assert admit(Channel("apprise", url), ALLOWED) == f"mailto://{ALLOWED_HOST}"
    with pytest.raises(InvalidInput, match="pgp"):
        admit(Channel("apprise", url + "&pgp=yes"), ALLOWED)


def test_the_smtp_server_is_checked_again_when_sending(internal: Listener) -> None:
    """Admitted while its name pointed at the allowed host; refused once it points inside."""
    answers = {"mail.test": [ALLOWED_HOST]}

    async def resolve(host: str) -> list[str]:
        return answers[host]

    url = f"mailto://user:pw@mail.test?smtp=mail.test&port={internal.port}&from=alerts@shop.example&to=a@b.example"
    channel = Channel("apprise", url)

    async def go() -> tuple[str, bool, str]:
        guard = AddressGuard(ALLOWED, resolve=resolve, clock=lambda: 0.0 if not moved else 99.0)
        notifier = Notifier(httpx.AsyncClient(), guard)
        shown = await notifier.check(channel)
        answers["mail.test"] = ["127.0.0.1"]
        moved.append(True)
        outcome = await notifier.send(channel, b'{"title": "t", "message": "m"}', {})
        await notifier.client.aclose()
        return shown, outcome.ok, outcome.error

    moved: list[bool] = []
    shown, ok, error = asyncio.run(go())
    assert shown == "mailto://mail.test"
    assert not ok and "mail.test resolves to 127.0.0.1 is loopback" in error
    assert internal.connections() == 0


def _loopback_spellings(port: int) -> list[str]:
    v4 = int(ipaddress.IPv4Address("127.0.0.1"))
    return ["127.0.0.1", "127.1", "127.0.1", hex(v4), str(v4), "0177.0.0.1", "0x7f.1",
            "localhost", "localhost.", "LocalHost", "127.0.0.1.", "0.0.0.0", "0",
            "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:0:0:1]",
            "[::127.0.0.1]", "127.000.000.001"]


SCHEMES = ["http", "https", "json", "jsons", "form", "forms", "xml", "xmls", "mailto",
           "mailtos", "enigma2", "kodi", "gotify", "ntfy", "ncloud", "bark", "hassio"]


@st.composite
def loopback_urls(draw: st.DrawFn, port: int) -> Channel:
    host = draw(st.sampled_from(_loopback_spellings(port)))
    scheme = draw(st.sampled_from(SCHEMES))
    user = draw(st.sampled_from(["", "user@", "user:pw@", "%75ser:p%40w@"]))
    with_port = draw(st.booleans())
    netloc = f"{user}{host}" + (f":{port}" if with_port else "")
    path = draw(st.sampled_from(["", "/", "/hook", "/topic/x", "/%2e%2e/admin"]))
    params = draw(st.lists(st.sampled_from([
        f"smtp={host.strip('[]')}", f"port={port}", "to=a@b.example", "+X-H=1", "method=PUT",
        "redirect=yes", f"host={host}", f"url=http://{host}:{port}/"]), max_size=3))
    url = f"{scheme}://{netloc}{path}" + ("?" + "&".join(params) if params else "")
    kind = "webhook" if scheme in ("http", "https") else "apprise"
    return Channel(kind, url, "k" if kind == "webhook" else None)


@pytest.fixture(scope="module")
def fuzz_listener() -> Iterator[Listener]:
    with listener() as box:
        yield box


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_spelling_of_loopback_reaches_a_loopback_listener(data: st.DataObject,
                                                           fuzz_listener: Listener) -> None:
    channel = data.draw(loopback_urls(fuzz_listener.port))
    try:
        admit(channel, [])
    except InvalidInput as error:
        assert "\n" not in str(error) and "pw" not in str(error)
    ok, _ = send(channel, [])
    assert not ok, channel.url
    assert fuzz_listener.connections() == 0, channel.url
