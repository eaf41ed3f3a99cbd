"""The embedded corpus: deterministic, EDGAR-shaped, fictional, and every question answerable from its text."""

from __future__ import annotations

import json
from collections import Counter

from finsec.corpus.generate import ISSUERS, filings, questions, write_corpus
from finsec.edgar.urls import parse_filing_url
from finsec.text.html_to_text import html_to_text


def test_corpus_is_deterministic(tmp_path):
    a, b = write_corpus(tmp_path / "a"), write_corpus(tmp_path / "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_issuers_cannot_collide_with_real_tickers_or_ciks():
    assert all(i.ticker[-1].isdigit() and i.cik > 990_000_000 for i in ISSUERS)


def test_every_issuer_files_10k_10q_and_8k():
    forms = Counter((f.issuer.ticker, f.form) for f in filings())
    assert {form for _, form in forms} == {"10-K", "10-Q", "8-K"}
    assert all(forms[(i.ticker, "10-K")] == 2 and forms[(i.ticker, "8-K")] == 2 for i in ISSUERS)


def test_documents_are_inline_xbrl_shaped(tmp_path):
    root = write_corpus(tmp_path / "c")
    for filing in filings():
        html = (root / filing.url_path).read_text()
        assert "<ix:header>" in html and "<ix:nonFraction" in html and 'style="display:none"' in html
        assert parse_filing_url(filing.url).archive_path == filing.url_path


def test_every_answer_is_in_its_filings_text(tmp_path):
    root = write_corpus(tmp_path / "c")
    written = json.loads((root / "questions.json").read_text())
    assert written == questions() and len(written) >= 40
    texts = {}
    for q in written:
        text = texts.setdefault(
            q["url"], html_to_text((root / q["url"].removeprefix("https://www.sec.gov/")).read_bytes())
        )
        assert q["evidence"] in text, q
    assert {q["form"] for q in written} == {"10-K", "10-Q", "8-K"}


def test_statements_split_the_top_line_and_state_it_as_a_total(tmp_path):
    """Products and services, then the total (the top line of finsec/retrieval/concepts.py), and the split
    left every other figure as it was: the facts' seed did not move with the corpus version."""
    root = write_corpus(tmp_path / "c")
    for filing in filings():
        if filing.form == "8-K":
            continue
        f = filing.facts
        assert f["ProductRevenues"] + f["ServiceRevenues"] == f["Revenues"] and f["ServiceRevenues"] > 0
        text = html_to_text((root / filing.url_path).read_bytes())
        rows = [
            text.index(f"{label} | ${value:,}")
            for label, value in (
                ("Product revenues", f["ProductRevenues"]),
                ("Service revenues", f["ServiceRevenues"]),
                ("Total net revenues", f["Revenues"]),
            )
        ]
        assert rows == sorted(rows), filing.url
    assert questions()[0]["expected_answer"] == "$979,207 thousand"


def test_reworded_questions_come_last_so_a_runs_first_tasks_stay():
    asked = questions()
    reworded = [q for q in asked if "headcount" in q["question"] or "net sales" in q["question"]]
    assert len(reworded) == 20 and asked[-len(reworded) :] == reworded
