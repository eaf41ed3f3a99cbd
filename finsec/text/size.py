"""How big a document this server reads: a page's markup and its text, each bounded by what its reading costs.

A document is read once (parsed, then indexed on its first question) and that work runs in one request. Its cost
follows the page's tags and the text's characters and lines, not its bytes, and a page built to cost holds many
times the tags and lines a filing of its size does. The limits sit above any filing the fetch cap lets in
(tests/unit/finsec/test_document_size.py scales the real filings to the cap) and bound the worst page's work
(docs/benchmarks.md); past them a document is refused whole, with its size named.
"""

from __future__ import annotations

__all__ = ["MAX_TAGS", "MAX_TEXT_CHARS", "MAX_TEXT_LINES", "markup_problem", "text_problem"]

MAX_TAGS = 500_000
MAX_TEXT_CHARS = 4_000_000
MAX_TEXT_LINES = 60_000


def markup_problem(html: str | bytes) -> str | None:
    """Why the page is too big to parse, or None. Counting `<` over-counts tags (a `<` in text), never under."""
    tags = html.count(b"<") if isinstance(html, bytes) else html.count("<")
    if tags > MAX_TAGS:
        return f"its markup has {tags:,} tags; this server reads pages of at most {MAX_TAGS:,}"
    return None


def text_problem(text: str) -> str | None:
    """Why the text is too big to store and index, or None."""
    if len(text) > MAX_TEXT_CHARS:
        return f"its text is {len(text):,} characters; this server stores documents of at most {MAX_TEXT_CHARS:,}"
    lines = text.count("\n") + 1
    if lines > MAX_TEXT_LINES:
        return f"its text has {lines:,} lines; this server stores documents of at most {MAX_TEXT_LINES:,} lines"
    return None
