"""The text of a document for parse_html_page (contract §A.8 step 4, §F.5), with the digest it is stored under.

SEC filing URLs go through the filing pipeline: the disk cache, the read-only dump, then the configured source
(mirror folder or live EDGAR). Concurrent requests for one URL in a replica share one fetch and parse. Any other
URL is fetched only by the guarded page fetcher. Parsing and digesting run off the event loop. Keeping texts in
memory is the document cache's job (finsec/document_cache.py), not this module's.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from finsec.edgar.cache import DiskCache
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.files import read_inside
from finsec.edgar.source import DEFAULT_MAX_BYTES, EdgarSource
from finsec.edgar.urls import FilingDocumentUrl, InvalidFilingUrl, parse_filing_url
from finsec.single_flight import SingleFlight
from finsec.text.html_to_text import HtmlTextError, html_to_text
from finsec.text.plain_text import looks_like_html, plain_text
from finsec.text.size import text_problem
from finsec.tool_error import ToolError

__all__ = [
    "DocumentUnavailable",
    "filing_of",
    "FilingTexts",
    "Page",
    "PageFetcher",
    "parse_page",
    "ParsedText",
    "text_digest",
]

log = logging.getLogger(__name__)

# A page's body, its media type and charset; raises DocumentUnavailable with a message the agent can read.
PageFetcher = Callable[[str], Awaitable["Page"]]


class DocumentUnavailable(ToolError):
    """A tool-level failure: its text is the tool's result (contract §A.8 step 6)."""


@dataclass(frozen=True)
class Page:
    body: bytes
    media_type: str | None = None  # None: an SEC archive file, read by what it holds
    charset: str | None = None


@dataclass(frozen=True)
class ParsedText:
    text: str
    digest: str


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def filing_of(url: str) -> FilingDocumentUrl | None:
    """The filing document a URL names, None for any other page. A malformed filing URL, or one that names
    no document (an accession folder), is the agent's to fix: an argument error (Decision 13)."""
    try:
        filing = parse_filing_url(url)
    except InvalidFilingUrl as error:
        raise DocumentUnavailable(str(error)) from None
    if filing is not None and not filing.document:
        raise DocumentUnavailable(f"Invalid SEC URL format: {url}")
    return filing


class FilingTexts:
    def __init__(
        self,
        source: EdgarSource,
        directory: CompanyDirectory,
        *,
        cache: DiskCache | None = None,
        dump_root: Path | None = None,
        dump_max_bytes: int = DEFAULT_MAX_BYTES,
        fetch_page: PageFetcher | None = None,
    ):
        self._source = source
        self._directory = directory
        self._cache = cache
        self._dump = Path(dump_root).resolve() if dump_root else None
        self._dump_max_bytes = dump_max_bytes  # a dump file is read under the fetch cap, as a mirror file is
        self._fetch_page = fetch_page
        self._in_flight: SingleFlight[str, ParsedText] = SingleFlight()
        self.reads_by_source: Counter[str] = Counter()

    async def parse(self, url: str) -> ParsedText:
        """The text of `url` and its digest; raises DocumentUnavailable with the agent's message."""
        return await self._in_flight.run(url, lambda: self._load(url))

    async def _load(self, url: str) -> ParsedText:
        filing = filing_of(url)
        if filing is None:
            return await self._load_page(url)
        return await self._load_filing(url, filing)

    async def _load_filing(self, url: str, filing: FilingDocumentUrl) -> ParsedText:
        if self._cache and (cached := await self._cache.read_text(self._cache.text_file(filing))) is not None:
            self.reads_by_source["cache"] += 1
            return ParsedText(cached, await asyncio.to_thread(text_digest, cached))
        html, where = await self._read_dump(filing), "sec-corpus"
        if html is None:
            html, where = await self._source.read_archive(filing.archive_path), "source"
        if html is None:
            raise DocumentUnavailable(
                f"Failed to download filing from {url}. The SEC server may be temporarily unavailable."
            )
        parsed = await _to_text(Page(html))
        if not parsed.text.strip():
            raise DocumentUnavailable("Filing content was empty after parsing.")
        self.reads_by_source[where] += 1
        if sum(self.reads_by_source.values()) == 1:
            log.info("first SEC filing read, from %s", where)
        if self._cache:
            await self._cache.write_text(self._cache.text_file(filing), parsed.text)
        return parsed

    async def _read_dump(self, url: FilingDocumentUrl) -> bytes | None:
        """The dump's layout convention (§F.5 b): only for a filing's own primary document whose metadata is known."""
        if self._dump is None:
            return None
        filing = self._directory.known_filing(url.cik, url.accession)
        if filing is None or filing.primary_document.lower() != url.document.lower() or not filing.report_date:
            return None
        path = (
            self._dump
            / filing.ticker
            / filing.form.replace("/", "_")
            / filing.report_date[:4]
            / filing.accession_number
            / "primary-document.html"
        )
        return await asyncio.to_thread(read_inside, path, (self._dump,), self._dump_max_bytes)

    async def _load_page(self, url: str) -> ParsedText:
        if self._fetch_page is None:
            raise DocumentUnavailable(f"Failed to fetch {url}. This server only fetches SEC filing documents.")
        parsed = await _to_text(await self._fetch_page(url))
        if not parsed.text.strip():
            raise DocumentUnavailable("HTML output was empty")
        return parsed


def parse_page(page: Page) -> ParsedText:
    """The text of a fetched page and its digest; raises HtmlTextError when it cannot be read whole."""
    plain = page.media_type == "text/plain" or (page.media_type is None and not looks_like_html(page.body))
    text = plain_text(page.body, page.charset) if plain else html_to_text(page.body)
    if problem := text_problem(text):
        raise HtmlTextError(f"The document is too large to store ({len(page.body):,} bytes): {problem}.")
    return ParsedText(text, text_digest(text))


async def _to_text(page: Page) -> ParsedText:
    try:
        return await asyncio.to_thread(parse_page, page)
    except HtmlTextError as error:
        raise DocumentUnavailable(str(error)) from error
