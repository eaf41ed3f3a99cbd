"""The scripted policy: what a careful analyst does with the tools (contract §A.6-A.10).

sec_filing_search for the company's filings of the form the question needs, the filing of the asked period,
parse_html_page into the session, retrieve_information with the question, and submit_final_result with the
figure it reads in the reply (extract.py). A long filing is read further, as an analyst reads one: the primary
statements whole (statements.py), the tables of the reply's best rows whole, a segment's figure asked again in
the filing's own words, the cover page for its cover facts (cover.py). It never sees the expected answer."""

from __future__ import annotations

import json
import re
from typing import Any

from finsec_client.policies.cover import cover_answer, is_public_float, is_shares_outstanding
from finsec_client.policies.extract import answer, figure, printed_name, tables_to_read
from finsec_client.policies.question import Question, read_question
from finsec_client.policies.statements import Statement, read_statements, read_table
from finsec_client.tasks import Task
from finsec_client.toolbox import Toolbox

__all__ = ["choose_filing", "COVER_PAGE", "DOCUMENT_KEY", "LONG_DOCUMENT", "NO_ANSWER", "ScriptedPolicy"]

DOCUMENT_KEY = "filing"
COVER_PAGE = (0, 12_000)  # the characters of a filing's text its cover page takes
LONG_DOCUMENT = 20_000  # a filing this long shows a small part of itself in one reply: read more of it
_PERIOD_PHRASE = re.compile(r"\b(?:for the|as of|during the)\b[^?]*")
NO_ANSWER = "I could not find the answer in the filing."


class ScriptedPolicy:
    name = "scripted"

    async def play(self, task: Task, tools: Toolbox) -> None:
        question = read_question(task.question, task.hint("ticker"), task.hint("form"))
        if not question.ticker:
            await tools.call("submit_final_result", {"final_result": NO_ANSWER})
            return
        found = await tools.call("sec_filing_search", {"ticker": question.ticker, "form_types": [question.form]})
        filing = choose_filing(question, _filings(found.text))
        if filing is None:  # the form guessed wrong, or the search failed: look at every filing once
            found = await tools.call("sec_filing_search", {"ticker": question.ticker})
            filing = choose_filing(question, _filings(found.text))
        if filing is None:
            await tools.call("submit_final_result", {"final_result": NO_ANSWER})
            return
        parsed = await tools.call("parse_html_page", {"url": filing["filing_url"], "key": DOCUMENT_KEY})
        reader = _Reader(tools, long=parsed.ok and "NOTE:" in parsed.text)
        if question.kind == "ratio":
            final = await _ratio(question, reader)
        elif is_public_float(question) or is_shares_outstanding(question):
            final = await _cover(question, task.question, reader)
        else:
            final = await reader.ask(question, task.question)
            if final is None and _is_cover_fact(question):
                # a cover-page fact (the period's end, shares outstanding, the public float): read the cover
                final = await reader.ask(question, task.question, COVER_PAGE)
        await tools.call("submit_final_result", {"final_result": final or NO_ANSWER})


class _Reader:
    """One episode's reading of the stored filing. A long filing (one reply shows a small part of it) is read as
    an analyst reads it: the primary statements first (once), the notes' tables whole, a segment's figure in the
    filing's own words. A short one is answered from the question's reply alone."""

    def __init__(self, tools: Toolbox, long: bool):
        self.tools = tools
        self.long = long  # the parse reply's NOTE: longer than large_doc_threshold_chars
        self.statements: list[Statement] | None = None

    async def retrieve(self, prompt: str, characters: tuple[int, int] | None = None) -> str | None:
        """retrieve_information on the stored filing (prompt holds its {{key}}), within `characters` if given."""
        arguments: dict[str, Any] = {"prompt": prompt}
        if characters:
            arguments["input_character_ranges"] = [{"key": DOCUMENT_KEY, "start": characters[0], "end": characters[1]}]
        reply = await self.tools.call("retrieve_information", arguments)
        return reply.text if reply.ok else None

    async def ask(self, question: Question, prompt: str, characters: tuple[int, int] | None = None) -> str | None:
        reply = await self.retrieve(f"{prompt} {{{{{DOCUMENT_KEY}}}}}", characters)
        if reply is None:
            return None
        reply, statements = await self.read_more(question, prompt, reply)
        return answer(question, reply, statements)

    async def read_more(self, question: Question, prompt: str, reply: str) -> tuple[str, list[Statement]]:
        """The reply with what a long filing needs read besides: its statements, the segment's figure asked in
        the filing's words, and the tables of the reply's best rows."""
        if _is_cover_fact(question) or not (self.long or _reaches(reply, LONG_DOCUMENT)):
            return reply, []
        if self.statements is None:
            self.statements = await read_statements(self.retrieve, DOCUMENT_KEY)
        statements = list(self.statements)
        if name := printed_name(question, statements):
            # a segment's figure, asked again in the filing's words: "revenue" is printed "net sales" in some
            again = await self.retrieve(f"{prompt} {name} {{{{{DOCUMENT_KEY}}}}}")
            reply += "\n" + (again or "")
        # the tables of the notes' best rows, read whole: a row cut from its table has lost its unit or columns
        for at in tables_to_read(question, reply, statements):
            if any(s.holds(at) for s in statements):
                continue  # in a table read already
            if table := await read_table(self.retrieve, DOCUMENT_KEY, at, " ".join(sorted(question.keywords))):
                statements.append(table)
        return reply, statements


def _reaches(reply: str, position: int) -> bool:
    """Whether a passage of the reply ends beyond `position`: the document is at least that long."""
    return any(int(end) > position for end in re.findall(r" characters \d+-(\d+)\]", reply))


async def _cover(question: Question, prompt: str, reader: _Reader) -> str | None:
    """The public float or the shares outstanding: the cover page's sentence or row first, then the filing's."""
    for characters in (COVER_PAGE, None):
        reply = await reader.retrieve(f"{prompt} {{{{{DOCUMENT_KEY}}}}}", characters)
        if reply is not None and (found := cover_answer(question, reply)):
            return found
    return await reader.ask(question, prompt)


async def _ratio(question: Question, reader: _Reader) -> str | None:
    """A ratio an analyst computes: each figure asked on its own (same company, same period), then divided."""
    period = _PERIOD_PHRASE.search(question.text)
    values = []
    for part in question.parts:
        text = f"What was ({question.ticker})'s {part} {period.group(0) if period else ''}".strip()
        asked = read_question(text, question.ticker, question.form)
        reply = await reader.retrieve(f"{text} {{{{{DOCUMENT_KEY}}}}}")
        if reply is None:
            return None
        reply, statements = await reader.read_more(asked, text, reply)
        found = figure(asked, reply, statements)
        if found is None or found.value is None:
            return None
        values.append(found)
    top, bottom = values
    if top.value is None or not bottom.value or top.unit != bottom.unit:  # top.value: checked above, for the types
        return None  # one figure in millions and the other in thousands: not the same table's figures
    ratio = top.value / bottom.value
    return f"{ratio * 100:.1f}%" if question.percent else f"{ratio:.2f}"


def _is_cover_fact(question: Question) -> bool:
    """The period's end, the shares outstanding on a date, the public float: the cover page states them."""
    return question.kind == "date" or is_shares_outstanding(question) or is_public_float(question)


def _filings(text: str) -> list[dict[str, Any]]:
    try:
        rows = json.loads(text)
    except ValueError:
        return []
    return (
        [r for r in rows if isinstance(r, dict) and isinstance(r.get("filing_url"), str)]
        if isinstance(rows, list)
        else []
    )


def choose_filing(question: Question, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The filing that reports the asked period. A 10-K or 10-Q covers the period it reports on (report_date); a
    results 8-K for fiscal year Y is filed early in Y+1. Without a period, the newest filing of the form."""
    rows = [r for r in rows if r.get("form") == question.form] or rows
    rows = sorted(rows, key=lambda r: str(r.get("filing_date", "")), reverse=True)
    if not rows:
        return None
    if question.date:
        exact = [r for r in rows if r.get("report_date") == question.date]
        if exact:
            return exact[0]
    year = question.year
    if year is None:
        return rows[0]
    if question.form == "8-K":
        following = [r for r in rows if str(r.get("filing_date", "")).startswith(str(year + 1))]
        return following[-1] if following else None  # the earliest of the next year: the annual results
    same = [r for r in rows if _period_year(r) == year]
    if not same and question.form == "10-K":
        # A fiscal year that ends early in the calendar year (NVIDIA's ends in January) is named by the year it
        # ends, and its 10-K is filed weeks later in that same year.
        same = [
            r
            for r in rows
            if str(r.get("filing_date", "")).startswith(str(year)) and str(r.get("filing_date", ""))[5:7] <= "06"
        ]
    return same[0] if same else None


def _period_year(row: dict[str, Any]) -> int | None:
    """The year a periodic report covers: its report date, or (mirrors that leave it empty) the filing date,
    less a year for a report filed in the first half, when annual reports for the year before are filed."""
    for key in ("report_date", "filing_date"):
        value = str(row.get(key) or "")
        if len(value) >= 7 and value[:4].isdigit() and value[5:7].isdigit():
            year, month = int(value[:4]), int(value[5:7])
            return year - 1 if key == "filing_date" and row.get("form") == "10-K" and month <= 6 else year
    return None
