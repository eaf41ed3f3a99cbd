"""The scripted policy's second-round rules on small synthetic replies (the embedded backend's format): the
primary statements read whole (found from the balance sheet's "Total assets", each with its title, caption and
columns), a note's table read whole around its row (the unit the sentence above it states, its group labels,
amounts beside percentages), the cover page's public float and shares outstanding as printed, "excluding the
current portion", and abbreviations a filing defines or a question spells out."""

from __future__ import annotations

import asyncio
import re

from finsec_client.policies.cover import cover_answer
from finsec_client.policies.extract import abbreviations, answer, printed_name, spelled_out
from finsec_client.policies.question import read_question
from finsec_client.policies.scripted import _reaches
from finsec_client.policies.statements import Statement, read_statements, read_table, statement_kind

# A filing's text; the fake retrieve_information below returns its lines as the embedded backend would.
FILING = """ACME CORP
CONSOLIDATED STATEMENTS OF OPERATIONS
(in millions, except per share data)
Year Ended December 31,
2023 | 2024
Total net sales | 500,000 | 600,000
Cost of sales | 300,000 | 320,000
Operating income | 40,000 | 70,000
Net income | 30,000 | 50,000
Weighted-average shares used in computation of earnings per share:
Basic | 10,000 | 10,400
See accompanying notes to consolidated financial statements.
CONSOLIDATED BALANCE SHEETS
(in millions)
December 31,
2023 | 2024
Current assets:
Cash and cash equivalents | $70,000 | $78,000
Inventories | 33,000 | 34,000
Total current assets | 170,000 | 190,000
Total assets | $520,000 | $620,000
Current liabilities:
Current portion of long-term debt | 5,000 | 6,000
Total current liabilities | 160,000 | 180,000
Long-term debt | 58,000 | 52,000
See accompanying notes to consolidated financial statements.
CONSOLIDATED STATEMENTS OF CASH FLOWS
(in millions)
Year Ended December 31,
2023 | 2024
Inventories | 1,400 | (1,800)
Purchases of property and equipment | (52,000) | (83,000)
Common stock repurchased | — | —
See accompanying notes to consolidated financial statements.
Note 10 — Segment Information
Information on reportable segments is as follows (in millions):
Year Ended December 31,
2023 | 2024
North America
Net sales | $350,000 | $387,000
Operating income | $14,000 | $24,000
International
Net sales | $150,000 | $213,000
The following table presents revenues by geography (in millions):
Year Ended December 31,
2023 | 2024
United States | $146,000 | 47% | $170,000 | 49%
EMEA | 91,000 | 30 | 102,000 | 29
Regions represent Europe and Asia-Pacific (APAC).
Property table (in thousands of square feet):
North America | 457,104 | 20,741"""


def _backend(text: str):
    """retrieve_information over `text` as `[filing characters a-b]` blocks (no context lines): without a range,
    each line that has a word of the prompt; within a range, the range's text in passages of three lines (the
    window prompt's words are in every passage of a real statement)."""
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1

    async def retrieve(prompt: str, characters):
        if characters is None:
            words = set(re.findall(r"[a-z]+", prompt.lower())) - {"filing"}
            hits = [(a, ln) for a, ln in lines if words & set(re.findall(r"[a-z]+", ln.lower()))]
            return "The passages:\n\n" + "\n\n".join(f"[filing characters {a}-{a + len(ln)}]\n{ln}" for a, ln in hits)
        inside = [(a, ln) for a, ln in lines if characters[0] <= a and a + len(ln) <= characters[1]]
        blocks = []
        for i in range(0, len(inside), 3):
            group = inside[i : i + 3]
            body = "\n".join(ln for _, ln in group)
            blocks.append(f"[filing characters {group[0][0]}-{group[0][0] + len(body)}]\n{body}")
        return "The passages:\n\n" + "\n\n".join(reversed(blocks))  # best first, not in document order

    return retrieve


def _statements() -> list[Statement]:
    return asyncio.run(read_statements(_backend(FILING), "filing"))


def test_statement_titles_are_told_apart():
    assert statement_kind("CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)") == "balance"
    assert statement_kind("CONSOLIDATED STATEMENTS OF INCOME") == "income"
    assert statement_kind("CONSOLIDATED STATEMENTS OF OPERATIONS AND COMPREHENSIVE INCOME (LOSS)") == "income"
    assert statement_kind("CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME") == "other"
    assert statement_kind("CONSOLIDATED STATEMENTS OF STOCKHOLDERS' EQUITY") == "other"
    assert statement_kind("CONSOLIDATED STATEMENTS OF CASH FLOWS") == "cash_flow"


def test_the_statements_are_read_whole_from_the_balance_sheet_anchor():
    found = {s.kind: s for s in _statements()}
    assert set(found) == {"income", "balance", "cash_flow"}
    inventories = next(r for r in found["balance"].rows if r.label == "Inventories")
    assert (inventories.unit, inventories.periods, inventories.values) == (
        "million",
        ("2023", "2024"),
        ("33,000", "34,000"),
    )
    # "Total current liabilities" closes its group: long-term debt is not a current liability
    debt = next(r for r in found["balance"].rows if r.label == "Long-term debt")
    assert debt.group == ""
    # a dash is a zero
    repurchased = next(r for r in found["cash_flow"].rows if r.label == "Common stock repurchased")
    assert repurchased.values == ("0", "0")


def ask(question: str, reply: str = "", statements=None) -> str | None:
    return answer(read_question(question, form_hint="10-K"), reply, _statements() if statements is None else statements)


def test_a_balance_is_read_from_the_balance_sheet_and_a_flow_from_the_flows():
    assert ask("What was Acme (ACME)'s inventories as of December 31, 2024?") == "$34,000 million"
    assert (
        ask("How much did Acme (ACME) spend on capital expenditures for the fiscal year ended December 31, 2024?")
        == "$83,000 million"
    )
    assert (
        ask(
            "How much cash did Acme (ACME) spend repurchasing its common stock for the fiscal year ended "
            "December 31, 2024?"
        )
        == "$0 million"
    )


def test_the_statement_row_is_preferred_to_a_sentence_that_mentions_the_figure():
    reply = (
        "[filing characters 9000-9100]\nTotal net sales include $7.7 billion of revenue recognized in 2024 "
        "that was included in deferred revenue."
    )
    assert (
        ask("How much total revenue did Acme (ACME) report for the fiscal year ended December 31, 2024?", reply)
        == "$600,000 million"
    )


def test_excluding_the_current_portion_leaves_out_a_current_row():
    question = read_question(
        "What was Acme (ACME)'s long-term debt, excluding the current portion as of December 31, 2024?"
    )
    assert "current" in question.excluded and "current" not in question.keywords
    assert answer(question, "", _statements()) == "$52,000 million"


def test_a_notes_table_is_read_whole_with_the_unit_its_sentence_states():
    at = FILING.index("Net sales | $350,000")
    table = asyncio.run(read_table(_backend(FILING), "filing", at, "north america revenu"))
    assert table is not None
    row = next(r for r in table.rows if r.values[0] == "$350,000")
    assert (row.unit, row.group, row.periods) == ("million", "North America", ("2023", "2024"))
    question = (
        "How much revenue did Acme (ACME) generate from its North America segment for the fiscal year "
        "ended December 31, 2024?"
    )
    # the property table's "in thousands" row, cut from its table, does not lend its scale
    reply = "[filing characters 5-40]\n(Table of Contents / in thousands)\nNorth America | 457,104 | 20,741"
    assert ask(question, reply, [table]) == "$387,000 million"


def test_amounts_beside_percentages_and_a_defined_abbreviation():
    at = FILING.index("EMEA | 91,000")
    table = asyncio.run(read_table(_backend(FILING), "filing", at, "emea revenu"))
    emea = next(r for r in table.rows if r.label == "EMEA")
    assert emea.values == ("91,000", "102,000")
    names = abbreviations("Regions represent Europe and Asia-Pacific (APAC).\nAmazon Web Services")
    assert spelled_out("APAC", names) == "APAC Asia-Pacific"
    assert spelled_out("AWS", names) == "AWS Amazon Web Services"
    assert spelled_out("U.S.", abbreviations("United States (by geography)")) == "U.S. United States"


def test_a_segment_question_is_asked_again_in_the_filings_words():
    question = read_question(
        "How much revenue did Acme (ACME) generate from its International segment for the "
        "fiscal year ended December 31, 2024?"
    )
    assert printed_name(question, _statements()) == "net sales"
    company_wide = read_question(
        "How much total revenue did Acme (ACME) report for the fiscal year ended December 31, 2024?"
    )
    assert printed_name(company_wide, _statements()) is None


def test_the_public_float_is_read_as_the_cover_prints_it():
    float_q = read_question(
        "What was Acme (ACME)'s public float (the market value of its equity held by "
        "non-affiliates) as of June 30, 2024?"
    )
    full = (
        "[filing characters 0-200]\nThe aggregate market value of the voting stock held by non-affiliates of "
        "the Registrant, as of June 30, 2024, was approximately $2,628,553,000,000. Solely for purposes ..."
    )
    assert cover_answer(float_q, full) == "$2,628,553,000,000"
    row = (
        "[filing characters 0-120]\nAggregate market value of voting stock held by non-affiliates of the "
        "registrant as of June 30, 2024 | $1,815,014,489,485"
    )
    assert cover_answer(float_q, row) == "$1,815,014,489,485"
    worded = (
        "[filing characters 0-150]\nthe aggregate market value of shares held by non-affiliates ... was "
        "approximately $2.0 trillion."
    )
    assert cover_answer(float_q, worded) == "$2.0 trillion"


def test_the_shares_outstanding_on_the_asked_date():
    question = read_question(
        "How many shares of common stock did Acme (ACME) report outstanding as of January 29, 2025?"
    )
    reply = (
        "[filing characters 0-100]\nOn November 7, 2024, an officer adopted a plan to sell up to 158,970 "
        "shares of common stock.\n[filing characters 200-300]\nNumber of shares of common stock outstanding "
        "as of January 29, 2025 | 10,597,729,352"
    )
    assert cover_answer(question, reply) == "10,597,729,352 shares"
    class_b = read_question(
        "How many shares of Class B common stock did Acme (ACME) report outstanding as of January 28, 2025?"
    )
    sentence = (
        "[filing characters 0-300]\nAs of January 28, 2025, there were 5,833 million shares of Acme's "
        "Class A stock outstanding, 860 million shares of Acme's Class B stock outstanding, and 5,497 "
        "million shares of Acme's Class C stock outstanding."
    )
    assert cover_answer(class_b, sentence) == "860 million shares"


def test_a_short_filing_is_answered_from_the_questions_reply_alone():
    # the embedded corpus's filings fit one reply: their episodes keep one retrieve_information call
    assert not _reaches("[filing characters 0-700]\nRevenue | 1\n[filing characters 700-1456]\nx", 20_000)
    assert _reaches("[filing characters 152175-152204]\nInventories | 33,318 | 34,214", 20_000)
