"""Bytes -> text, the way a browser would decide, in this order:

BOM, the HTTP Content-Type charset, `<meta charset>` / `<meta http-equiv>` (or
an XML declaration), strict UTF-8, then a guess. Guessing single-byte
encodings from a short page is unreliable for Latin text (charset-normalizer
happily calls French cp1250), so a guess is trusted only for non-Latin scripts;
everything else falls back to cp1252, the superset browsers use for latin-1.
"""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

__all__ = ["declared_charset", "decode"]

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_XML_DECL = re.compile(rb"<\?xml[^>]+encoding\s*=\s*[\"']([\w.:-]+)", re.IGNORECASE)
#: Labels browsers read as windows-1252 (WHATWG encoding standard).
_AS_CP1252 = {"latin_1", "iso8859_1", "ascii", "cp1252"}
_NON_LATIN_GUESSES = {
    "cp1251",
    "koi8_r",
    "koi8_u",
    "cp866",
    "iso8859_5",
    "mac_cyrillic",
    "cp1253",
    "iso8859_7",
    "shift_jis",
    "cp932",
    "euc_jp",
    "gb2312",
    "gb18030",
    "gbk",
    "big5",
    "euc_kr",
    "cp949",
    "cp1255",
    "cp1256",
    "iso8859_8",
    "iso8859_6",
    "tis_620",
    "cp874",
}


def decode(body: bytes, content_type: str = "") -> tuple[str, str]:
    """Decode `body`; returns (text, the Python codec name that was used)."""
    for encoding, start in _candidates(body, content_type):
        try:
            return body[start:].decode(encoding), encoding
        except (UnicodeDecodeError, LookupError):
            continue
    # latin-1 maps every byte, so this last resort cannot fail.
    return body.decode("latin-1"), "latin_1"


def declared_charset(body: bytes, content_type: str = "") -> str | None:
    """The charset the response declares (header first, then the document)."""
    header = _HEADER_CHARSET.search(content_type or "")
    if header and _codec(header.group(1)):
        return _codec(header.group(1))
    head = body[:4096]
    for pattern in (_META_CHARSET, _XML_DECL):
        found = pattern.search(head)
        if found and _codec(found.group(1).decode("ascii", "replace")):
            return _codec(found.group(1).decode("ascii", "replace"))
    return None


def _candidates(body: bytes, content_type: str) -> list[tuple[str, int]]:
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return [(encoding, len(bom))]
    declared = declared_charset(body, content_type)
    found = [(declared, 0)] if declared else []
    found.append(("utf-8", 0))
    guess = _guess(body)
    if guess:
        found.append((guess, 0))
    return found + [("cp1252", 0)]


def _codec(label: str) -> str | None:
    try:
        name = codecs.lookup(label.strip().lower()).name.replace("-", "_")
    except LookupError:
        return None
    # UTF-16 declared in a document that we could read as ASCII is a lie.
    if name.startswith(("utf_16", "utf_32")):
        return "utf-8"
    return "cp1252" if name in _AS_CP1252 else name


def _guess(body: bytes) -> str | None:
    best = from_bytes(body[:65536]).best()
    if best is None:
        return None
    name = codecs.lookup(best.encoding).name.replace("-", "_")
    return name if name in _NON_LATIN_GUESSES else None
