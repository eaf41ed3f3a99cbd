"""A document is read whole or refused whole, with its size named: the size limits bound what one parse and one
index cost (bench/worst_inputs.py measures the worst page at the limits), and let in every real filing the fetch
cap lets in."""

from __future__ import annotations

import asyncio

import pytest

from deployments.settings import Settings
from finsec.corpus.generate import write_corpus
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts, Page, parse_page
from finsec.edgar.source import MirrorSource
from finsec.text.size import MAX_TAGS, MAX_TEXT_CHARS, MAX_TEXT_LINES
from harness.real_filings import EDGAR_REAL, manifest, needs_real_filings

FETCH_CAP = Settings.model_fields["fetch_max_bytes"].default


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    """The text the parse tool stores for a fetched page, or the tool error it answers with."""
    mirror = MirrorSource(write_corpus(tmp_path_factory.mktemp("corpus")))
    return lambda page: asyncio.run(_read(page, mirror))


async def _read(page: Page, mirror: MirrorSource) -> str:
    async def fetch_page(url):
        return page

    try:
        return (
            await FilingTexts(mirror, CompanyDirectory(mirror), fetch_page=fetch_page).parse(
                "https://docs.example.com/page"
            )
        ).text
    except DocumentUnavailable as error:
        return f"ERROR {error}"


def cells(n: int) -> bytes:
    return ("<table><tr>" + "<td>7</td>" * n + "</tr></table>").encode()


def test_a_page_with_more_tags_than_the_limit_is_refused_before_it_is_parsed(read):
    at_limit = read(Page(cells(MAX_TAGS // 2 - 4), "text/html"))
    assert at_limit.startswith("7 | 7 | ")
    over = read(Page(cells(MAX_TAGS // 2), "text/html"))
    assert over == (
        f"ERROR The page is too large to read ({len(cells(MAX_TAGS // 2)):,} bytes): its markup has "
        f"{MAX_TAGS + 4:,} tags; this server reads pages of at most {MAX_TAGS:,}."
    )


@pytest.mark.parametrize("media_type", ["text/html", "text/plain"])
def test_a_text_over_the_character_limit_is_refused_whole(read, media_type):
    words = "revenue " * (MAX_TEXT_CHARS // 8)
    assert read(Page(words[:-1].encode(), media_type)) == words[:-1]
    over = read(Page((words + "x").encode(), media_type))
    assert over.startswith("ERROR The document is too large to store (")
    assert over.endswith(
        f"its text is {MAX_TEXT_CHARS + 1:,} characters; this server stores documents of at most {MAX_TEXT_CHARS:,}."
    )


@pytest.mark.parametrize("media_type", ["text/html", "text/plain"])
def test_a_text_over_the_line_limit_is_refused_whole(read, media_type):
    line = "<p>Total 1</p>" if media_type == "text/html" else "Total 1\n"
    assert read(Page((line * MAX_TEXT_LINES).encode(), media_type)).count("\n") == MAX_TEXT_LINES - 1
    over = read(Page((line * (MAX_TEXT_LINES + 1)).encode(), media_type))
    assert over.endswith(
        f"its text has {MAX_TEXT_LINES + 1:,} lines; this server stores documents of at most {MAX_TEXT_LINES:,} lines."
    )


@needs_real_filings
@pytest.mark.parametrize("filing", manifest(), ids=lambda f: f["url_path"].rsplit("/", 1)[-1])
def test_a_real_filing_as_big_as_the_fetch_cap_would_be_read(filing):
    """Scaled to the fetch cap at its own density of tags, characters and lines, each real filing stays inside
    every limit: the limits refuse pages built to cost, not filings."""
    html = (EDGAR_REAL / filing["url_path"]).read_bytes()
    text = parse_page(Page(html)).text
    scale = FETCH_CAP / len(html)
    assert html.count(b"<") * scale < MAX_TAGS
    assert len(text) * scale < MAX_TEXT_CHARS
    assert (text.count("\n") + 1) * scale < MAX_TEXT_LINES
