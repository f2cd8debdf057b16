from __future__ import annotations

import codecs
from pathlib import Path

from workers.fetching.charset import declared_charset, decode

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"
RUSSIAN = "Пиво светлое нефильтрованное, цена за бутылку"
FRENCH = "Crème brûlée à la française, prix spécial"


def test_bom_wins_over_everything() -> None:
    body = codecs.BOM_UTF8 + "<meta charset='windows-1251'>café".encode()
    assert decode(body, "text/html; charset=iso-8859-1") == (
        "<meta charset='windows-1251'>café",
        "utf-8",
    )


def test_utf16_bom() -> None:
    assert decode(codecs.BOM_UTF16_LE + "żółw".encode("utf-16-le"))[0] == "żółw"


def test_http_header_charset_comes_before_the_meta_tag() -> None:
    body = f"<meta charset='utf-8'><p>{RUSSIAN}</p>".encode("cp1251")
    text, encoding = decode(body, "text/html; charset=windows-1251")
    assert RUSSIAN in text and encoding == "cp1251"


def test_meta_http_equiv_and_xml_declaration() -> None:
    meta = b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
    assert declared_charset(meta) == "koi8_r"
    assert declared_charset(b'<?xml version="1.0" encoding="ISO-8859-1"?><rss/>') == "cp1252"


def test_latin1_page_decodes_as_its_windows_superset() -> None:
    text, encoding = decode((PAGES / "product_latin1.html").read_bytes())
    assert "Crème brûlée à l'érable" in text and "12,50 €" in text
    assert encoding == "cp1252"


def test_cp1251_page_with_meta_charset() -> None:
    text, _ = decode((PAGES / "product_cp1251.html").read_bytes())
    assert "Чай чёрный «Утро»" in text and "руб." in text


def test_undeclared_pages_fall_back_sensibly() -> None:
    assert decode(f"<p>{RUSSIAN}</p>".encode("cp1251"))[0] == f"<p>{RUSSIAN}</p>"
    assert decode(f"<p>{FRENCH}</p>".encode("latin-1"))[0] == f"<p>{FRENCH}</p>"
    assert decode("<p>naïve ☃</p>".encode())[0] == "<p>naïve ☃</p>"


def test_unknown_or_lying_labels_are_skipped() -> None:
    assert decode("café".encode(), "text/html; charset=x-made-up")[0] == "café"
    assert decode(b"<meta charset='utf-16'>ok")[0] == "<meta charset='utf-16'>ok"
