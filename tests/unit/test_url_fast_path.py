"""`normalize_url`'s fast path for already plain URLs equals the full canonicalisation."""

from __future__ import annotations

import string
from urllib.parse import urljoin

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvalidInput
from domain.urls import canonical, join_url, normalize_url

# built from character classes, not `st.from_regex` (the same strings, drawn ~5x faster):
# [a-zA-Z0-9]([a-zA-Z0-9.-]{0,20}[a-zA-Z0-9])?
_ALNUM = string.ascii_letters + string.digits
_host = st.one_of(
    st.sampled_from(_ALNUM),
    st.builds(lambda first, middle, last: first + middle + last, st.sampled_from(_ALNUM),
              st.text(_ALNUM + ".-", max_size=20), st.sampled_from(_ALNUM)))


def _optional(mark: str, alphabet: str, size: int) -> st.SearchStrategy[str]:
    """(MARK[ALPHABET]{0,SIZE})?"""
    return st.one_of(st.just(""), st.text(alphabet, max_size=size).map(lambda t: mark + t))


# (/[A-Za-z0-9\-._~%?#=&/]{0,30})?(#[A-Za-z0-9\-._~%?#=&/:@!$'()*+,;]{0,12})?, with paths
# of segments drawn as often ("." and ".." among them: characters drawn one by one
# seldom put a dot after a slash)
_segments = st.lists(st.sampled_from(["", ".", "..", "a", "B-1", "~x", ".a", "a."]),
                     min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts))
_path = st.builds(str.__add__, st.one_of(_optional("/", _ALNUM + "-._~%?#=&/", 30), _segments),
                  _optional("#", _ALNUM + "-._~%?#=&/:@!$'()*+,;", 12))
_port = st.one_of(st.just(""), st.integers(0, 99999).map(lambda p: f":{p}"),
                  st.sampled_from([":80", ":443", ":0080", ":08000"]))


@settings(max_examples=2000, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]), host=_host, port=_port,
       path=_path)
def test_the_fast_path_agrees_with_the_full_canonical_form(scheme: str, host: str, port: str,
                                                           path: str) -> None:
    url = f"{scheme}://{host}{port}{path}"
    normalize_url.cache_clear()
    try:
        expected: str | type[Exception] = canonical(url)
    except InvalidInput:
        expected = InvalidInput
    try:
        found: str | type[Exception] = normalize_url(url)
    except InvalidInput:
        found = InvalidInput
    assert found == expected, url


_base = st.builds(lambda scheme, host, path: f"{scheme}://{host}{path}",
                  st.sampled_from(["http", "https", "ftp"]), _host, _path)
# (\.{0,2}/)?[A-Za-z0-9\-._~%?#=&/;:]{0,20}
_relative = st.builds(str.__add__, st.sampled_from(["", "/", "./", "../"]),
                      st.text(_ALNUM + "-._~%?#=&/;:", max_size=20))


@settings(max_examples=2000, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]), host=_host, port=_port,
       path=_path, base=_base, relative=_relative, absolute=st.booleans(),
       pad=st.sampled_from(["", " ", "\t"]))
def test_a_url_against_a_base_is_the_canonical_form_of_its_join(
        scheme: str, host: str, port: str, path: str, base: str, relative: str,
        absolute: bool, pad: str) -> None:
    """Joining is skipped for plain absolute URLs: the result is still the canonical form
    of `urljoin(base, url)`, for absolute and relative URLs alike."""
    url = pad + (f"{scheme}://{host}{port}{path}" if absolute else relative) + pad
    normalize_url.cache_clear()
    try:
        expected: str | type[Exception] = canonical(urljoin(base, url.strip()), url)
    except InvalidInput:
        expected = InvalidInput
    try:
        found: str | type[Exception] = normalize_url(url, base)
    except InvalidInput:
        found = InvalidInput
    assert found == expected, (url, base)


@settings(max_examples=2000, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]), host=_host, port=_port,
       path=_path, base=_base, relative=_relative, absolute=st.booleans())
def test_join_url_is_urljoin(scheme: str, host: str, port: str, path: str, base: str,
                             relative: str, absolute: bool) -> None:
    url = f"{scheme}://{host}{port}{path}" if absolute else relative
    assert join_url(base, url) == urljoin(base, url), (base, url)
