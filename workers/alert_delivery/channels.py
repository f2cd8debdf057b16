"""Alert channels: which kinds are allowed, where each one connects, and its safe display.

One egress policy for alerts: a channel is usable only when every place its
delivery will connect to is known in advance, so the address guard can check
each one (at creation and again before every attempt; DNS can change).
`plan_channel` turns a `Channel` into a `ChannelPlan` or refuses it with a
one-line `InvalidInput`:

- **webhook** (`http(s)://…`): the URL's host; posted by the guarded HTTP client.
- **apprise `json://`, `form://`, `xml://`** (and the `s` forms): the URL's host;
  posted by the guarded HTTP client too, in Apprise's payload format, never
  through Apprise (its HTTP client follows redirects and resolves names itself).
  Only `+Header=value` and `method=POST|PUT|PATCH` are accepted in the query.
- **apprise `slack://`, `discord://`, `tgram://`, cloud `ntfy://topic`**: services
  at fixed public hosts, sent by Apprise with redirects off; the hosts are checked.
- **apprise `mailto://`, `mailtos://`**: the SMTP server Apprise will talk to
  (`smtp=` and `port=`, or the server it derives from the address) is checked;
  only mail parameters are accepted (no `pgp`, no unknown ones).

Everything else (Apprise's other services, self-hosted ntfy, gotify, matrix, …)
is refused: their plugins reach hosts and paths the guard cannot see.

`display_url` is what events, answers, logs and errors show of a URL: scheme,
host, port and the leading path segments that look like plain words, never
credentials, query, or a path segment that may be a token
(`https://hooks.slack.com/services/***`). `scrub` masks every secret part of a
channel in a text (defence in depth for error messages).
"""

from __future__ import annotations

import re
import warnings
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from domain.errors import InvalidInput

__all__ = ["Channel", "ChannelPlan", "Destination", "apprise_module", "display_url",
           "plan_channel", "scrub"]

MASK = "***"
#: a path segment shown by `display_url`: a short lower-case word, no digits
_WORD = re.compile(r"[a-z][a-z._-]{0,15}")
HTTP_FORMATS = {"json": "json", "jsons": "json", "form": "form", "forms": "form",
                "xml": "xml", "xmls": "xml"}
HTTP_METHODS = ("POST", "PUT", "PATCH")
#: Apprise services at fixed public hosts: scheme -> (plugin class, hosts it may reach)
SERVICES = {
    "slack": ("NotifySlack", ("hooks.slack.com", "slack.com", "hooks.slack-gov.com")),
    "discord": ("NotifyDiscord", ("discord.com",)),
    "tgram": ("NotifyTelegram", ("api.telegram.org",)),
    "ntfy": ("NotifyNtfy", ("ntfy.sh",)),
    "ntfys": ("NotifyNtfy", ("ntfy.sh",)),
}
MAIL = ("mailto", "mailtos")
MAIL_PARAMETERS = frozenset({"to", "cc", "bcc", "from", "name", "reply", "smtp", "port",
                             "mode", "user", "pass", "format"})
#: shorter pieces of a URL are not masked by `scrub` (they would garble any message)
_SHORTEST_SECRET = 4


@dataclass(frozen=True)
class Channel:
    """Where a subscription's alerts go: `kind` webhook|apprise, its URL, a webhook secret."""

    kind: str
    url: str
    secret: str | None = None

    def __repr__(self) -> str:  # never show the URL's credentials or the secret
        return f"Channel({self.kind}, {display_url(self.url)})"


@dataclass(frozen=True)
class Destination:
    """One host and port a delivery connects to, and the protocol it speaks there."""

    host: str
    port: int
    scheme: str = "https"

    def as_url(self) -> str:
        """A URL naming only this host and port (what the guard is asked about)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class ChannelPlan:
    """How a channel is delivered: `via` "http" (the guarded client posts `url` with
    `method`, `headers`, in `body_format`) or "apprise"; `destinations` are checked first."""

    via: str
    destinations: tuple[Destination, ...]
    display: str
    url: str = ""
    method: str = "POST"
    body_format: str = "webhook"
    headers: dict[str, str] = field(default_factory=dict)
    #: HTTP basic credentials from the URL's user part (`url` has none)
    auth: tuple[str, str] | None = None


def plan_channel(channel: Channel) -> ChannelPlan:
    """The channel's delivery plan; `InvalidInput` (one line, no secret) when refused."""
    if channel.kind == "webhook":
        return _webhook(channel)
    if channel.kind != "apprise":
        raise InvalidInput(f"unknown channel kind {channel.kind!r}; expected webhook or apprise")
    if channel.secret:
        raise InvalidInput("only webhooks take a secret")
    scheme = urlsplit(channel.url).scheme.lower()
    if scheme in HTTP_FORMATS:
        return _custom_http(channel.url, scheme)
    if scheme in SERVICES:
        return _service(channel.url, scheme)
    if scheme in MAIL:
        return _mail(channel.url)
    raise InvalidInput(f"alert channel {display_url(channel.url)!r} is not allowed: use a "
                       "webhook, json://, form://, xml://, slack://, discord://, tgram://, "
                       "ntfy://TOPIC (ntfy.sh) or mailto://")


def _webhook(channel: Channel) -> ChannelPlan:
    parts = _split(channel.url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"a webhook needs an http(s) URL, not {display_url(channel.url)!r}")
    if not channel.secret:
        raise InvalidInput("a webhook needs a secret to sign its messages (--secret)")
    scheme = parts.scheme.lower()
    destination = Destination(parts.hostname, parts.port or (443 if scheme == "https" else 80),
                              scheme)
    return ChannelPlan("http", (destination,),
                       display_url(channel.url), url=_without_user(parts), auth=_auth(parts))


def _custom_http(url: str, scheme: str) -> ChannelPlan:
    parts = _split(url)
    if not parts.hostname:
        raise InvalidInput(f"{scheme}:// needs a host")
    secure = scheme.endswith("s")
    headers: dict[str, str] = {}
    method = "POST"
    for key, value in _query(parts.query):
        if key.startswith("+") and len(key) > 1:
            headers[key[1:]] = value
        elif key.lower() == "method" and value.upper() in HTTP_METHODS:
            method = value.upper()
        else:
            raise InvalidInput(f"{scheme}:// takes only +Header=value and method="
                               f"{'|'.join(HTTP_METHODS)} in its query, not {_named(key)}")
    target = _without_user(parts._replace(scheme="https" if secure else "http", query="",
                                          path=parts.path or "/"))
    destination = Destination(parts.hostname, parts.port or (443 if secure else 80),
                              "https" if secure else "http")
    return ChannelPlan("http", (destination,), display_url(url), url=target, method=method,
                       body_format=HTTP_FORMATS[scheme], headers=headers, auth=_auth(parts))


def _named(key: str) -> str:
    """A refused query key as shown: quoted when it reads as a word (a bare token is not)."""
    return repr(key) if _WORD.fullmatch(key.lstrip("+-:")) else "a parameter that may be a token"


def _query(query: str) -> list[tuple[str, str]]:
    """The query's (key, value) pairs, percent-decoded; a `+` stays a `+` (Apprise's
    header prefix), unlike form decoding."""
    pairs = (item.partition("=") for item in query.split("&") if item)
    return [(unquote(key), unquote(value)) for key, _, value in pairs]


def _without_user(parts: Any) -> str:
    """The URL without its user part (the credentials travel as `ChannelPlan.auth`)."""
    return str(parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl())


def _auth(parts: Any) -> tuple[str, str] | None:
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")


def _service(url: str, scheme: str) -> ChannelPlan:
    plugin, hosts = SERVICES[scheme]
    found = _instantiate(url)
    if type(found).__name__ != plugin or getattr(found, "redirects", True):
        raise InvalidInput(f"{scheme}:// URL not usable (no redirect= parameter allowed)")
    if plugin == "NotifyNtfy" and getattr(found, "mode", "") != "cloud":
        raise InvalidInput("ntfy is allowed only as ntfy://TOPIC on ntfy.sh: a self-hosted "
                           "server can take a json:// channel instead")
    return ChannelPlan("apprise", tuple(Destination(host, 443) for host in hosts),
                       display_url(url), url=url)


def _mail(url: str) -> ChannelPlan:
    unknown = {key for key, _ in _query(_split(url).query)} - MAIL_PARAMETERS
    if unknown:
        raise InvalidInput(f"mailto:// takes only {', '.join(sorted(MAIL_PARAMETERS))} in its "
                           f"query, not {_named(sorted(unknown)[0])}")
    found = _instantiate(url)
    if type(found).__name__ != "NotifyEmail" or getattr(found, "redirects", True):
        raise InvalidInput("mailto:// URL not usable")
    host, port = str(getattr(found, "smtp_host", "") or ""), getattr(found, "port", None)
    if not host or not isinstance(port, int):
        raise InvalidInput("mailto:// needs an SMTP server (smtp=HOST&port=N)")
    return ChannelPlan("apprise", (Destination(host.strip("[]"), port, "smtp"),), display_url(url),
                       url=url)


def _split(url: str) -> Any:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        raise InvalidInput(f"not a usable URL: {display_url(url)!r}") from None
    return parts


def _instantiate(url: str) -> object:
    apprise = apprise_module()
    found = apprise.Apprise.instantiate(url, asset=apprise.AppriseAsset(http_redirects=False))
    if not found:
        raise InvalidInput(f"Apprise does not understand {display_url(url)!r}")
    return found


def apprise_module() -> Any:
    """The apprise module, imported on first use (it imports the stdlib's deprecated
    `imghdr`, which tests run with warnings as errors would refuse)."""
    import logging

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
        import apprise
        from apprise.plugins import N_MGR

        N_MGR.load_modules()  # type: ignore[no-untyped-call]  # the plugins import lazily: here, once, under the filter
    # Apprise's own log lines quote service URLs with their tokens; outcomes say enough
    logging.getLogger("apprise").setLevel(logging.CRITICAL + 1)
    return apprise


def display_url(url: str) -> str:
    """`url` without credentials, query or path secrets (see the module docstring);
    `scheme://…` when the host itself may be a token. Applying it twice changes nothing."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return f"{urlsplit(url).scheme.lower()}://…"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", *HTTP_FORMATS, *MAIL) or not host:
        return f"{scheme}://…"
    shown = f"[{host}]" if ":" in host else host
    shown += f":{port}" if port else ""
    if scheme in MAIL:
        return f"{scheme}://{shown}"
    segments = [s for s in parts.path.split("/") if s]
    words = []
    for segment in segments:
        if not _WORD.fullmatch(segment):
            words.append(MASK)
            break
        words.append(segment)
    return f"{scheme}://{shown}" + "".join(f"/{word}" for word in words)


def _secrets(channel: Channel) -> set[str]:
    """Every part of the channel that may be secret, as written and (de)coded."""
    url = channel.url
    pieces = {url, channel.secret or ""}
    try:
        parts = urlsplit(url)
        pieces |= {parts.username or "", parts.password or "", parts.netloc}
    except ValueError:
        parts = urlsplit("")
    pieces |= set(re.split(r"[/?&=:@#;,]", url.split("://", 1)[-1]))
    pieces |= {value for _, value in _query(parts.query)}
    shown = display_url(url)
    visible = set(shown.split("/")) | {parts.scheme}
    if not shown.endswith("…"):  # the host is shown, so it is no secret
        visible.add(parts.hostname or "")
        with suppress(ValueError):
            visible.add(str(parts.port))
    found: set[str] = set()
    for piece in pieces - visible:
        found |= {piece, unquote(piece), quote(piece, safe=""), quote(unquote(piece), safe="")}
    return {p for p in found if len(p) >= _SHORTEST_SECRET}


def scrub(text: str, channel: Channel) -> str:
    """`text` with every secret part of `channel` (and any URL password) masked."""
    for secret in sorted(_secrets(channel), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return re.sub(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)[^@\s/]*@", rf"\g<1>{MASK}@", text)
