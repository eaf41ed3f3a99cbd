"""The generated corpus of many companies' 10-Ks and first-quarter 10-Qs (finsec/corpus/annual_reports.py) and the
tasks that need two filings: a company's growth over three years and a quarter against the same quarter a year
before (finsec/taskgen/periods.py), and comparisons bounded per filing (finsec/taskgen/compare.py). No Ray; the build on Ray is tests/integration/test_tasks_on_ray.py."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from deployments.cli import main
from finsec.corpus.annual_reports import (
    LAST_YEAR,
    annual_reports,
    companies,
    first_quarter,
    render,
    write_annual_reports,
)
from finsec.grading.deterministic import DeterministicGrader
from finsec.net.ports import free_port
from finsec.taskgen.build import ACROSS_FILINGS, TIERS, Source, build_tasks
from finsec.taskgen.compare import COMPARED, comparison_tasks
from finsec.taskgen.periods import YEARS, growth_tasks, quarter_tasks
from finsec.xbrl.facts import read_filing

COMPANIES, FILINGS_EACH = 3, 4


def _source(filing) -> Source:
    return Source(f"{filing.issuer.cik:010d}", filing.issuer.ticker, filing.form, filing.accession, filing.url)


@pytest.fixture(scope="module")
def built():
    return [
        (filing, company, build_tasks(_source(filing), render(filing, company)))
        for filing, company in annual_reports(COMPANIES, FILINGS_EACH)
    ]


def test_the_corpus_is_deterministic_and_in_the_sec_gov_layout(tmp_path):
    first, second = write_annual_reports(tmp_path / "a", 2, 2), write_annual_reports(tmp_path / "b", 2, 2)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    registry = json.loads((first / "files" / "company_tickers.json").read_text())
    assert [row["ticker"] for row in registry.values()] == ["G0011", "G0022"]
    assert len([f for f in files if f.suffix == ".htm"]) == 4
    many = companies(3000, 1)  # a question names a company: no two share a name or a ticker, at any size
    assert len({c.issuer.name for c in many}) == len({c.issuer.ticker for c in many}) == 3000


def test_every_filing_gives_every_kind_of_its_own_with_every_fact_agreeing(built):
    for filing, _, result in built:
        assert {task["kind"] for task in result.tasks} == set(TIERS) - ACROSS_FILINGS, filing.url
        assert result.facts_checked == result.facts_agreeing > 50
        assert not result.dropped


def test_a_10ks_prior_year_is_the_year_befores_own_figure(built):
    """The corpus is one company's history, not unrelated documents: the comparative column of fiscal Y's 10-K
    tags what fiscal Y-1's 10-K tags as its own year."""
    tagged: dict[tuple[str, str, date], float] = {}
    for filing, company, _ in built:
        for fact in read_filing(render(filing, company)).facts:
            if fact.concept == "us-gaap:Revenues" and not fact.context.dimensions and fact.context.start:
                key = (filing.issuer.ticker, fact.concept, fact.context.end)
                assert tagged.setdefault(key, fact.value) == fact.value, key
    assert len(tagged) == COMPANIES * (FILINGS_EACH + 1)


def test_growth_over_three_years_reads_two_filings_and_is_what_an_analyst_computes(built):
    rows = [(_source(filing), result, "train") for filing, _, result in built]
    tasks = growth_tasks(rows)
    # Fiscal years LAST_YEAR-4 .. LAST_YEAR are stated; the rates ending at LAST_YEAR-1 and LAST_YEAR have a start.
    assert len(tasks) == COMPANIES * 2
    grader = DeterministicGrader()
    for task in tasks:
        company = next(c for f, c, _ in built if f.issuer.ticker == task["ticker"])
        last = date.fromisoformat(task["period_end"]).year
        by_hand = round(
            ((company.years[last]["Revenues"] / company.years[last - YEARS]["Revenues"]) ** (1 / 3) - 1) * 100, 1
        )
        assert task["canonical_answer"]["value"] == by_hand
        assert task["expected_answer"] == f"{by_hand:.1f}%"
        first, second = task["documents"]
        assert first["accession"] != second["accession"] and task["difficulty"]["documents"] == 2
        assert [f["value"] for f in task["facts"]] == [
            company.years[last - YEARS]["Revenues"] * 1000,
            company.years[last]["Revenues"] * 1000,
        ]
        assert task["kind"] == "growth" and task["tier"] == TIERS["growth"] and task["split"] == "train"
        said = f"Revenue compounded at about {by_hand}% a year over the period."
        assert grader.grade_sync(task["question"], task["expected_answer"], said).reward == 1.0, said
        wrong = f"Revenue compounded at about {by_hand + 2}% a year."
        assert grader.grade_sync(task["question"], task["expected_answer"], wrong).reward == 0.0, wrong
    assert {date.fromisoformat(t["period_end"]).year for t in tasks} == {LAST_YEAR - 1, LAST_YEAR}


def test_growth_needs_the_filing_that_states_the_first_year(built):
    """Without the 10-K whose year or comparative column is the first year, there is no growth task: the rate is
    never read from one filing, nor made up from a year no filing states."""
    newest_two = [
        (_source(filing), result, "train") for filing, _, result in built if filing.fiscal_year >= LAST_YEAR - 1
    ]
    assert growth_tasks(newest_two) == []


@pytest.fixture(scope="module")
def quarterly():
    return [
        (filing, company, build_tasks(_source(filing), render(filing, company)))
        for filing, company in annual_reports(COMPANIES, FILINGS_EACH, quarters=True)
        if filing.form == "10-Q"
    ]


def test_a_quarter_against_the_same_quarter_a_year_before_reads_two_10qs_and_is_computed_by_hand(quarterly):
    for filing, _, result in quarterly:  # each 10-Q reads as a filing of its own: every fact agreeing
        assert result.facts_checked == result.facts_agreeing > 10 and not result.dropped, filing.url
        assert {"line_item", "change", "ratio"} <= {task["kind"] for task in result.tasks}
    tasks = quarter_tasks([(_source(filing), result, "train") for filing, _, result in quarterly])
    assert len(tasks) == COMPANIES * (FILINGS_EACH - 1)  # the oldest 10-Q has no year-earlier 10-Q read
    grader = DeterministicGrader()
    for task in tasks:
        company = next(c for f, c, _ in quarterly if f.issuer.ticker == task["ticker"])
        year = date.fromisoformat(task["period_end"]).year
        now, before = (first_quarter(company, y)["Revenues"] for y in (year, year - 1))
        by_hand = round((now - before) / before * 100, 1)
        assert task["canonical_answer"] == {"value": by_hand, "unit": "percent"}
        assert [f["value"] for f in task["facts"]] == [before * 1000, now * 1000]
        assert [d["form"] for d in task["documents"]] == ["10-Q", "10-Q"]
        assert len({d["accession"] for d in task["documents"]}) == 2
        assert task["kind"] == "quarter_change" and task["difficulty"] == {"documents": 2, "facts": 2, "operations": 2}
        moved = "rose" if by_hand > 0 else "fell"
        said = f"Quarterly revenue {moved} {abs(by_hand)}% from the same quarter a year earlier."
        assert grader.grade_sync(task["question"], task["expected_answer"], said).reward == 1.0, said
        backwards = f"Quarterly revenue {'fell' if by_hand > 0 else 'rose'} {abs(by_hand)}%."
        assert grader.grade_sync(task["question"], task["expected_answer"], backwards).reward == 0.0, backwards


def test_a_quarter_change_needs_the_year_earlier_10q_not_a_10qs_own_comparative_column(quarterly):
    newest = [(_source(f), result, "train") for f, _, result in quarterly if f.fiscal_year == LAST_YEAR]
    assert quarter_tasks(newest) == []


def test_comparisons_are_every_pair_of_a_few_and_bounded_per_filing_for_many():
    reports = annual_reports(12, 1)
    rows = [(_source(f), build_tasks(_source(f), render(f, c)), "train") for f, c in reports]
    few = comparison_tasks(rows[:6])
    pairs = {task["ticker"] for task in few}
    assert len(pairs) == 6 * 5 // 2  # every pair of six
    many = comparison_tasks(rows)
    many_pairs = {task["ticker"] for task in many}
    assert len(many_pairs) <= 12 * 5 and len(many_pairs) < 12 * 11 // 2  # five peers a filing at most, not all pairs
    assert len(many_pairs) == len(many) // len(COMPARED)
    assert comparison_tasks(list(reversed(rows))) == many  # the same tasks whatever order the filings came in


def test_the_command_builds_growth_tasks_from_a_generated_corpus(tmp_path: Path, capsys):
    corpus = write_annual_reports(tmp_path / "corpus", 2, 4)
    out = tmp_path / "tasks"
    argv = ["tasks", "build", "--corpus", str(corpus), "--out", str(out), "--forms", "10-K", "--filings-per-form", "4"]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["growth"] == 2 * 2 and report["facts_checked"] == report["facts_agreeing"]
    tasks = [json.loads(line) for split in out.glob("*.jsonl") for line in split.read_text().splitlines()]
    assert sum(task["kind"] == "growth" for task in tasks) == 4
    assert "4 growth rates across a company's 10-Ks" in capsys.readouterr().out


def test_the_command_builds_quarter_changes_from_a_corpus_with_10qs(tmp_path: Path):
    corpus = write_annual_reports(tmp_path / "corpus", 2, 2, quarters=True)
    out = tmp_path / "tasks"
    argv = ["tasks", "build", "--corpus", str(corpus), "--out", str(out), "--forms", "10-Q", "--filings-per-form", "2"]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["quarter_changes"] == 2 and report["growth"] == 0  # each company's 2024 Q1 against 2023's


def test_an_address_nothing_answers_at_is_one_line_at_once(tmp_path: Path, capsys):
    """Not the minutes `ray.init` waits for a cluster that is not there (and nothing is written)."""
    corpus = write_annual_reports(tmp_path / "corpus", 1, 1)
    argv = [
        "tasks",
        "build",
        "--corpus",
        str(corpus),
        "--out",
        str(tmp_path / "o"),
        "--address",
        f"127.0.0.1:{free_port()}",
    ]
    assert main(argv) == 2
    assert "cannot reach a Ray cluster" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
