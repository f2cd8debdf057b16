"""`workers.alert_delivery.channels`: which channels are allowed, where each one connects, what is shown."""

from __future__ import annotations

import pytest

from domain.errors import InvalidInput
from workers.alert_delivery.channels import Channel, Destination, display_url, plan_channel, scrub


def test_a_webhook_connects_to_its_host_with_its_credentials_as_basic_auth() -> None:
    plan = plan_channel(Channel("webhook", "https://u:p%40ss@hooks.example/in/abc123?t=1", "k"))
    assert plan.via == "http" and plan.destinations == (Destination("hooks.example", 443),)
    assert plan.url == "https://hooks.example/in/abc123?t=1" and plan.auth == ("u", "p@ss")
    assert plan.display == "https://hooks.example/in/***"


def test_json_form_xml_are_posted_by_us_with_their_headers_only() -> None:
    plan = plan_channel(Channel("apprise", "xmls://h.example:8443/a?+X-Key=v&method=put"))
    assert (plan.via, plan.url, plan.method, plan.body_format, plan.headers) == (
        "http", "https://h.example:8443/a", "PUT", "xml", {"X-Key": "v"})
    for query in ("-param=1", ":payload=x", "redirect=yes", "verify=no", "method=GET"):
        with pytest.raises(InvalidInput, match="takes only"):
            plan_channel(Channel("apprise", f"json://h.example/a?{query}"))
    with pytest.raises(InvalidInput) as refused:
        plan_channel(Channel("apprise", "json://h.example/a?Tok3nInTheKey"))
    assert "Tok3n" not in str(refused.value)


def test_services_at_fixed_hosts_are_planned_with_those_hosts() -> None:
    assert plan_channel(Channel("apprise", "tgram://123:abc/456")).destinations == (
        Destination("api.telegram.org", 443),)
    assert plan_channel(Channel("apprise", "ntfy://alerts-topic")).destinations == (
        Destination("ntfy.sh", 443),)
    with pytest.raises(InvalidInput, match="ntfy.sh"):
        plan_channel(Channel("apprise", "ntfy://ntfy.internal/topic"))
    with pytest.raises(InvalidInput, match="redirect"):
        plan_channel(Channel("apprise", "slack://T1/B1/C1?redirect=yes"))


def test_mail_is_planned_with_the_smtp_server_apprise_will_use() -> None:
    plan = plan_channel(Channel("apprise", "mailto://u:p@shop.example?smtp=mx.example&port=2525"))
    assert plan.destinations == (Destination("mx.example", 2525, "smtp"),)
    assert plan_channel(Channel("apprise", "mailto://u:p@gmail.com")).destinations == (
        Destination("smtp.gmail.com", 587, "smtp"),)
    with pytest.raises(InvalidInput, match="pgpkey"):
        plan_channel(Channel("apprise", "mailto://u:p@shop.example?pgpkey=/etc/passwd"))


@pytest.mark.parametrize("url", ["enigma2://127.0.0.1/web", "kodi://h.example", "gotify://h/t",
                                 "ncloud://u:p@h/admin", "https://hooks.slack.com/services/a"])
def test_other_apprise_services_are_refused_in_one_line(url: str) -> None:
    with pytest.raises(InvalidInput, match="not allowed") as refused:
        plan_channel(Channel("apprise", url))
    assert "\n" not in str(refused.value)


def test_the_display_form_hides_credentials_query_and_path_tokens_and_is_stable() -> None:
    cases = {
        "https://hooks.slack.com/services/T0/B0/SECRET": "https://hooks.slack.com/services/***",
        "http://u:pw@127.0.0.1:8080/hook?token=T": "http://127.0.0.1:8080/hook",
        "https://h.example/api/v1/hook": "https://h.example/api/***",
        "https://h.example/AbCdEfGh": "https://h.example/***",
        "json://u:pw@[::1]:9/a/b": "json://[::1]:9/a/b",
        "mailto://u:pw@shop.example?smtp=mx&pass=x": "mailto://shop.example",
        "tgram://123:ABC/456": "tgram://…",
        "http://h.example:notaport/x": "http://…",
    }
    for url, shown in cases.items():
        assert display_url(url) == shown
        assert display_url(shown) == shown


def test_scrub_masks_every_secret_part_and_keeps_the_rest() -> None:
    channel = Channel("webhook", "http://alice:pw%20secret@10.0.0.1:8080/services/T1/TOKENPATH"
                                 "?token=qtoken1", "signing-key")
    text = (f"ConnectError: {channel.url} failed; token=qtoken1 (pw secret) signing-key "
            "at 10.0.0.1:8080 via http://bob:other-pw@proxy")
    masked = scrub(text, channel)
    for secret in ("pw%20secret", "pw secret", "qtoken1", "TOKENPATH", "signing-key", "alice",
                   "other-pw"):
        assert secret not in masked
    assert "ConnectError" in masked and "10.0.0.1:8080" in masked


def test_scrub_treats_a_service_urls_host_as_a_secret() -> None:
    channel = Channel("apprise", "tgram://1234567890:AAbbCC/4242")
    masked = scrub("bot 1234567890 said no; 1234567890:AAbbCC; chat 4242", channel)
    assert "1234567890" not in masked and "AAbbCC" not in masked and "4242" not in masked
