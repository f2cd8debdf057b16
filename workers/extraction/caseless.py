"""Case-insensitive regular expressions for the extraction's hot tests.

`re.IGNORECASE` makes the `re` engine fold every character it compares, and an
alternation of words then loses its fast first-character scan: on the real-page
corpus's ~300,000 class and id values, `search` took ~3 µs a value (~10 µs for
the visible walk's noise pattern). Most of what these patterns read (class names,
ids, short labels) is ASCII, and for ASCII text lower-casing the text and matching
case-sensitively gives the same answer at ~5× the speed; any other text goes to
the `re.IGNORECASE` pattern, as before.
"""

from __future__ import annotations

import re
import string

__all__ = ["Caseless"]

_ESCAPE = re.compile(r"\\.")
_UPPER = re.compile(r"[A-Z]")


class Caseless:
    """`re.compile(pattern, re.IGNORECASE)`, asked only whether it occurs in a text."""

    __slots__ = ("pattern", "_lower", "_folding")

    def __init__(self, pattern: str) -> None:
        # the lower-cased text can only meet the pattern's lower-case letters: an upper-case
        # one (outside an escape such as \W or \S) would never match on the fast path
        if _UPPER.search(_ESCAPE.sub("", pattern)):
            raise ValueError(f"Caseless: write the pattern's letters in lower case: {pattern!r}")
        # nor may a non-ASCII letter of it match an ASCII one when case is ignored (the
        # Kelvin sign matches "k", the long s "s")
        if any(re.fullmatch(re.escape(char), letter, re.IGNORECASE)
               for char in set(pattern) if not char.isascii() for letter in string.ascii_letters):
            raise ValueError(f"Caseless: a non-ASCII letter of {pattern!r} matches an ASCII one")
        self.pattern = pattern
        self._lower = re.compile(pattern)
        self._folding = re.compile(pattern, re.IGNORECASE)

    def found_in(self, text: str) -> bool:
        """Whether the pattern occurs in `text`, ignoring case (`re.IGNORECASE`'s answer)."""
        if text.isascii():
            return self._lower.search(text.lower()) is not None
        return self._folding.search(text) is not None

    def __repr__(self) -> str:
        return f"Caseless({self.pattern!r})"
