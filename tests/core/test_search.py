"""The console's one search language (spectui.core.search): a regular expression or plain text, smart case,
one sentence for a pattern that does not compile."""

import re

import pytest

from spectui.core.search import Query, SearchError, found, spans

LINE = "[2026-11-30 TP0] Decode batch, accept len: 3.62, accept rate: 0.41, gen throughput (token/s): 61.20"


def test_a_query_is_a_regular_expression_unless_plain_text():
    assert found(Query(r"accept len: [2-9]").compile(), LINE)
    assert not found(Query(r"accept len: [2-9]", literal=True).compile(), LINE)
    assert found(Query("(token/s)", literal=True).compile(), LINE)      # brackets as typed
    assert spans(Query("(token/s)", literal=True).compile(), LINE) == [(LINE.index("(token/s)"),
                                                                         LINE.index("(token/s)") + 9)]
    assert Query("a.b", literal=True).regex == re.escape("a.b") and Query("a.b").regex == "a.b"
    assert (Query("x").mode, Query("x", literal=True).mode) == ("regex", "text")


def test_case_follows_the_query():
    assert Query("decode").ignore_case and found(Query("decode").compile(), LINE)
    assert not Query("DECODE").ignore_case and not found(Query("DECODE").compile(), LINE)
    assert Query(r"\S+ batch").ignore_case           # an escape is not an upper-case letter
    assert not Query(r"\S+ batch", literal=True).ignore_case


def test_empty_matches_are_not_marked_and_no_pattern_finds_every_line():
    assert spans(Query("x*").compile(), "abc") == []
    assert spans(None, LINE) == [] and found(None, LINE)


@pytest.mark.parametrize("bad", ["accept len: [2-", "(unclosed", "*"])
def test_a_bad_regex_is_one_sentence_and_plain_text_takes_it(bad):
    with pytest.raises(SearchError) as info:
        Query(bad).compile()
    sentence = str(info.value)
    assert sentence.startswith(repr(bad)) and "not a regular expression" in sentence and sentence.endswith(".")
    assert "\n" not in sentence and "Traceback" not in sentence
    assert Query(bad, literal=True).compile().pattern == re.escape(bad)
