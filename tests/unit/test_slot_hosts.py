"""A slot's candidates are grouped by host: `url_host` is `urlsplit(url).netloc`, also
for URLs nobody would schedule, and `interleave_by_host` takes the hosts in turn."""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.scheduler import interleave_by_host, url_host

_piece = st.text(alphabet=st.sampled_from(
    list("aZ09.-+:@%!$&'()*,;=~_/?#[]\\ \t\r\n\x00\x7fé\u3000\uff0e")), max_size=12)
_urls = st.one_of(
    st.builds(lambda scheme, rest: f"{scheme}://{rest}",
              st.sampled_from(["http", "https", "HTTP", "h+t.t-p", "9http", " http", "ht\ttp"]),
              _piece),
    st.text(max_size=30),
)


def _netloc(url: str) -> str | type[ValueError]:
    try:
        return urlsplit(url).netloc
    except ValueError:
        return ValueError


def _host(url: str) -> str | type[ValueError]:
    try:
        return url_host(url)
    except ValueError:
        return ValueError


@settings(max_examples=3000, deadline=None)
@given(url=_urls)
@example("http://a.com\t/x")      # whitespace urlsplit removes: "a.com/x"
@example("http://a\n.b/")         # the same inside the host: "a.b"
@example("http://[::1/")          # an unclosed bracket: urlsplit refuses it
@example("http://a.com?q#f")      # a netloc ends at a query as well as at a path
@example("  http://a.com/")       # leading spaces are stripped
@example("http://user:pw@h:1/")   # credentials and port are part of the netloc
def test_url_host_is_urlsplits_netloc(url: str) -> None:
    assert _host(url) == _netloc(url)


def test_hosts_take_turns_each_keeping_its_order() -> None:
    rows = [{"job_id": str(n), "url": url} for n, url in enumerate([
        "http://a/1", "http://a/2", "http://a/3", "http://b/1", "http://c/1", "http://b/2"])]
    assert [r["url"] for r in interleave_by_host(rows)] == [
        "http://a/1", "http://b/1", "http://c/1", "http://a/2", "http://b/2", "http://a/3"]
