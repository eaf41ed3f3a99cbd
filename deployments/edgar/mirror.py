"""A folder laid out like sec.gov's URL space (`files/`, `submissions/`, `Archives/edgar/data/...`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from .urls import parse_filing_url


class MirrorMiss(LookupError):
    pass


class MirrorFolder:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()

    async def filing_document(self, url: str) -> bytes:
        parsed = parse_filing_url(url)
        if parsed is None or not parsed.document:
            raise MirrorMiss(f"Invalid SEC URL format: {url}")
        path = (self.root / parsed.archive_path).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            raise MirrorMiss(f"Failed to download filing from {url}. The SEC server may be temporarily unavailable.")
        return await asyncio.to_thread(path.read_bytes)
