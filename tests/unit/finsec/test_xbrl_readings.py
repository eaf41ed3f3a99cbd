"""The two readings of an inline XBRL fact (finsec/xbrl): the tagged one (scale, sign, format) and the printed one
(the table's caption, parentheses, a scale word in a sentence), over small filings written here, and the task
builder dropping every task whose readings disagree."""

from __future__ import annotations

import pytest

from finsec.taskgen.build import Source, build_tasks
from finsec.xbrl.facts import read_filing
from finsec.xbrl.printed import agrees, printed

HEADER = """<html><body><ix:header><ix:hidden>
<ix:nonNumeric name="dei:DocumentType" contextRef="FY">10-K</ix:nonNumeric>
<ix:nonNumeric name="dei:EntityRegistrantName" contextRef="FY">Example Corp</ix:nonNumeric>
</ix:hidden><ix:resources>
<xbrli:context id="FY"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1</xbrli:identifier>
</xbrli:entity><xbrli:period><xbrli:startDate>2024-01-01</xbrli:startDate><xbrli:endDate>2024-12-31</xbrli:endDate>
</xbrli:period></xbrli:context>
<xbrli:context id="PY"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1</xbrli:identifier>
</xbrli:entity><xbrli:period><xbrli:startDate>2023-01-01</xbrli:startDate><xbrli:endDate>2023-12-31</xbrli:endDate>
</xbrli:period></xbrli:context>
<xbrli:context id="END"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1</xbrli:identifier>
</xbrli:entity><xbrli:period><xbrli:instant>2024-12-31</xbrli:instant></xbrli:period></xbrli:context>
<xbrli:context id="EU"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">1</xbrli:identifier>
<xbrli:segment><xbrldi:explicitMember dimension="us-gaap:StatementBusinessSegmentsAxis">ex:EuropeSegmentMember
</xbrldi:explicitMember></xbrli:segment></xbrli:entity><xbrli:period><xbrli:startDate>2024-01-01</xbrli:startDate>
<xbrli:endDate>2024-12-31</xbrli:endDate></xbrli:period></xbrli:context>
<xbrli:unit id="usd"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>
<xbrli:unit id="eps"><xbrli:divide><xbrli:unitNumerator><xbrli:measure>iso4217:USD</xbrli:measure>
</xbrli:unitNumerator><xbrli:unitDenominator><xbrli:measure>xbrli:shares</xbrli:measure></xbrli:unitDenominator>
</xbrli:divide></xbrli:unit>
</ix:resources></ix:header>
<p>Annual report for the fiscal year ended <ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="END">December
31, 2024</ix:nonNumeric>.</p>
"""


def fact(name: str, context: str, shown: str, *, scale: int = 6, sign: str = "", unit: str = "usd") -> str:
    signed = ' sign="-"' if sign else ""
    return (
        f'<ix:nonFraction name="us-gaap:{name}" contextRef="{context}" unitRef="{unit}" decimals="-6" '
        f'scale="{scale}"{signed} format="ixt:num-dot-decimal">{shown}</ix:nonFraction>'
    )


def table(caption: str, *rows: tuple[str, str]) -> str:
    cells = "".join(f"<tr><td>{label}</td><td>$ {value}</td></tr>" for label, value in rows)
    return f"<p>CONSOLIDATED STATEMENTS OF OPERATIONS</p><p>{caption}</p><table>{cells}</table>"


def filing(*parts: str) -> str:
    return HEADER + "".join(parts) + "</body></html>"


def only(document: str, concept: str):
    parsed = read_filing(document)
    found = [f for f in parsed.facts if f.concept == f"us-gaap:{concept}"]
    return parsed, found


def test_the_tagged_reading_applies_scale_sign_and_format():
    document = filing(
        table(
            "(In millions)",
            ("Net loss", fact("NetIncomeLoss", "FY", "1,234", sign="-")),
            ("Revenue", fact("Revenues", "FY", "—")),
        )
    )
    parsed, (loss,) = only(document, "NetIncomeLoss")
    assert loss.value == -1_234_000_000 and loss.context.days == 365 and loss.unit == "iso4217:USD"
    assert only(document, "Revenues")[1][0].value == 0.0
    assert parsed.period_end.isoformat() == "2024-12-31" and parsed.cover["EntityRegistrantName"] == "Example Corp"


def test_a_caption_in_millions_agrees_with_a_tag_in_millions():
    document = filing(
        table(
            "(In millions, except per-share amounts)",
            ("Revenue", fact("Revenues", "FY", "9,876")),
            ("Diluted", fact("EarningsPerShareDiluted", "FY", "6.08", scale=0, unit="eps")),
        )
    )
    for concept in ("Revenues", "EarningsPerShareDiluted"):
        (one,) = only(document, concept)[1]
        reading = printed(read_filing(document), one)
        assert reading.stated and agrees(one, reading), concept


def test_a_caption_in_thousands_over_a_tag_in_millions_disagrees():
    document = filing(table("(In thousands)", ("Revenue", fact("Revenues", "FY", "9,876"))))
    (revenue,) = only(document, "Revenues")[1]
    reading = printed(read_filing(document), revenue)
    assert reading.scale == 3 and not agrees(revenue, reading)


def test_shares_in_thousands_are_the_captions_exception():
    caption = "(In millions, except number of shares, which are reflected in thousands)"
    document = filing(
        table(
            caption,
            ("Revenue", fact("Revenues", "FY", "9,876")),
            ("Shares", fact("WeightedAverageNumberOfDilutedSharesOutstanding", "FY", "15,408", scale=3, unit="shares")),
        )
    )
    document = document.replace(
        '<xbrli:unit id="usd">',
        '<xbrli:unit id="shares"><xbrli:measure>xbrli:shares</xbrli:measure></xbrli:unit><xbrli:unit id="usd">',
    )
    shares = only(document, "WeightedAverageNumberOfDilutedSharesOutstanding")[1][0]
    revenue = only(document, "Revenues")[1][0]
    for one, scale in ((shares, 3), (revenue, 6)):
        reading = printed(read_filing(document), one)
        assert reading.scale == scale and agrees(one, reading)


@pytest.mark.parametrize(
    "shown, sign, signed, agree",
    [
        ("(1,234)", "-", True, True),  # a loss, printed in parentheses
        ("(1,234)", "", True, False),  # parentheses over a positive tag: the readings differ in sign
        ("(1,234)", "", False, True),  # ... unless the question asks a magnitude (a payment)
        ("1,234", "-", True, False),  # a negative tag printed as a positive figure
    ],
)
def test_parentheses_are_the_printed_sign(shown, sign, signed, agree):
    number = shown.strip("()")
    cell = shown.replace(number, fact("NetIncomeLoss", "FY", number, sign=sign))
    document = filing(table("(In millions)", ("Net income (loss)", cell)))
    (one,) = only(document, "NetIncomeLoss")[1]
    assert agrees(one, printed(read_filing(document), one), signed=signed) is agree


def test_a_sentence_gives_its_scale_in_words():
    document = filing(f"<p>Revenue grew to ${fact('Revenues', 'FY', '9.9', scale=9)} billion this year.</p>")
    (revenue,) = only(document, "Revenues")[1]
    reading = printed(read_filing(document), revenue)
    assert (reading.scale, reading.in_table) == (9, False) and agrees(revenue, reading)
    document = filing(f"<p>Revenue grew to ${fact('Revenues', 'FY', '9.9', scale=9)} million this year.</p>")
    (revenue,) = only(document, "Revenues")[1]
    assert not agrees(revenue, printed(read_filing(document), revenue))


def test_a_hidden_fact_is_not_printed_and_a_table_without_caption_states_no_scale():
    document = filing("<table><tr><td>Revenue</td><td>" + fact("Revenues", "FY", "9,876") + "</td></tr></table>")
    (revenue,) = only(document, "Revenues")[1]
    assert printed(read_filing(document), revenue).stated is False
    hidden = HEADER.replace("</ix:hidden>", fact("Revenues", "FY", "9,876") + "</ix:hidden>") + "</body></html>"
    (revenue,) = only(hidden, "Revenues")[1]
    assert printed(read_filing(hidden), revenue) is None


def _built(document: str):
    return build_tasks(
        Source(
            "0000000001",
            "EXM",
            "10-K",
            "0000000001-25-000001",
            "https://www.sec.gov/Archives/edgar/data/1/000000000125000001/ex.htm",
        ),
        document,
    )


def test_a_task_is_kept_only_when_both_readings_agree():
    good = table(
        "(In millions)",
        ("Total revenue", fact("Revenues", "FY", "9,876")),
        ("Net income", fact("NetIncomeLoss", "FY", "1,000")),
    )
    built = _built(filing(good))
    asked = {task["figure"]: task for task in built.tasks}
    assert asked["revenue"]["expected_answer"] == "$9,876 million"
    assert asked["net_margin"]["expected_answer"] == "10.1%"
    # the same revenue printed again under a caption in thousands: its tasks (and the ratio built on it) go
    wrong = table("(In thousands)", ("Total revenue", fact("Revenues", "FY", "9,876")))
    built = _built(filing(good, wrong))
    assert {task["figure"] for task in built.tasks} == {"period_end", "net_income"}
    assert built.dropped[("line_item", "printed value differs from the tag")] == 1
    assert built.dropped[("ratio", "printed value differs from the tag")] == 1


def test_change_segment_and_cover_tasks_from_a_small_filing():
    document = filing(
        table(
            "(In millions)",
            ("Total revenue", fact("Revenues", "FY", "9,876") + "</td><td>$ " + fact("Revenues", "PY", "8,000")),
        ),
        table("(In millions)", ("Europe", fact("Revenues", "EU", "3,000"))),
    )
    tasks = {task["kind"]: task for task in _built(document).tasks}
    change = tasks["change"]
    assert change["expected_answer"] == "an increase of $1,876 million"
    assert change["canonical_answer"]["value"] == 1_876_000_000
    assert [f["period"]["end"] for f in change["facts"]] == ["2023-12-31", "2024-12-31"]
    segment = tasks["segment"]
    assert "Europe segment" in segment["question"] and segment["expected_answer"] == "$3,000 million"
    assert segment["facts"][0]["dimensions"] == {"us-gaap:StatementBusinessSegmentsAxis": "ex:EuropeSegmentMember"}
    assert tasks["cover"]["expected_answer"] == "December 31, 2024"
    assert all(task["tier"] >= 1 and task["question"].count("Example Corp (EXM)") == 1 for task in tasks.values())
