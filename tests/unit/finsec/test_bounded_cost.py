"""No tool's work grows faster than its input on text a model writes or a page holds: for each, the inputs that once
went quadratic or worse (repetitive text a policy under RL falls into, runs of spaces, long chains, deep nesting)
are timed at two sizes, 4x apart. Linear work takes ~4x as long; quadratic ~16x. A ratio, never an absolute time
(the machine's speed varies); the least of several runs at each size, and a reading over the bound is taken again
(super-linear work fails every reading; a burst of load on a shared CI machine does not last through three).
bench/worst_inputs.py reports the costs."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from finsec.grading.deterministic import compare
from finsec.grading.grounding import answer_figures
from finsec.grading.names import Answer
from finsec.retrieval import concepts
from finsec.retrieval.passages import IndexedDocument, PassageRetriever, excerpt
from finsec.taskgen.build import Source, build_tasks
from finsec.text.html_to_text import html_to_text

LINEAR = 10.0  # between linear (4; up to ~8 where copying big strings runs out of cache) and quadratic (16)


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def timed(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def least_time(work: Callable[[], object], runs: int = 3) -> float:
    return min(timed(work) for _ in range(runs))


def growth(
    work: Callable[[str], object], make: Callable[[int], object], n: int, runs: int = 4, readings: int = 3
) -> float:
    """The least time at 4n over the least at n, the two sizes taken in turn (the machine's load drifts); the least
    of up to `readings` readings, stopping at the first under LINEAR."""
    small, big = make(n), make(4 * n)
    ratios = []
    # Collections of the test process's own heap are no part of the work's cost: the heap so far is frozen.
    gc.collect()
    gc.freeze()
    try:
        while len(ratios) < readings and (not ratios or ratios[-1] >= LINEAR):
            times = [(timed(lambda: work(small)), timed(lambda: work(big))) for _ in range(runs)]
            ratios.append(min(b for _, b in times) / min(s for s, _ in times))
    finally:
        gc.unfreeze()
    return min(ratios)


FILING = excerpt(
    fill("Revenue | 1,234 | 5,678\nTotal net sales increased 12% in fiscal 2024. Employees: 164,000.\n", 300_000)
)
RETRIEVER = PassageRetriever()
PROMPTS = {  # retrieve_information: the question side, over one stored filing
    "how many of the": lambda n: fill("how many of the ", n),
    "of the company": lambda n: fill("of the company ", n),
    "'head' and spaces": lambda n: "head" + " " * n + "count?",
    "'of' and spaces": lambda n: "of" + " " * n + "Apple's revenue",
    "distinct words in six parts": lambda n: ", ".join(f"w{k}z" for k in range(n // 8)),
}


@pytest.mark.parametrize("shape", list(PROMPTS))
def test_retrieve_information_is_linear_in_its_prompt(shape):
    assert growth(lambda q: RETRIEVER.answer(q, {"doc": FILING}), PROMPTS[shape], 12_500) < LINEAR


def test_retrieve_information_scores_a_text_once_however_many_keys_name_it():
    eight = {f"d{k}": FILING for k in range(8)}
    prompt = PROMPTS["distinct words in six parts"](12_500)
    one, many = (least_time(lambda docs=docs: RETRIEVER.answer(prompt, docs)) for docs in ({"doc": FILING}, eight))
    assert many / one < LINEAR  # 8 keys, one text: not 8 scorings (the text's share of the work is most of it)


DOCUMENTS = {  # parse_html_page and the first question over a stored document
    "a row of ')' cells": (
        html_to_text,
        lambda n: ("<table><tr><td>x</td>" + fill("<td>)</td>", n) + "</tr></table>").encode(),
        100_000,
    ),
    "tables nested as deep as their text is long": (
        html_to_text,
        lambda n: ("<table><tr><td>" * (n // 3_000) + fill("word ", n) + "</td></tr></table>" * (n // 3_000)).encode(),
        250_000,
    ),
    # within one piece of a long line (passages.LINE_CHARS): the headcount tag's pattern once read a run of
    # digits again from each of its digits
    "a line of '1,'": (IndexedDocument, lambda n: fill("1,", n), 1_400),
    "a line of '1'": (IndexedDocument, lambda n: "1" * n, 1_400),
    "lines of years that fail at their end": (
        IndexedDocument,
        lambda n: fill("2020 2021 2022 2023 2024 2025 2026 Total\n", n),
        50_000,
    ),
    "one long line of words": (IndexedDocument, lambda n: fill("revenue ", n), 100_000),
}


@pytest.mark.parametrize("shape", list(DOCUMENTS))
def test_reading_and_indexing_a_document_is_linear_in_its_size(shape):
    work, make, n = DOCUMENTS[shape]
    assert growth(work, make, n) < LINEAR


ANSWERS = {  # verify: the answer is graded (at most max_answer_chars) and its figures grounded (all of it)
    "grounding: 'fiscal' and spaces": (answer_figures, lambda n: "fiscal" + " " * n + "x", 25_000),
    "grounding: 'cik' and spaces": (answer_figures, lambda n: "cik" + " " * n + "x", 25_000),
    "grounding: 'FY' and spaces": (answer_figures, lambda n: "FY" + " " * n + "x", 25_000),
    "names: '10-' chains that end in '-'": (Answer, lambda n: fill("10-", n - n % 3), 4_000),
    "grading: a designation at every value": (
        lambda a: compare("$5 million", a),
        lambda n: "$5 million " + fill("answer ", n // 2) + fill("2024 ", n // 2),
        4_000,
    ),
    "grading: 'the ' before the answer": (
        lambda a: compare("$5 million", a),
        lambda n: fill("the ", n) + "$5 million",
        25_000,
    ),
}


@pytest.mark.parametrize("shape", list(ANSWERS))
def test_grading_and_grounding_are_linear_in_the_answer(shape):
    work, make, n = ANSWERS[shape]
    assert growth(work, make, n) < LINEAR


@pytest.mark.parametrize(
    "question",
    [fill("how many of the ", 50_000), fill("of ", 50_000), "of" + " " * 50_000, "head" + " " * 50_000 + "x"],
)
def test_the_concept_rules_read_a_prompt_in_one_pass(question):
    assert growth(lambda q: (concepts.asks_headcount(q), concepts.owner(q)), lambda n: question[:n], 12_500) < LINEAR


_CONTEXT = (
    '<xbrli:context id="c"><xbrli:period><xbrli:startDate>2024-01-01</xbrli:startDate><xbrli:endDate>'
    '2024-12-31</xbrli:endDate></xbrli:period></xbrli:context><xbrli:unit id="usd"><xbrli:measure>iso4217:USD'
    '</xbrli:measure></xbrli:unit><ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="c">December 31, '
    "2024</ix:nonNumeric>"
)
_FACT = '<ix:nonFraction name="us-gaap:Revenues" contextRef="c" unitRef="usd" scale="6" decimals="-6">1,234'
FILINGS = {  # `finsec tasks build` over a filing from live EDGAR, which is untrusted input
    "unclosed facts": lambda n: "<ix:header>" + _CONTEXT + fill(_FACT, n),
    "facts in running text": lambda n: "<ix:header>" + _CONTEXT + fill(f"<p>{_FACT}</ix:nonFraction> million</p>", n),
    "facts in tables that never close": lambda n: (
        "<ix:header>"
        + _CONTEXT
        + "<p>(In millions)</p>"
        + fill(f"<table><tr><td>Revenue</td><td>({_FACT}</ix:nonFraction>)</td></tr>", n)
    ),
    "unclosed contexts": lambda n: "<ix:header>" + fill('<xbrli:context id="c"><xbrli:instant>2024-12-31', n),
    "a run of '<'": lambda n: "<ix:header>" + _CONTEXT + "<" * n,
    "unclosed hidden sections": lambda n: (
        "<ix:header>" + _CONTEXT + fill("<ix:hidden>" + _FACT + "</ix:nonFraction>", n)
    ),
}
_SOURCE = Source("0000000001", "EXM", "10-K", "0000000001-25-000001", "https://www.sec.gov/Archives/edgar/data/1/x")


@pytest.mark.parametrize("shape", list(FILINGS))
def test_building_tasks_is_linear_in_the_filing(shape):
    assert growth(lambda document: build_tasks(_SOURCE, document), FILINGS[shape], 100_000) < LINEAR


_TAGS = 40  # the number of tags stays; what grows is one tag's attributes (inside the readers' 4,000-character window)
ONE_TAG = {
    "a fact's unquoted attribute": lambda n: (
        "<ix:header>"
        + _CONTEXT
        + _TAGS
        * (
            '<ix:nonFraction name="us-gaap:Revenues" contextRef="c" unitRef="usd" '
            + "a" * n
            + ">1,234</ix:nonFraction>"
        )
    ),
    "a context's attributes": lambda n: (
        "<ix:header>"
        + _TAGS
        * (
            '<xbrli:context id="c" '
            + "a" * n
            + "><xbrli:period><xbrli:instant>2024-12-31</xbrli:instant></xbrli:period>"
            "</xbrli:context>"
        )
    ),
    "a member's repeated dimensions": lambda n: (
        "<ix:header>"
        + _TAGS
        * (
            '<xbrli:context id="c"><xbrli:period><xbrli:instant>2024-12-31</xbrli:instant></xbrli:period>'
            "<xbrldi:explicitMember " + fill('dimension="x" ', n) + ">m</xbrldi:explicitMember></xbrli:context>"
        )
    ),
}


@pytest.mark.parametrize("shape", list(ONE_TAG))
def test_reading_a_filing_is_linear_in_one_tags_attributes(shape):
    assert growth(lambda document: build_tasks(_SOURCE, document), ONE_TAG[shape], 900) < LINEAR
