"""An answer's words for the phrase rules (names.py): `norm` and `words`, identifiers as one word, `Answer`'s
tokens, sentences and name glue, `kind_of` for known places, and `count_words`'s early stop."""

from __future__ import annotations

import pytest

from finsec.grading.names import IDENTIFIER, Answer, count_words, kind_of, norm, words
from tests.unit.finsec.test_deterministic_grader import fails_because, passes


@pytest.mark.parametrize(
    ("word", "normed"),
    [
        ("Delaware", "delaware"),
        ("U.S.", "us"),
        ("McDonald's", "mcdonald"),
        ("McDonalds", "mcdonald"),
        ("Exchanges", "exchange"),
        ("business", "business"),
        ("bus", "bus"),
        ("Texas", "texa"),
    ],
)
def test_norm(word: str, normed: str) -> None:
    assert norm(word) == normed


def test_words_drop_articles_and_keep_an_identifier_whole() -> None:
    assert words("The New York Stock Exchange") == ["new", "york", "stock", "exchange"]
    assert words("file number 001-36743") == ["file", "number", "001-36743"]
    assert words("36743-001") == ["36743-001"]  # the same digits, another identifier
    assert words("Dela\u00adware") == ["delaware"]  # read through normalize
    assert IDENTIFIER.fullmatch("001-36743") and not IDENTIFIER.fullmatch("2024")


def test_kind_of_knows_states_and_countries() -> None:
    assert [kind_of(p) for p in ("delaware", "new york", "usa", "united kingdom", "deloitte")] == [
        "state",
        "state",
        "country",
        "country",
        "other",
    ]


def test_count_words_stops_at_the_limit() -> None:
    assert count_words("a b c d e", 3) == 3
    assert count_words("a b", 10) == 2
    assert count_words("", 10) == 0


def test_answer_sentences_do_not_end_at_abbreviations() -> None:
    parsed = Answer("Apple Inc. is based in the U.S. and in California. New line")
    by_word = dict(zip((t.norm for t in parsed.tokens), parsed.sentences, strict=False))
    assert by_word["apple"] == by_word["us"] == by_word["california"] == 0
    assert by_word["new"] == by_word["line"] == 1
    assert Answer("Delaware\nNevada").sentences == [0, 1]


def test_answer_glue_and_phrases() -> None:
    parsed = Answer("Ernst & Young - LLP. Texas")
    assert [t.norm for t in parsed.tokens] == ["ernst", "young", "llp", "texa"]
    assert parsed.glued(0, 1) and parsed.glued(1, 2)
    assert not parsed.glued(2, 3)  # another sentence
    assert parsed.same_sentence(0, 2) and not parsed.same_sentence(0, 3) and not parsed.same_sentence(0, 9)
    assert parsed.phrase(0, 2) == "Ernst & Young - LLP"


def test_answer_name_words_follow_case_when_the_answer_uses_it() -> None:
    cased = Answer("Go to the Delaware office")
    assert cased.cased and [cased.name_word(k) for k in range(5)] == [True, False, False, True, False]
    lower = Answer("go to delaware")
    assert not lower.cased and lower.name_word(2)  # without case, any content word may be a name
    assert [t.content for t in Answer("the 42 001-36743 Delaware").tokens] == [False, False, True, True]


# --- through the grader -------------------------------------------------------------------------------------------


def test_an_identifier_is_one_word() -> None:
    expected = "001-36743"
    assert passes(expected, "Apple's commission file number is 001-36743.")
    fails_because(expected, "36743-001", "lacks 001-36743")  # the same digits, another number
    fails_because(expected, "001-36743 or 001-36744", "hedges")
    assert passes("2024-12-31", "December 31, 2024")  # a date is not an identifier
