"""Grounding (finsec/grading/grounding.py, finsec/grounder.py): whether an answer's figures appear in the
documents its session stored, at what cost, and what require_grounded_answer does with the judge.

The HTTP behaviour of a verify row (seed, parse, retrieve, verify) is in test_contract_in_process.py."""

from __future__ import annotations

import pytest

import finsec.grounder as grounding_service
from finsec.corpus.generate import questions
from finsec.grading.grounding import (
    MAX_FIGURE_CHARS,
    MAX_FIGURES,
    MAX_LISTED,
    NOT_CHECKED,
    FigureIndex,
    answer_figures,
    ground,
)
from harness.bodies import episode_seed, new_session_id
from harness.inprocess import InProcess
from harness.llm_stub import responses_reply
from tests.unit.deployments.test_contract_in_process import parsed_then_answered

Q = questions()[0]
STATEMENT = """Consolidated Statements of Cash Flows (in millions)
Year Ended December 31, | 2023 | 2024
Net cash provided by (used in) operating activities | 84,946 | 115,877
Net increase (decrease) in net sales | (5,607) | 8,214
Effective tax rate | 19.0% | 24.1%
Average interest rate | 0.5 | 5.0%"""


def grounded(answer: str, *texts: str):
    return ground(answer_figures(answer), [FigureIndex(t) for t in texts])


@pytest.mark.parametrize(
    "answer",
    [
        "$115.9 billion",  # the table's 115,877 (in millions) at the billions place
        "$115,877 million",
        "$116 billion",  # coarser still: 115,877 rounds to 116
        "115,877,000,000 dollars",
        "a decrease of $5,607 million",  # the sign in words, the table's in parentheses: magnitudes compared
        "24.1%",
        "8,214",
    ],
)
def test_a_figure_written_at_another_scale_or_precision_is_grounded(answer):
    """Mutation: comparing at one scale only (115,877 vs 115.9e9), or signed values, fails this."""
    assert grounded(answer, STATEMENT).grounded is True


@pytest.mark.parametrize(
    "answer, listed",
    [
        ("$120 billion", "$120 billion"),  # 115.877 billion is not 120 at the billions place
        ("$115.87 billion", "$115.87 billion"),  # 115,877 million rounds to 115.88 billion, not .87
        ("$5.0 million", "$5.0 million"),  # the text's "5.0%" is a percentage, never an amount
        ("24.2%", "24.2%"),
    ],
)
def test_a_figure_the_text_does_not_state_is_listed(answer, listed):
    """Mutation: a tolerance wider than half the last digit, or letting "5.0%" state "$5.0 million", fails this."""
    result = grounded(answer, STATEMENT)
    assert result.grounded is False and result.ungrounded_figures == [listed]


def test_a_text_less_precise_than_the_figure_does_not_ground_it_but_added_zeros_are_no_precision():
    """ "116" does not state $115.9 billion, nor a stray "7" $7.3 million: the figure's last digit is not in the
    text. Zeros the answer adds ("$6.080", "51.0%") state nothing the text does not. Mutation: a tolerance of a
    whole last digit grounds "$115.9 billion" on "116"."""
    assert grounded("$115.9 billion", "Operating cash flow was $116 billion").grounded is False
    assert grounded("$7.3 million", "See Note 7 and Item 7.").grounded is False
    assert grounded("$116 billion", "Operating cash flow was $115.9 billion").grounded is True
    for answer, text in (
        ("$6.080", "Diluted | $6.08"),
        ("51.0%", "about 51% of revenues"),
        ("$7.0 million", "See Note 7 and Item 7."),
    ):  # common digits: found almost anywhere
        assert grounded(answer, text).grounded is True, answer


def test_basis_points_and_percentages_ground_each_other():
    assert grounded("50 bps", "the rate rose 0.5% in the year").grounded is True
    assert grounded("0.5%", "the rate rose 50 basis points in the year").grounded is True


def test_dates_and_years_are_not_figures_and_an_answer_without_figures_is_not_checked():
    """Mutation: checking years (2031 appears in no text here) would make this answer ungrounded."""
    assert grounded("Delaware", STATEMENT) == NOT_CHECKED
    assert grounded("It ended on September 27, 2031, in fiscal 2031", STATEMENT).grounded is None
    assert grounded("$115.9 billion in fiscal 2031", STATEMENT).grounded is True


def test_every_figure_must_appear_and_no_document_grounds_nothing():
    assert grounded("$115.9 billion, up from $84.9 billion", STATEMENT).grounded is True
    result = grounded("$115.9 billion or $4,321.7 million", STATEMENT)
    assert result.grounded is False and result.ungrounded_figures == ["$4,321.7 million"]
    assert ground(answer_figures("$115.9 billion"), []).ungrounded_figures == ["$115.9 billion"]
    assert grounded("$115.9 billion", STATEMENT, "Another document, with 7 numbers of 3 kinds.").grounded is True


def test_the_listed_figures_are_capped_in_count_and_length():
    answer = "; ".join(str(n) + f",{n:03d}" * 13 for n in range(101, 131))  # 30 figures of 55 characters
    result = grounded(answer, STATEMENT)
    assert result.grounded is False and len(result.ungrounded_figures) == MAX_LISTED
    assert all(len(f) <= MAX_FIGURE_CHARS for f in result.ungrounded_figures)
    flood = " ".join(["115,877"] * (MAX_FIGURES + 1))  # more than the grader reads: not grounded, unread
    assert grounded(flood, STATEMENT).grounded is False and "too many" in grounded(flood, STATEMENT).explanation()


def test_no_shard_call_of_its_own_and_one_index_per_filing(monkeypatch):
    """A GRPO group of 16 verifies of one filing: one figure index built, and no shard call beyond the verify's own
    (its answer carries the refs). Mutation: indexing per verify, no cache by digest, or reading the refs with a
    call of their own, fails this."""
    builds, calls = [], []

    class Counted(FigureIndex):
        def __init__(self, text):
            builds.append(len(text))
            super().__init__(text)

    monkeypatch.setattr(grounding_service, "FigureIndex", Counted)
    with InProcess() as app:
        for shard in app.app.store.shards:

            def counted(ops, run=shard.run):
                calls.extend(name for name, _ in ops)
                return run(ops)

            monkeypatch.setattr(shard, "run", counted)
        clients = [app.new_client() for _ in range(16)]
        for client in clients:
            app.post("/seed_session", client=client, json=episode_seed(new_session_id()))
            app.post("/parse_html_page", client=client, json={"url": Q["url"], "key": "doc"})
        calls.clear()
        for client in clients:
            assert (
                app.post("/verify", client=client, json=parsed_then_answered(Q["expected_answer"], "doc")).json()[
                    "grounded"
                ]
                is True
            )
        assert len(builds) == 1 and calls == ["finish_verify"] * 16
        resent = app.post("/verify", client=clients[0], json=parsed_then_answered(Q["expected_answer"], "doc"))
        assert resent.json()["grounded"] is True  # a re-send's cached verdict is grounded as the first was
        never_seeded = app.new_client()
        assert (
            app.post("/verify", client=never_seeded, json=parsed_then_answered(Q["expected_answer"])).json()["grounded"]
            is None
        )


def test_an_ungrounded_answer_is_not_sent_to_the_judge(stub):
    """require_grounded_answer with an LLM judge: an ungrounded answer is 0 without a judge call (its grade would
    not count); a grounded one is judged as usual. Mutation: judging first and zeroing after fails this."""
    with InProcess(
        judge_model={"base_url": stub.base_url, "model": "judge"},
        judge_retry_delays=[0.0, 0.0],
        require_grounded_answer=True,
        edgar_search_mode=None,
    ) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        row = app.post("/verify", json=parsed_then_answered(Q["expected_answer"])).json()
        assert (row["reward"], row["failure_kind"], row["grounded"]) == (0.0, "finance_sec_search:ungrounded", False)
        assert stub.requests == []
        app.post("/parse_html_page", json={"url": Q["url"], "key": "doc"})
        stub.reply(responses_reply("The rating is: [[2]]"))
        row = app.post("/verify", json=parsed_then_answered(Q["expected_answer"], "doc")).json()
        assert (row["reward"], row["failure_kind"], row["grounded"]) == (1.0, None, True)
        assert len(stub.requests) == 1
