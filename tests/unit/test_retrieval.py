"""The embedded retrieval backend: tokenizer, passage cutting, question weighting, and answer quality on the
generated corpus (one filing and all filings in a session). Real-filing quality is measured in bench/."""

from __future__ import annotations

import pytest

from deployments.corpus.generate import questions, write_corpus
from deployments.retrieval.passages import PassageRetriever, cut_passages, excerpt, query_weights
from deployments.retrieval.prompt import character_ranges, placeholder_keys, substitute
from deployments.retrieval.tokenize import tokenize
from deployments.text.html_to_text import html_to_text


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("Revenue was $1,234.5 million, up 12.5% in FY2024 (10-K)", ["revenu", "1234.5", "million", "12.5",
                                                                     "fy2024", "10-k"]),
        ("Apple\u2019s I.R.S. number", ["appl", "irs", "number"]),
        ("increased increases increase", ["increas"] * 3),
        ("expenses expense sales sale activities activity", ["expens", "expens", "sale", "sale", "activity",
                                                             "activity"]),
    ],
)
def test_tokenizer(text, tokens):
    assert tokenize(text) == tokens


def test_question_boilerplate_and_periods_weigh_little():
    weights = query_weights("What was Tesla's total net income for the second quarter of fiscal 2025?")
    assert "what" not in weights and weights["net"] == weights["incom"] == weights["total"] == 1.0
    assert weights["2025"] < 1 and weights["quarter"] < 1 and weights["fiscal"] < 1
    assert set(tokenize("earnings per share")) <= set(query_weights("What was diluted EPS?"))


def test_a_value_row_keeps_the_caption_under_it():
    text = "x" * 690 + "\nDelaware | 61-1767919\n(State of incorporation) | (I.R.S. Employer Identification No.)"
    passages = cut_passages(text)
    holder = next(p for p in passages if "61-1767919" in text[p.start : p.end])
    assert "Employer Identification" in text[holder.start : holder.end]


def test_a_passage_inside_a_table_carries_its_heading_and_columns():
    rows = "\n".join(f"Line item {i} | {i},000 | {i},500" for i in range(60))
    text = "Consolidated Balance Sheets\nDecember 31, 2024 | December 31, 2023\n" + rows + "\nTotal assets | 9 | 8"
    last = cut_passages(text)[-1]
    assert "Total assets" in text[last.start : last.end]
    assert last.context == "Consolidated Balance Sheets / December 31, 2024 | December 31, 2023"


def test_prompt_placeholders_ranges_and_substitution():
    assert placeholder_keys("{{a}} and {{ b }} and {{a}} {x}") == ["a", " b "]
    assert character_ranges([{"key": "a", "start": 1, "end": 3}, "junk", {"key": "a", "start": 0, "end": 2}]) == {
        "a": (0, 2)}
    assert substitute("{{a}}: {{b}}", {"a": "{{b}} {braces}", "b": "B"}) == "B {braces}: B"


@pytest.fixture(scope="module")
def corpus_texts(tmp_path_factory):
    root = write_corpus(tmp_path_factory.mktemp("corpus") / "c")
    return {q["url"]: html_to_text((root / q["url"].removeprefix("https://www.sec.gov/")).read_bytes())
            for q in questions()}


def test_every_generated_question_is_answered_in_the_first_8000_characters(corpus_texts):
    retriever = PassageRetriever()
    session = {url.rsplit("/", 1)[1]: excerpt(text) for url, text in corpus_texts.items()}
    for q in questions():
        alone = retriever.answer(q["question"], {"doc": session[q["url"].rsplit("/", 1)[1]]})
        assert q["evidence"] in alone[:8000], q["question"]
        together = retriever.answer(q["question"], session)[:8000]  # every filing of the corpus in one session
        own = q["url"].rsplit("/", 1)[1]
        assert any(b.startswith(own) and q["evidence"] in b for b in together.split("\n[")), q["question"]


def test_reply_fits_its_budget_and_cites_usable_ranges(corpus_texts):
    text = next(iter(corpus_texts.values()))
    reply = PassageRetriever(reply_chars=1_000).answer("revenues", {"doc": excerpt(text, 100)})
    assert len(reply) < 1_000 + 400
    start, end = map(int, reply.split("[doc characters ")[1].split("]")[0].split("-"))
    assert start >= 100 and text[start:end].strip() in reply


def test_a_character_range_keeps_only_the_passages_inside_it(corpus_texts):
    text = max(corpus_texts.values(), key=len)
    start, end = len(text) // 3, len(text) // 3 + 2_000
    reply = PassageRetriever().answer("revenues net income total", {"doc": excerpt(text, start, end)})
    spans = [tuple(map(int, part.split("]")[0].split("-"))) for part in reply.split("[doc characters ")[1:]]
    assert spans and all(start <= a < b <= end for a, b in spans)
    for a, b in spans:
        assert text[a:b] in reply
