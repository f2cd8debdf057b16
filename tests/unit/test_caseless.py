"""`Caseless.found_in` answers as `re.search(pattern, text, re.IGNORECASE)` does, for
every pattern the extraction uses it for, on any text (ASCII takes the lower-casing
path, the rest the folding pattern) and on the corpus's real class and id values."""

from __future__ import annotations

import re
import string

import corpus_files
import pytest
from corpus_scoring import body, entries
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.extraction.adapters import structured_data, visible, visible_marks, visible_stock
from workers.extraction.caseless import Caseless

PATTERNS = sorted((value for module in (structured_data, visible, visible_marks, visible_stock)
                   for value in vars(module).values() if isinstance(value, Caseless)),
                  key=lambda p: p.pattern)


def words(pattern: Caseless) -> list[str]:
    """The pattern's plain words (runs of letters), to build texts that match."""
    return re.findall(r"[^\W\d_]{3,}", re.sub(r"\\.", " ", pattern.pattern))


def test_the_extraction_uses_it_for_its_class_and_label_patterns() -> None:
    assert len(PATTERNS) >= 10


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:30])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_found_in_is_the_ignorecase_answer(pattern: Caseless, data: st.DataObject) -> None:
    folding = re.compile(pattern.pattern, re.IGNORECASE)
    word = data.draw(st.sampled_from(words(pattern)))
    # the word in any mix of cases, between ASCII or any text, sometimes cut short
    cased = "".join(c.upper() if up else c for c, up in
                    zip(word, data.draw(st.lists(st.booleans(), min_size=len(word),
                                                 max_size=len(word)))))
    cut = cased[:data.draw(st.integers(len(cased) - 1, len(cased)))]
    around = data.draw(st.sampled_from([st.text(string.printable, max_size=12), st.text(max_size=12)]))
    text = data.draw(around) + cut + data.draw(around)
    assert pattern.found_in(text) == (folding.search(text) is not None), text


def test_found_in_agrees_on_every_class_and_id_of_the_corpus() -> None:
    values: set[str] = set()
    for entry in corpus_files.present_or_skip(entries())[::3]:
        tree = structured_data.parse_html(body(entry).decode("utf-8", "replace"))
        if tree is not None:
            values.update(str(v) for v in tree.xpath("//@class | //@id"))
    assert len(values) > 5_000 and any(not v.isascii() for v in values)
    for pattern in PATTERNS:
        folding = re.compile(pattern.pattern, re.IGNORECASE)
        wrong = [v for v in values if pattern.found_in(v) != (folding.search(v) is not None)]
        assert wrong == [], (pattern, wrong[:5])


def test_a_pattern_the_fast_path_would_answer_differently_is_refused() -> None:
    with pytest.raises(ValueError, match="lower case"):
        Caseless("Sale")  # the lower-cased text never holds an "S"
    with pytest.raises(ValueError, match="matches an ASCII one"):
        Caseless("\u212aelvin")  # the Kelvin sign matches "k" when case is ignored
    assert Caseless(r"\bsale\W\S").found_in("A SALE!X")  # escapes are not letters
    assert Caseless("ürün").found_in("YENİ ÜRÜN") and not Caseless("ürün").found_in("URUN")
