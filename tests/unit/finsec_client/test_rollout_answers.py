"""The scripted policy's reading: the question's period, form and figure; the filing it picks; the answer it
reads from a retrieve_information reply. Replies are written in the embedded backend's format."""

from __future__ import annotations

import pytest

from finsec.grading.deterministic import DeterministicGrader
from finsec_client.policies.extract import answer
from finsec_client.policies.question import read_question
from finsec_client.policies.scripted import choose_filing

HEADER = "The 3 passages of filing that best match your prompt (BM25 search; ...):\n\n"

TEN_K_2024 = (
    HEADER
    + """[filing characters 862-904]
(Consolidated Statements of Operations / in thousands / 2024 | 2023)
Total net revenues | $2,996,439 | $979,207

[filing characters 354-1049]
Acme Corp. operates in software. Total net revenues for the fiscal year ended 2024-12-31 were $2,996,439 thousand, \
compared with $979,207 thousand in 2023, a decrease of 12.5%. We reported a net loss of $400,253 thousand.
As of 2024-12-31, we had approximately 1,451 full-time employees.
Consolidated Statements of Operations
(in thousands)
2024 | 2023
Total net revenues | $2,996,439 | $979,207
Operating income (loss) | $(665,715) | $279,435

[filing characters 1050-1352]
(Consolidated Statements of Operations / 2024 | 2023)
Net income (loss) | $(400,253) | $168,234
Consolidated Statements of Cash Flows
(in thousands)
2024 | 2023
Net cash provided by (used in) operating activities | $(563,601) | $239,701
Cash and cash equivalents, end of period | $465,771 | $140,998
"""
)

EIGHT_K = (
    HEADER
    + """[filing characters 0-694]
FORM 8-K
Item 2.02 Results of Operations and Financial Condition.
On 2024-01-28, Acme Corp. issued a press release announcing its results for the fourth quarter and fiscal year \
ended December 31, 2023. Fourth-quarter revenues were $264,121 thousand and full-year revenues were $979,207 thousand.
"""
)


def ask(text: str) -> str | None:
    return answer(read_question(text), TEN_K_2024)


def graded(question: str, expected: str, given: str | None) -> float:
    return DeterministicGrader().grade_sync(question, expected, given or "").reward


@pytest.mark.parametrize(
    "question, expected, reads",
    [
        (
            "What were Acme Corp. (ACME1)'s total net revenues for fiscal year 2024?",
            "$2,996,439 thousand",
            "$2,996,439 thousand",
        ),
        # the 2023 column of the same row, not the 2024 one
        (
            "What were Acme Corp. (ACME1)'s total net revenues for fiscal year 2023?",
            "$979,207 thousand",
            "$979,207 thousand",
        ),
        # "Net income (loss)", not "Operating income (loss)"; a passage cut mid-table takes its unit from another
        ("What was Acme Corp. (ACME1)'s net income for fiscal 2023?", "$168,234 thousand", "$168,234 thousand"),
        # the question says which way, so the magnitude is the answer
        (
            "What was Acme Corp. (ACME1)'s net loss for fiscal 2024?",
            "a net loss of $400,253 thousand",
            "$400,253 thousand",
        ),
        (
            "How much net cash did Acme Corp. (ACME1) use in operating activities in 2024?",
            "$563,601 thousand",
            "$563,601 thousand",
        ),
        ("How many full-time employees did Acme Corp. (ACME1) report at the end of 2024?", "1,451", "1,451"),
        ("What was Acme Corp. (ACME1)'s headcount at the end of 2024?", "1,451", "1,451"),  # a count, not money
        (
            "By what percentage did Acme Corp. (ACME1)'s total net revenues change in fiscal 2024 compared with 2023?",
            "-12.5%",
            "a decrease of 12.5%",
        ),
    ],
)
def test_the_answer_is_read_from_the_passages_and_graded_right(question, expected, reads):
    got = ask(question)
    assert got == reads
    assert graded(question, expected, got) == 1.0


def test_a_negative_figure_the_question_does_not_expect_keeps_its_sign():
    got = ask("What was Acme Corp. (ACME1)'s operating income for fiscal 2024?")
    assert got == "-$665,715 thousand"


def test_a_results_release_is_read_from_its_prose():
    question = "What fourth-quarter 2023 revenues did Acme Corp. (ACME1) announce in its 8-K results release?"
    got = answer(read_question(question), EIGHT_K)
    assert got == "$264,121 thousand"  # not the full-year figure beside it


def test_a_change_not_stated_is_computed_from_both_columns():
    reply = (
        HEADER
        + """[filing characters 0-50]
(Consolidated Statements of Operations / in thousands / 2024 | 2023)
Total net revenues | $1,100 | $1,000
"""
    )
    question = (
        "By what percentage did Acme Corp. (ACME1)'s total net revenues change in fiscal 2024 compared with 2023?"
    )
    assert answer(read_question(question), reply) == "10.0%"


def test_no_figure_for_the_asked_period_is_no_answer():
    assert ask("What were Acme Corp. (ACME1)'s total net revenues for fiscal year 2019?") is None
    assert (
        answer(
            read_question("What were Acme Corp. (ACME1)'s total net revenues for fiscal 2024?"),
            "ERROR: The key 'filing' was not found in the data storage.",
        )
        is None
    )


def test_the_question_names_ticker_form_period_and_kind():
    q = read_question(
        "What were Helixar Analytics Corp. (HLXR1)'s total net revenues for the quarter ended 2025-03-31?"
    )
    assert (q.ticker, q.form, q.date, q.year, q.kind) == ("HLXR1", "10-Q", "2025-03-31", 2025, "amount")
    assert {"revenu", "net", "total"} <= q.keywords and "helixar" not in q.keywords
    q = read_question("What fourth-quarter 2024 revenues did X Inc. (XX2) announce in its 8-K results release?")
    assert (q.form, q.year) == ("8-K", 2024)
    q = read_question("By what percentage did X Inc. (XX2)'s revenues change in fiscal 2024 compared with 2023?")
    assert (q.kind, q.years, q.year) == ("percent_change", (2024, 2023), 2024)
    assert read_question("How many employees did X Inc. (XX2) have?").kind == "count"


FILINGS = [
    {"form": "10-Q", "filing_date": "2025-05-02", "report_date": "2025-03-31", "filing_url": "q1"},
    {"form": "10-K", "filing_date": "2025-02-11", "report_date": "2024-12-31", "filing_url": "k2024"},
    {"form": "8-K", "filing_date": "2025-01-30", "report_date": "2025-01-29", "filing_url": "8k2024"},
    {"form": "8-K", "filing_date": "2024-06-30", "report_date": "2024-06-29", "filing_url": "8k-mid-2024"},
    {"form": "10-K", "filing_date": "2024-02-10", "report_date": "2023-12-31", "filing_url": "k2023"},
    {"form": "8-K", "filing_date": "2024-01-29", "report_date": "2024-01-28", "filing_url": "8k2023"},
]


@pytest.mark.parametrize(
    "question, url",
    [
        ("What were X Inc. (XX2)'s total net revenues for fiscal year 2023?", "k2023"),
        ("By what percentage did X Inc. (XX2)'s revenues change in fiscal 2024 compared with 2023?", "k2024"),
        ("What were X Inc. (XX2)'s total net revenues for the quarter ended 2025-03-31?", "q1"),
        # the annual results come out early the next year, before any other 8-K of that year
        ("What fourth-quarter 2023 revenues did X Inc. (XX2) announce in its 8-K results release?", "8k2023"),
        ("What fourth-quarter 2024 revenues did X Inc. (XX2) announce in its 8-K results release?", "8k2024"),
    ],
)
def test_the_filing_of_the_asked_period_is_chosen(question, url):
    assert choose_filing(read_question(question), FILINGS)["filing_url"] == url


def test_a_mirror_without_report_dates_still_finds_the_annual_report():
    rows = [{**row, "report_date": ""} for row in FILINGS]
    question = read_question("What were X Inc. (XX2)'s total net revenues for fiscal year 2023?")
    assert choose_filing(question, rows)["filing_url"] == "k2023"
    assert choose_filing(read_question("What were X Inc. (XX2)'s revenues for fiscal 2019?"), rows) is None


# ----- real filings' shapes (bench/scripted_real.py measures the policy on ../shared/data/edgar-real) -----

QUARTER_REPLY = (
    HEADER
    + """[filing characters 4063-4116]
(CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited) / Net sales: / In millions, except number of \
shares, which are reflected in thousands, / Three Months Ended | Nine Months Ended / June 28, 2025 | \
June 29, 2024 | June 28, 2025 | June 29, 2024)
Total net sales | 94,036 | 85,777 | 313,695 | 296,105

[filing characters 6304-7000]
(Earnings per share: / In millions, except per share data / Jun 28, 2025 | Jun 29, 2024 | Jun 28, 2025 | \
Jun 29, 2024)
Basic | $1.57 | $1.40 | $5.39 | $4.82
Diluted | $1.57 | $1.40 | $5.35 | $4.79
Shares used in computing earnings per share:
Diluted | 14,948,500 | 15,348,175 | 15,010,000 | 15,408,095

[filing characters 9000-9400]
Total net sales increased $8.3 billion during the third quarter of 2025 compared with 2024.
"""
)


def test_dated_column_headers_pick_the_quarter_and_not_the_year_to_date():
    question = read_question(
        "What was Apple Inc. (AAPL)'s total net sales for the quarter ended June 28, 2025, as reported in its 10-Q?"
    )
    assert question.date == "2025-06-28" and question.form == "10-Q"
    assert answer(question, QUARTER_REPLY) == "$94,036 million"  # the three months' column, in the table's unit


def test_a_per_share_figure_has_no_scale_and_is_not_a_share_count():
    question = read_question(
        "What was Apple Inc. (AAPL)'s diluted earnings per share for the quarter ended "
        "June 28, 2025, as reported in its 10-Q?"
    )
    assert answer(question, QUARTER_REPLY) == "$1.57"


def test_a_change_stated_in_prose_is_not_taken_for_the_amount():
    question = read_question("What was Apple Inc. (AAPL)'s total net sales for fiscal year 2025?")
    reply = HEADER + "[filing characters 9000-9400]\nTotal net sales increased $8.3 billion during 2025.\n"
    assert answer(question, reply) is None


def test_a_fiscal_year_that_ends_in_january_is_the_10k_filed_weeks_later():
    """NVIDIA's fiscal 2025 ended 2025-01-26; its 10-K was filed 2025-02-26 (a mirror gives no report date)."""
    question = read_question("What was NVIDIA CORP (NVDA)'s revenue for fiscal year 2025?")
    rows = [
        {"form": "10-K", "filing_date": "2025-02-26", "report_date": "", "filing_url": "fy2025"},
        {"form": "10-K", "filing_date": "2024-02-21", "report_date": "", "filing_url": "fy2024"},
    ]
    assert choose_filing(question, rows)["filing_url"] == "fy2025"
    calendar = read_question("What was AMAZON COM INC (AMZN)'s total net sales for fiscal year 2024?")
    rows = [
        {"form": "10-K", "filing_date": "2025-02-07", "report_date": "", "filing_url": "fy2024"},
        {"form": "10-K", "filing_date": "2024-02-02", "report_date": "", "filing_url": "fy2023"},
    ]
    assert choose_filing(calendar, rows)["filing_url"] == "fy2024"  # a calendar year: filed the year after


def test_a_quarter_row_without_its_header_takes_the_dates_another_passage_gives_twice():
    """NVIDIA's income-statement passage starts mid-table: its four values are the quarter's pair, then the year
    to date's, under the dates the cash-flow passage names once."""
    reply = (
        HEADER
        + """[filing characters 12380-13049]
(Condensed Consolidated Statements of Cash Flows / In millions / Jul 27, 2025 | Jul 28, 2024)
Net income | $45,197 | $31,480

[filing characters 6304-7000]
Income tax expense | 4,784 | 2,615 | 7,920 | 5,013
Net income | $26,422 | $16,599 | $45,197 | $31,480
"""
    )
    question = read_question(
        "What was NVIDIA CORP (NVDA)'s net income for the quarter ended July 27, 2025, as reported in its 10-Q?"
    )
    assert answer(question, reply) == "$26,422 million"


def test_a_group_label_inside_a_table_keeps_its_columns():
    reply = (
        HEADER
        + """[filing characters 12380-13049]
Condensed Consolidated Statements of Cash Flows
(In millions)
Six Months Ended
Jul 27, 2025 | Jul 28, 2024
Cash flows from operating activities:
Net cash provided by operating activities | $42,785 | $29,640
"""
    )
    question = read_question(
        "What was NVIDIA CORP (NVDA)'s net cash provided by operating activities for the six "
        "months ended July 28, 2024?"
    )
    assert answer(question, reply) == "$29,640 million"
