"""The text of a document for parse_html_page (contract §A.8 step 4, §F.5).

SEC filing URLs go through the filing pipeline: this replica's memory, the app-wide text cache (every
replica's parses), the disk cache, the read-only dump, then the configured source (mirror folder or live
EDGAR). One parse serves every session: texts are kept by URL, and concurrent requests for one URL in a
replica share a single fetch and parse. Any other URL is fetched only by the safe fetcher, which allows
nothing but allowlisted public hosts, and is never cached (a page may change; a filing does not).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Awaitable, Callable, Protocol

from ..text.html_to_text import HtmlTextError, html_to_text
from .cache import DiskCache
from .companies import CompanyDirectory
from .source import EdgarSource
from .urls import FilingDocumentUrl, parse_filing_url

log = logging.getLogger(__name__)

PageFetcher = Callable[[str], Awaitable[bytes]]  # raises DocumentUnavailable with a message the agent can read


class TextCache(Protocol):
    async def get(self, url: str) -> str | None: ...

    async def put(self, url: str, text: str) -> None: ...


class DocumentUnavailable(Exception):
    """A tool-level failure: its text is the tool's result (contract §A.8 step 6)."""


class FilingTexts:
    def __init__(
        self,
        source: EdgarSource,
        directory: CompanyDirectory,
        *,
        cache: DiskCache | None = None,
        dump_root: Path | None = None,
        fetch_page: PageFetcher | None = None,
        shared: TextCache | None = None,
        memory_documents: int = 32,
    ):
        self._source = source
        self._directory = directory
        self._cache = cache
        self._dump = Path(dump_root).resolve() if dump_root else None
        self._fetch_page = fetch_page
        self._shared = shared
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._capacity = memory_documents
        self._in_flight: dict[str, asyncio.Task[str]] = {}
        self.reads_by_source: Counter[str] = Counter()

    async def text(self, url: str) -> str:
        if url in self._texts:
            self._texts.move_to_end(url)
            self.reads_by_source["memory"] += 1
            return self._texts[url]
        task = self._in_flight.get(url)
        if task is None:
            task = self._in_flight[url] = asyncio.create_task(self._load(url))
            task.add_done_callback(lambda _: self._in_flight.pop(url, None))
        text = await asyncio.shield(task)
        if parse_filing_url(url) is not None:  # a filing never changes; another page may
            self._texts[url] = text
            if len(self._texts) > self._capacity:
                self._texts.popitem(last=False)
        return text

    async def _load(self, url: str) -> str:
        filing = parse_filing_url(url)
        if filing is None:
            return await self._load_page(url)
        if not filing.document:
            raise DocumentUnavailable(f"Invalid SEC URL format: {url}")
        if self._shared and (shared := await self._shared.get(url)) is not None:
            self.reads_by_source["shared"] += 1
            return shared
        text = await self._load_filing(url, filing)
        if self._shared:
            await self._shared.put(url, text)
        return text

    async def _load_filing(self, url: str, filing: FilingDocumentUrl) -> str:
        if self._cache and (cached := await self._cache.read_text(self._cache.text_file(filing))) is not None:
            self.reads_by_source["cache"] += 1
            return cached
        html, where = await self._read_dump(filing), "sec-corpus"
        if html is None:
            html, where = await self._source.read_archive(filing.archive_path), "source"
        if html is None:
            raise DocumentUnavailable(f"Failed to download filing from {url}. The SEC server may be temporarily unavailable.")
        text = await _to_text(html)
        if not text.strip():
            raise DocumentUnavailable("Filing content was empty after parsing.")
        self.reads_by_source[where] += 1
        if sum(self.reads_by_source.values()) == 1:
            log.info("first SEC filing read, from %s", where)
        if self._cache:
            await self._cache.write_text(self._cache.text_file(filing), text)
        return text

    async def _read_dump(self, url: FilingDocumentUrl) -> bytes | None:
        """The dump's layout convention (§F.5 b): only for a filing's own primary document whose metadata is known."""
        if self._dump is None:
            return None
        filing = self._directory.known_filing(url.cik, url.accession)
        if filing is None or filing.primary_document.lower() != url.document.lower() or not filing.report_date:
            return None
        path = (
            self._dump / filing.ticker / filing.form.replace("/", "_") / filing.report_date[:4]
            / filing.accession_number / "primary-document.html"
        ).resolve()
        if not path.is_relative_to(self._dump) or not path.is_file():
            return None
        return await asyncio.to_thread(path.read_bytes)

    async def _load_page(self, url: str) -> str:
        if self._fetch_page is None:
            raise DocumentUnavailable(f"Failed to fetch {url}. This server only fetches SEC filing documents.")
        html = await self._fetch_page(url)
        text = await _to_text(html)
        if not text.strip():
            raise DocumentUnavailable("HTML output was empty")
        return text


async def _to_text(html: bytes) -> str:
    try:
        return await asyncio.to_thread(html_to_text, html)
    except HtmlTextError as error:
        raise DocumentUnavailable(str(error)) from error
