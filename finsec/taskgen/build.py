"""Tasks from one filing's inline XBRL: each asks a figure the filing tags, and is kept only when every fact
it rests on reads the same tagged and printed (finsec/xbrl). Kinds, easiest first:

- `cover`: the cover page's facts: shares outstanding on a date, the period's end, the public float;
- `line_item`: a statement figure for the filing's period (income, balance sheet, cash flow), company-wide;
- `segment`: revenue or operating income of one segment, product line or region (a fact with one dimension);
- `change`: a figure's change from the same period a year before;
- `ratio`: one stated figure over another (a margin, the effective tax rate, the current ratio);
- `mix`: a segment's, product's or region's share of total revenue, and how that share moved from a year before;
- `formula`: a figure computed across statements (free cash flow, net debt, interest coverage, return on average
  equity, days sales outstanding), its formula recorded in the task.

Every task records its difficulty: the documents it needs, the facts it rests on and the arithmetic operations
between them.

The answer is the tagged value, written as the filing prints it (in its table's scale). A question names the
company and the period in an analyst's words, never a sentence of the filing."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from finsec.taskgen.figures import CHANGES, FIGURES, FORMULAS, RATIOS, SEGMENT_AXES, Figure, Formula
from finsec.xbrl.facts import Context, Fact, Filing, read_filing, text_of
from finsec.xbrl.printed import agrees, printed

__all__ = ["ACROSS_FILINGS", "Built", "Comparable", "Source", "TIERS", "build_tasks", "long_date"]

TIERS = {
    "cover": 1,
    "line_item": 1,
    "segment": 2,
    "change": 2,
    "ratio": 3,
    "mix": 3,
    "formula": 3,
    "comparison": 4,
    "growth": 4,
    "quarter_change": 3,
}
ACROSS_FILINGS = frozenset({"comparison", "growth", "quarter_change"})  # built from two filings, not one
_OPERATIONS = {"cover": 0, "line_item": 0, "segment": 0, "change": 1, "ratio": 1}  # a formula and a mix count theirs
_CLOSE_DAYS = 7  # a context ending this near the period's end is the period's
_SPANS = {"year": (350, 380), "quarter": (80, 100), "half": (170, 190), "nine_months": (260, 285)}
_MAX_SEGMENT_MEMBERS = 12  # per axis and figure: the largest, so a long tail of products does not swamp a filing


@dataclass(frozen=True)
class Source:
    """Where a filing came from, as a task records it."""

    cik: str  # ten digits
    ticker: str
    form: str  # "10-K" or "10-Q"
    accession: str
    url: str  # the canonical www.sec.gov URL of the primary document
    filing_date: str = ""


@dataclass(frozen=True)
class Comparable:
    """A kept task's percentage another company's can be set against (finsec/taskgen/compare.py)."""

    company: str  # "Apple Inc. (AAPL)"
    period_end: date
    value: float  # percent, to one place
    answer: str  # "31.5%"
    facts: list[dict[str, Any]]
    operations: int


@dataclass
class Built:
    tasks: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)  # (kind, reason) -> tasks not kept
    facts_checked: int = 0
    facts_agreeing: int = 0
    comparables: dict[str, Comparable] = field(default_factory=dict)  # a 10-K's margins and growth, by key


def build_tasks(source: Source, document: str) -> Built:
    built = Built()
    filing = read_filing(document)
    if filing is None or filing.period_end is None:
        built.dropped[("filing", "no inline XBRL with a period end")] += 1
        return built
    _Builder(source, filing, filing.period_end, built).run()
    return built


class _Builder:
    def __init__(self, source: Source, filing: Filing, end: date, built: Built):
        """`end`: the filing's period end (build_tasks checked it has one)."""
        self.source, self.filing, self.built = source, filing, built
        self.end = end
        self.company = f"{filing.cover.get('EntityRegistrantName') or source.ticker} ({source.ticker})"
        self.annual = source.form.startswith("10-K")
        self.occurrences = _occurrences(filing)
        self.figures: dict[str, tuple[Fact, str]] = {}  # key -> (fact of the current period, the span)
        self.asked: set[str] = set()

    def run(self) -> None:
        self._cover()
        for figure in FIGURES:
            self._line_item(figure)
        self._segments()
        for key in CHANGES:
            self._change(key)
        for ratio in RATIOS:
            self._ratio(ratio)
        for formula in FORMULAS:
            self._formula(formula)

    # -- kinds

    def _cover(self) -> None:
        end_context = self.filing.contexts.get(self.filing.cover_contexts.get("DocumentPeriodEndDate", ""))
        shown = _date_in(self._printed_cover("DocumentPeriodEndDate"))
        what = "fiscal year" if self.annual else "fiscal quarter"
        if end_context is not None:
            agreed = shown == end_context.end
            self.built.facts_checked += 1
            self.built.facts_agreeing += agreed
            self._keep(
                "cover",
                "period_end",
                f"On what date did the {what} covered by {self.company}'s "
                f"{self.source.form} for {self._fiscal_label()} end?",
                long_date(self.end),
                {"value": self.end.isoformat(), "unit": "date"},
                [],
                checked=agreed or "printed date differs",
                operations=0,
            )
        for fact in self.filing.by_concept.get("dei:EntityCommonStockSharesOutstanding", []):
            cls = _class_name(fact.context)
            stock = f"{cls} common stock" if cls else "common stock"
            self._keep_fact(
                "cover",
                f"shares_outstanding:{cls}",
                f"How many shares of {stock} did {self.company} "
                f"report outstanding as of {long_date(fact.context.end)}?",
                [fact],
                signed=False,
                answer=f"{fact.value:,.0f} shares",
            )
        for fact in self.filing.by_concept.get("dei:EntityPublicFloat", [])[:1]:
            self._keep_fact(
                "cover",
                "public_float",
                f"What was {self.company}'s public float (the market value "
                f"of its equity held by non-affiliates) as of {long_date(fact.context.end)}?",
                [fact],
                signed=False,
            )

    def _printed_cover(self, name: str) -> str:
        """The text where a cover fact is printed, with what follows it: a 10-K often tags "December 31" and
        prints the year after it, as another fact."""
        document = self.filing.document
        at = document.find(f'name="dei:{name}"')
        start = document.rfind("<", 0, at)
        return text_of(document[start : start + 600]) if at >= 0 else ""

    def _line_item(self, figure: Figure) -> None:
        span, fact = self._current(figure)
        if fact is None:
            return
        self.figures[figure.key] = (fact, span)
        question = (figure.ask or "What was {company}'s {name} {period}?").format(
            company=self.company, name=figure.name, period=self._period(fact.context, span)
        )
        self._keep_fact("line_item", figure.key, question, [fact], signed=figure.signed)

    def _segments(self) -> None:
        for figure in (f for f in FIGURES if f.key in ("revenue", "operating_income")):
            for axis, role in SEGMENT_AXES.items():
                found: dict[str, Fact] = {}
                for concept in figure.concepts:
                    for fact in self.filing.by_concept.get(f"us-gaap:{concept}", []):
                        dims = fact.context.dimensions
                        if (
                            len(dims) == 1
                            and dims[0][0] == axis
                            and self._span(fact.context)
                            and dims[0][1] not in found
                        ):
                            found[dims[0][1]] = fact
                largest = sorted(found.items(), key=lambda item: -abs(item[1].value))[:_MAX_SEGMENT_MEMBERS]
                for member, fact in largest:
                    if not (name := self._member_name(member, fact)):
                        continue
                    fact = self._precise(fact)
                    period = self._period(fact.context, self._span(fact.context))
                    if figure.key == "revenue":
                        whence = {
                            "segment": f"its {name} segment",
                            "product": name,
                            "region": f"{name} (by geography)",
                        }[role]
                        question = f"How much revenue did {self.company} generate from {whence} {period}?"
                    else:
                        question = f"What was the operating income of {self.company}'s {name} segment {period}?"
                    kept = self._keep_fact(
                        "segment",
                        f"{figure.key}:{role}:{member.split(':')[-1]}",
                        question,
                        [fact],
                        signed=figure.signed,
                    )
                    if kept and figure.key == "revenue":
                        self._mix(fact, whence, f"{role}:{member.split(':')[-1]}")

    def _mix(self, part: Fact, whence: str, key: str) -> None:
        """The part's share of total revenue over the same period, and its move in percentage points from the same
        period a year before (both parts and both totals tagged in the filing)."""
        total = self.figures.get("revenue")
        if total is None or total[0].context.end != part.context.end or total[0].value <= 0:
            return
        whole, span = total
        if self._span(part.context) != span:
            return
        share = part.value / whole.value * 100
        period = self._period(part.context, span)
        question = f"What share of {self.company}'s total revenue {period} came from {whence}?"
        if not self._keep_fact(
            "mix",
            f"share:{key}",
            question,
            [part, whole],
            signed=True,
            answer=f"{share:.1f}%",
            value=round(share, 1),
            unit="percent",
            operations=1,
        ):
            return
        part_before, whole_before = self._prior(part), self._prior(whole)
        if part_before is None or whole_before is None or whole_before.value <= 0:
            return
        moved = round(share - part_before.value / whole_before.value * 100, 1)
        word = "an increase" if moved > 0 else "a decrease" if moved < 0 else "no change"
        answer = f"{word} of {abs(moved):.1f} percentage points" if moved else "no change (0.0 percentage points)"
        now, then = self._period_name(part.context, span), self._period_name(part_before.context, span)
        question = (
            f"By how many percentage points did the share of {self.company}'s total revenue that came from "
            f"{whence} change from {then} to {now}?"
        )
        self._keep_fact(
            "mix",
            f"share_change:{key}",
            question,
            [part_before, whole_before, part, whole],
            signed=True,
            answer=answer,
            value=moved,
            unit="percentage points",
            operations=3,
        )

    def _change(self, key: str) -> None:
        if key not in self.figures:
            return
        figure = next(f for f in FIGURES if f.key == key)
        fact, span = self.figures[key]
        prior = self._prior(fact)
        if prior is None:
            return
        delta = fact.value - prior.value
        now, then = self._period_name(fact.context, span), self._period_name(prior.context, span)
        question = f"By how much did {self.company}'s {figure.name} change from {then} to {now}?"
        word = "an increase" if delta > 0 else "a decrease" if delta < 0 else "no change"
        answer = f"{word} of {_amount(abs(delta), fact)}" if delta else "no change (0)"
        kept = self._keep_fact("change", key, question, [prior, fact], signed=figure.signed, answer=answer, value=delta)
        if kept and key == "revenue" and self.annual and prior.value > 0:
            self._comparable("revenue_growth", round(delta / prior.value * 100, 1), [prior, fact], 2)

    def _ratio(self, ratio) -> None:
        if ratio.numerator not in self.figures or ratio.denominator not in self.figures:
            return
        (top, span), (bottom, _) = self.figures[ratio.numerator], self.figures[ratio.denominator]
        if bottom.value == 0 or top.context.end != bottom.context.end:
            return
        value = top.value / bottom.value
        answer = f"{value * 100:.1f}%" if ratio.percent else f"{value:.2f}"
        question = f"What was {self.company}'s {ratio.name} {self._period(top.context, span)}?"
        kept = self._keep_fact(
            "ratio",
            ratio.key,
            question,
            [top, bottom],
            signed=True,
            answer=answer,
            value=round(value * 100, 1) if ratio.percent else round(value, 2),
            unit="percent" if ratio.percent else "ratio",
        )
        if kept and ratio.percent and self.annual:
            self._comparable(ratio.key, round(value * 100, 1), [top, bottom], 1)

    def _comparable(self, key: str, percent: float, facts: list[Fact], operations: int) -> None:
        self.built.comparables[key] = Comparable(
            self.company, self.end, percent, f"{percent:.1f}%", [_fact_json(f) for f in facts], operations
        )

    def _formula(self, formula: Formula) -> None:
        if (formula.annual_only and not self.annual) or any(
            key not in self.figures for key in (*formula.terms, *formula.averaged)
        ):
            return
        facts = {key: self.figures[key][0] for key in (*formula.terms, *formula.averaged)}
        spans = {self.figures[key][1] for key in facts} - {"instant"}
        if len({fact.context.end for fact in facts.values()}) != 1 or len(spans) > 1:
            return  # one period: every statement's figure at its end, every flow over the same months
        for key in formula.averaged:
            start = self._prior(facts[key])
            if start is None:
                return
            facts[f"{key}_start"] = start
        try:
            value = formula.compute({key: fact.value for key, fact in facts.items()})
        except ZeroDivisionError:
            return
        main, span = facts[formula.terms[0]], self.figures[formula.terms[0]][1]
        answer, shown, unit = {
            "amount": (_amount(value, main), value, None),
            "percent": (f"{value * 100:.1f}%", round(value * 100, 1), "percent"),
            "multiple": (f"{value:.1f}x", round(value, 1), "multiple"),
            "days": (f"{value:.1f} days", round(value, 1), "days"),
        }[formula.answer]
        question = f"What was {self.company}'s {formula.name} {self._period(main.context, span)}?"
        operations = formula.formula.count(" ") // 2  # one operator between each two operands
        figures = {figure.key: figure for figure in FIGURES}
        self._keep_fact(
            "formula",
            formula.key,
            question,
            list(facts.values()),
            signed=[figures[key.removesuffix("_start")].signed for key in facts],  # as each figure is printed
            answer=answer,
            value=shown,
            unit=unit,
            formula=formula.formula,
            operations=operations,
        )

    # -- periods and facts

    def _current(self, figure: Figure) -> tuple[str, Fact | None]:
        """The figure's company-wide fact for the filing's period: the year (10-K), else the quarter, else the
        year to date (a 10-Q's cash flows); an instant at the period's end for the balance sheet."""
        facts = [
            fact
            for concept in figure.concepts
            for fact in self.filing.by_concept.get(f"us-gaap:{concept}", [])
            if not fact.context.dimensions
        ]
        order = (
            ["instant"]
            if figure.statement == "balance"
            else ["year"]
            if self.annual
            else ["quarter", "half", "nine_months"]
        )
        for span in order:
            for fact in facts:
                if self._span(fact.context) == span:
                    return span, self._precise(fact)
        return "", None

    def _precise(self, fact: Fact) -> Fact:
        """The most precise of a fact's duplicates: "$12.3 billion" in a sentence, 12,308 in the table."""
        return max(self.occurrences[(fact.concept, fact.context.id)], key=_precision)

    def _span(self, context: Context) -> str:
        if abs((context.end - self.end).days) > _CLOSE_DAYS:
            return ""
        if context.start is None:
            return "instant"
        return next((name for name, (low, high) in _SPANS.items() if low <= context.days <= high), "")

    def _prior(self, fact: Fact) -> Fact | None:
        """The same concept a year earlier, over a period as long (or the instant a year earlier), for the same
        segment (the same dimensions) or company-wide."""
        for other in self.filing.by_concept.get(fact.concept, []):
            context = other.context
            year_before = abs((fact.context.end - context.end).days - 365) <= _CLOSE_DAYS
            if context.dimensions != fact.context.dimensions or context.id == fact.context.id or not year_before:
                continue
            if (context.start is None) == (fact.context.start is None) and abs(
                context.days - fact.context.days
            ) <= _CLOSE_DAYS:
                return self._precise(other)
        return None

    def _fiscal_label(self) -> str:
        year = self.filing.cover.get("DocumentFiscalYearFocus", "") or str(self.end.year)
        focus = self.filing.cover.get("DocumentFiscalPeriodFocus", "")
        return f"fiscal {year}" if self.annual or not focus or focus == "FY" else f"fiscal {year} {focus}"

    def _period(self, context: Context, span: str) -> str:
        if span == "instant":
            return f"as of {long_date(context.end)}"
        return f"for the {_SPAN_WORDS[span]} ended {long_date(context.end)}"

    def _period_name(self, context: Context, span: str) -> str:
        if span == "instant":
            return long_date(context.end)
        return f"the {_SPAN_WORDS[span]} ended {long_date(context.end)}"

    def _member_name(self, member: str, fact: Fact) -> str:
        """The member as the filing's table row names it, when the row does; else its QName in words."""
        words = _humanize(member)
        label = _row_label(self.filing.document, fact.at)
        label = re.sub(r"\s*[®™]|\s*\(\d\)", "", label)
        if label and _letters(label) == _letters(words):
            return label
        return words

    # -- keeping

    def _keep_fact(
        self,
        kind: str,
        key: str,
        question: str,
        facts: list[Fact],
        *,
        signed: bool | list[bool],
        answer: str | None = None,
        value: float | None = None,
        unit: str | None = None,
        formula: str | None = None,
        operations: int | None = None,
    ) -> bool:
        """Keep the task if its facts check out (`_keep`); whether it was kept."""
        main = facts[0] if kind in ("ratio", "formula", "mix") else facts[-1]
        canonical = {
            "value": main.value if value is None else value,
            "unit": unit or _unit(main.unit),
            "scale": main.scale,
            "period": _period_json(main.context),
        }
        if formula is not None:
            canonical["formula"] = formula
        return self._keep(
            kind,
            key,
            question,
            answer or _amount(main.value, main),
            canonical,
            facts,
            checked=self._check(facts, signed),
            operations=_OPERATIONS[kind] if operations is None else operations,
        )

    def _check(self, facts: list[Fact], signed: bool | list[bool]) -> bool | str:
        """True when every fact reads the same wherever it is printed and is printed somewhere; else why not.
        `signed`: whether the printed sign must agree, for all the facts or for each."""
        signs = signed if isinstance(signed, list) else [signed] * len(facts)
        for fact, fact_signed in zip(facts, signs, strict=True):
            readings = [
                (other, printed(self.filing, other)) for other in self.occurrences[(fact.concept, fact.context.id)]
            ]
            readable = [(other, reading) for other, reading in readings if reading is not None]
            agreeing = [agrees(other, reading, signed=fact_signed) for other, reading in readable]
            disagreeing = [not ok for (other, reading), ok in zip(readable, agreeing, strict=False) if reading.stated]
            self.built.facts_checked += 1
            if not all(_consistent(fact, other) for other, _ in readings):
                return "duplicate tags differ"
            if any(disagreeing):
                return "printed value differs from the tag"
            if not any(agreeing):
                return "not printed where a scale is stated"
            self.built.facts_agreeing += 1
        return True

    def _keep(
        self,
        kind: str,
        key: str,
        question: str,
        answer: str,
        canonical: dict,
        facts: list[Fact],
        *,
        checked: bool | str,
        operations: int,
    ) -> bool:
        if checked is not True:
            self.built.dropped[(kind, checked)] += 1
            return False
        if question in self.asked:
            self.built.dropped[(kind, "asks what another task asks")] += 1
            return False
        self.asked.add(question)
        source = self.source
        self.built.tasks.append(
            {
                "task_id": f"{source.ticker}-{source.form}-{self.end.isoformat()}-{kind}-{_slug(key)}",
                "question": question,
                "expected_answer": answer,
                "ticker": source.ticker,
                "company": self.company.rsplit(" (", 1)[0],
                "cik": source.cik,
                "form": source.form,
                "accession": source.accession,
                "filing_date": source.filing_date,
                "url": source.url,
                "period_end": self.end.isoformat(),
                "kind": kind,
                "tier": TIERS[kind],
                "figure": key.split(":")[0],
                "canonical_answer": canonical,
                "facts": [_fact_json(fact) for fact in facts],
                "difficulty": {"documents": 1, "facts": len(facts), "operations": operations},
            }
        )
        return True


_SPAN_WORDS = {"year": "fiscal year", "quarter": "three months", "half": "six months", "nine_months": "nine months"}
_MONTHS = ("January February March April May June July August September October November December").split()


def _occurrences(filing: Filing) -> dict[tuple[str, str], list[Fact]]:
    out: dict[tuple[str, str], list[Fact]] = {}
    for fact in filing.facts:
        out.setdefault((fact.concept, fact.context.id), []).append(fact)
    return out


def _precision(fact: Fact) -> float:
    return float("inf") if fact.decimals is None else fact.decimals


def _consistent(fact: Fact, other: Fact) -> bool:
    """Duplicates of a fact agree to the coarser one's precision (XBRL's rule for consistent duplicates)."""
    coarser = min(_precision(fact), _precision(other))
    return (
        coarser == float("inf")
        and fact.value == other.value
        or coarser != float("inf")
        and abs(fact.value - other.value) <= 0.5 * 10**-coarser + 1e-9 * abs(fact.value)
    )


def long_date(day: date) -> str:
    """ "September 28, 2024", in English whatever the locale."""
    return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"


def _date_in(text: str) -> date | None:
    """A printed date ("September 28, 2024", "2024-09-28") as a date; None when it is not one."""
    match = re.search(r"([A-Z][a-z]+)\s+(\d{1,2})\s*,\s*(\d{4})", text)
    try:
        if match and match.group(1) in _MONTHS:
            return date(int(match.group(3)), _MONTHS.index(match.group(1)) + 1, int(match.group(2)))
        match = re.search(r"(\d{4})-(\d{2})-(\d{2})", text)
        return date(*map(int, match.groups())) if match else None
    except ValueError:
        return None


def _unit(unit: str) -> str:
    return {"iso4217:USD": "USD", "xbrli:shares": "shares", "iso4217:USD/xbrli:shares": "USD/share"}.get(unit, unit)


def _amount(value: float, fact: Fact) -> str:
    """A value in the fact's own scale and unit: "$391,035 million", "$6.08", "15,408,095 thousand shares"."""
    sign = "-" if value < 0 else ""
    if fact.per_share:
        return f"{sign}${abs(value):,.2f}"
    scale = fact.scale if fact.scale in (3, 6, 9) else 0
    shown = abs(value) / 10**scale
    places = 0 if fact.decimals is None else min(max(fact.decimals + scale, 0), 2)
    number = f"{shown:,.{places}f}"
    word = {3: " thousand", 6: " million", 9: " billion"}.get(scale, "")
    if fact.unit == "xbrli:shares":
        return f"{sign}{number}{word} shares"
    currency = "$" if fact.unit == "iso4217:USD" else ""
    return f"{sign}{currency}{number}{word}"


def _period_json(context: Context) -> dict[str, str | None]:
    return {"start": context.start.isoformat() if context.start else None, "end": context.end.isoformat()}


def _fact_json(fact: Fact) -> dict[str, Any]:
    return {
        "concept": fact.concept,
        "context": fact.context.id,
        "period": _period_json(fact.context),
        "dimensions": dict(fact.context.dimensions),
        "value": fact.value,
        "unit": fact.unit,
        "scale": fact.scale,
        "decimals": fact.decimals,
    }


def _class_name(context: Context) -> str:
    """ "Class A" for a cover fact of one class of stock; "" for the common stock as a whole."""
    members = [member for axis, member in context.dimensions if axis.endswith("StatementClassOfStockAxis")]
    if not members:
        return ""
    words = _humanize(members[0]).replace(" Common Stock", "").replace("Common Class ", "Class ")
    return "" if words.lower() in ("common stock", "common") else words


def _humanize(member: str) -> str:
    """`aapl:GreaterChinaSegmentMember` -> "Greater China"."""
    local = member.split(":")[-1]
    local = re.sub(r"(Segment|ReportableSegment|Member)+$", "", local)
    if member.startswith("country:"):
        return _COUNTRIES.get(local, "")
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", local)
    return words.strip()


# ISO codes of the countries filers break revenue out by; a member not named here is not asked about
_COUNTRIES = {
    "US": "the United States",
    "CN": "China",
    "JP": "Japan",
    "IE": "Ireland",
    "GB": "the United Kingdom",
    "DE": "Germany",
    "TW": "Taiwan",
    "SG": "Singapore",
    "IN": "India",
    "KR": "South Korea",
    "CA": "Canada",
    "FR": "France",
    "NL": "the Netherlands",
    "CH": "Switzerland",
    "MX": "Mexico",
    "BR": "Brazil",
    "AU": "Australia",
    "HK": "Hong Kong",
    "IL": "Israel",
    "IT": "Italy",
    "ES": "Spain",
}


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _row_label(document: str, at: int) -> str:
    """The text of the first cell of the row holding `at` (found with `find`: one pass, whatever the markup)."""
    row = document.rfind("<tr", max(0, at - 20_000), at)
    if row < 0 or document.rfind("</tr>", row, at) >= 0:
        return ""
    cell = document.find("<td", row, at)
    end = document.find("</td>", cell, at) if cell >= 0 else -1
    return text_of(document[cell:end]).strip(" :") if end >= 0 else ""


def _slug(key: str) -> str:
    """A task's key as part of its ID: "revenue:segment:EuropeMember" -> "revenue-segment-EuropeMember"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-")
