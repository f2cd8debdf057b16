"""No secret in any output: passwords are cut out of URLs and of everything printed.

Two layers:

- `redact_url(url)` replaces a URL's password with `***`; every message that names
  a store or broker URL goes through it.
- `redacting_output(env)` wraps stdout and stderr for the life of a command: every
  write has the configured secrets (the passwords of `LEDGER_STORE` and
  `LEDGER_BROKER`, as written and percent-decoded) and any `scheme://user:password@`
  replaced, so an error message from a library, a log line or a traceback cannot
  print them either.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "RedactingStream", "redact", "redact_url", "redacting_output", "secrets_in"]

MASK = "***"
#: the variables whose URLs may carry a password
SECRET_URLS = ("LEDGER_STORE", "LEDGER_BROKER")
_USERINFO = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]*:)(?P<pw>[^@\s/'\"]*)@")
_CONNINFO = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|\S+)")


def redact_url(url: str) -> str:
    """`url` with its password (if any) shown as `***`."""
    return _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", url)


def secrets_in(env: Mapping[str, str]) -> tuple[str, ...]:
    """The passwords in the environment's store and broker URLs, longest first."""
    found: set[str] = set()
    for name in SECRET_URLS:
        value = env.get(name) or ""
        try:
            password = urlsplit(value).password
        except ValueError:
            password = None
        match = _USERINFO.search(value)
        for candidate in (password, match["pw"] if match else None):
            if candidate:
                found.update({candidate, unquote(candidate)})
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret, URL password and conninfo password masked."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _CONNINFO.sub(lambda m: f"{m['head']}{MASK}", text)
    return redact_url(text)


class RedactingStream:
    """A text stream that masks secrets in everything written to it."""

    def __init__(self, inner: IO[str], secrets: Iterable[str]) -> None:
        self._inner = inner
        self._secrets = tuple(secrets)

    def write(self, text: str) -> int:
        self._inner.write(redact(text, self._secrets))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextmanager
def redacting_output(env: Mapping[str, str]) -> Iterator[None]:
    """stdout and stderr masked (see the module docstring) until the block ends."""
    secrets = secrets_in(env)
    saved = sys.stdout, sys.stderr
    sys.stdout = RedactingStream(saved[0], secrets)
    sys.stderr = RedactingStream(saved[1], secrets)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
