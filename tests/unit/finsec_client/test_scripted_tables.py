"""The scripted policy's table rules on small synthetic replies (the embedded backend's format): the column of
the asked span, a change between two periods, a ratio's parts, a segment's group label, the sign a question asks
for, the scale of share counts, and the period end a cover page states. One test plays real filings when
../shared/data/edgar-real is present, and skips cleanly when it is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from finsec_client.policies.extract import answer, figure
from finsec_client.policies.question import read_question

HEADER = "The 2 passages of filing that best match your prompt (BM25 search; ...):\n\n"

QUARTER = (
    HEADER
    + """[filing characters 100-900]
CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS
(In millions, except number of shares, which are reflected in thousands, and per-share amounts)
Three Months Ended | Nine Months Ended
June 28, 2025 | June 29, 2024 | June 28, 2025 | June 29, 2024
Total net sales | 94,036 | 85,777 | 313,695 | 296,105
Research and development | 8,866 | 8,006 | 26,062 | 23,605
Operating income | 28,202 | 25,352 | 100,623 | 93,625
Diluted | $ 1.57 | $ 1.40 | $ 5.64 | $ 5.13
Shares used in computing earnings per share:
Basic | 14,902,886 | 15,287,521 | 14,979,104 | 15,361,486
Europe:
Net sales | $ 24,014 | $ 21,884 | $ 84,502 | $ 79,391
Operating income | $ 10,501 | $ 8,894 | $ 35,121 | $ 32,367

[filing characters 901-1400]
CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS
(In millions)
Nine Months Ended
June 28, 2025 | June 29, 2024
Payments for acquisition of property, plant and equipment | (9,473) | (6,539)
Cash used in financing activities | (93,210) | (86,776)
Accumulated deficit | (17,607) | (19,154)
"""
)

COVER = (
    HEADER
    + """[filing characters 0-700]
FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) For the quarterly period ended June 28, 2025
15,115,823,000 shares of common stock were issued and outstanding as of July 18, 2025.
"""
)


def ask(question: str, reply: str = QUARTER) -> str | None:
    return answer(read_question(question, form_hint="10-Q"), reply)


def test_the_three_months_column_and_the_nine_months_column_are_told_apart():
    assert ask("What was Acme (ACME)'s total revenue for the three months ended June 28, 2025?") == "$94,036 million"
    assert ask("What was Acme (ACME)'s total revenue for the nine months ended June 28, 2025?") == "$313,695 million"


def test_a_segment_row_is_named_by_its_group_label():
    assert (
        ask("What was the operating income of Acme (ACME)'s Europe segment for the three months ended June 28, 2025?")
        == "$10,501 million"
    )


def test_a_change_is_the_later_period_less_the_earlier():
    assert (
        ask(
            "By how much did Acme (ACME)'s operating income change from the three months ended June 29, 2024 "
            "to the three months ended June 28, 2025?"
        )
        == "an increase of $2,850 million"
    )
    assert (
        ask(
            "By how much did Acme (ACME)'s diluted earnings per share change from the nine months ended "
            "June 29, 2024 to the nine months ended June 28, 2025?"
        )
        == "an increase of $0.51"
    )


def test_a_ratio_question_names_its_two_figures():
    q = read_question(
        "What was Acme (ACME)'s operating margin (operating income as a percentage of total "
        "revenue) for the three months ended June 28, 2025?"
    )
    assert q.kind == "ratio" and q.parts == ("operating income", "total revenue") and q.percent
    q = read_question(
        "What was Acme (ACME)'s current ratio (total current assets over total current "
        "liabilities) as of June 28, 2025?"
    )
    assert q.parts == ("total current assets", "total current liabilities") and not q.percent
    top = figure(read_question("What was (ACME)'s operating income for the three months ended June 28, 2025?"), QUARTER)
    assert top is not None and top.value == 28_202 and top.unit == "million"


def test_the_sign_is_the_one_the_question_asks_for():
    # an outflow asked as an amount spent is its size; a figure that may go either way keeps its sign
    assert (
        ask("How much did Acme (ACME) spend on capital expenditures for the nine months ended June 28, 2025?")
        == "$9,473 million"
    )
    assert (
        ask("What was Acme (ACME)'s retained earnings (accumulated deficit) as of June 28, 2025?") == "-$17,607 million"
    )


def test_share_counts_take_the_captions_scale_for_shares():
    assert (
        ask(
            "How many weighted-average basic shares did Acme (ACME) have outstanding for the three months "
            "ended June 28, 2025?"
        )
        == "14,902,886 thousand shares"
    )


def test_cover_facts_are_read_from_the_cover_page_sentences():
    assert (
        ask("On what date did the fiscal quarter covered by Acme (ACME)'s 10-Q for fiscal 2025 Q3 end?", COVER)
        == "June 28, 2025"
    )
    assert (
        ask("How many shares of common stock did Acme (ACME) report outstanding as of July 18, 2025?", COVER)
        == "15,115,823,000 shares"
    )


REAL = Path(__file__).resolve().parents[4] / "shared/data/edgar-real"


@pytest.mark.skipif(not (REAL / "MANIFEST.json").is_file(), reason="no real filings at ../shared/data/edgar-real")
def test_the_policy_answers_most_tasks_built_from_a_real_filing():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import scripted_real

    played = scripted_real.play(scripted_real.sample(scripted_real.build({"AAPL"}), 4, 0), 2)
    assert played and sum(row["reward"] or 0.0 for row in played) / len(played) >= 0.5
