"""HTML to text (issue: no ix:header text, table cells separated, every ix:nonFraction value present), on the
generated corpus and on the real filings of ../shared/data/edgar-real (skipped when absent)."""

from __future__ import annotations

import random
import re

import lxml.html
import pytest

from finsec.corpus.generate import write_corpus
from finsec.text.html_to_text import HtmlTextError, collapse_whitespace, html_to_text
from harness.real_filings import EDGAR_REAL, manifest, needs_real_filings


def hidden_header_texts(html: bytes) -> list[str]:
    root = lxml.html.fromstring(html)
    return [t.strip() for h in root.iter("ix:header") for t in h.itertext() if len(t.strip()) > 12]


def displayed_facts(html: bytes) -> list[str]:
    root = lxml.html.fromstring(html)
    facts = []
    for fact in root.iter("ix:nonfraction"):
        if any(a.tag == "ix:header" for a in fact.iterancestors()):
            continue
        value = re.sub(r"\s+", " ", "".join(fact.itertext())).strip()
        if value:
            facts.append(value)
    return facts


def check_filing(html: bytes) -> str:
    text = html_to_text(html)
    visible = set(text.split("\n"))
    leaked = [t for t in hidden_header_texts(html) if t in visible]
    assert not leaked, f"ix:header text leaked: {leaked[:3]}"
    missing = [f for f in displayed_facts(html) if f not in text]
    assert not missing, f"inline-XBRL values missing: {missing[:5]}"
    return text


def test_generated_filings(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    for path in (corpus / "Archives").rglob("*.htm"):
        text = check_filing(path.read_bytes())
        assert "Draft note" not in text and "Hidden header text" not in text  # display:none, ix:header
        if "-8k-" not in path.name:  # label and figure in one row, cells separated, parentheses kept
            assert re.search(r"^Total net revenues \| \$[\d,]+", text, re.M)
            assert re.search(r"^Purchases of property and equipment \| \$\([\d,]+\)", text, re.M)


@needs_real_filings
@pytest.mark.parametrize("row", manifest(), ids=lambda r: r["primary_document"])
def test_real_filing(row):
    text = check_filing((EDGAR_REAL / row["url_path"]).read_bytes())
    assert not re.search(r"[A-Za-z\)]\(?\d{1,3},\d{3}\)?\d", text[:200000]), "cells glued together"


@needs_real_filings
def test_amazon_cash_flow_row_keeps_its_label():
    amazon = next(r for r in manifest() if r["ticker"] == "AMZN")
    text = html_to_text((EDGAR_REAL / amazon["url_path"]).read_bytes())
    assert "Net cash provided by (used in) operating activities | 46,752 | 84,946 | 115,877" in text


def test_text_and_bytes_give_the_same_result(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    path = next((corpus / "Archives").rglob("*.htm"))
    assert html_to_text(path.read_text()) == html_to_text(path.read_bytes())


@pytest.mark.parametrize("html", ["", "   ", b""])
def test_empty_html_is_an_error(html):
    with pytest.raises(HtmlTextError, match="HTML output was empty"):
        html_to_text(html)


def test_a_text_node_over_libxml2s_10_mb_limit_is_read_whole():
    """Without huge_tree, libxml2 drops it silently: the page read as "Filing content was empty"."""
    paragraph = "revenue " * 1_320_000  # 10.56 MB
    text = html_to_text(f"<html><body><p>{paragraph}</p><p>Total assets | 5</p></body></html>".encode())
    assert text.split("\n") == [paragraph.strip(), "Total assets | 5"]


def test_deep_nesting_is_read_up_to_the_parsers_limit_and_refused_beyond_it():
    def nested(depth: int) -> bytes:
        return ("<div>" * depth + "<table><tr><td>Net income</td><td>42</td></tr></table>" + "</div>" * depth).encode()

    assert html_to_text(nested(1_500)) == "Net income | 42"  # past 256 deep, and past Python's recursion limit
    with pytest.raises(HtmlTextError, match=r"could not be read whole \(33,0\d\d bytes\): Excessive depth"):
        html_to_text(nested(3_000))


@pytest.mark.parametrize("seed", range(200))
def test_whitespace_is_collapsed_a_chunk_at_a_time_as_in_one_split(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(["a", "bc", " ", "\n", "\t\xa0", "  "]) for _ in range(rng.randrange(0, 60)))
    for chunk in (1, 2, 3, 7):
        assert collapse_whitespace(text, chunk) == " ".join(text.split())
