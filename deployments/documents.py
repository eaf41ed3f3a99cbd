"""Filing text for parse_html_page: fetch a document and reduce it to text, once per URL per replica."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from .edgar.mirror import MirrorFolder, MirrorMiss
from .edgar.urls import parse_filing_url
from .text.html_to_text import HtmlTextError, html_to_text


class FetchFailed(Exception):
    """A tool-level failure: its text is the tool's result (contract §A.8 step 6)."""


class FilingTexts:
    def __init__(self, mirror: MirrorFolder, cache_documents: int = 32):
        self._mirror = mirror
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cache_documents

    async def text(self, url: str) -> str:
        cached = self._cache.get(url)
        if cached is not None:
            self._cache.move_to_end(url)
            return cached
        if parse_filing_url(url) is None:
            raise FetchFailed(f"Failed to fetch {url}. This server only fetches SEC filing documents.")
        try:
            html = await self._mirror.filing_document(url)
            text = await asyncio.to_thread(html_to_text, html)
        except (MirrorMiss, HtmlTextError) as error:
            raise FetchFailed(str(error)) from error
        if not text.strip():
            raise FetchFailed("Filing content was empty after parsing.")
        self._cache[url] = text
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return text
