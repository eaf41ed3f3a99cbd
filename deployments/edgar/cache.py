"""The optional on-disk cache (contract §F.4): ticker registry, filing metadata per company, parsed filing text.

Off unless `use_cache` is set; then nothing is read or written, and no folder is created. Writes are atomic
(temp file + rename), so replicas sharing one `cache_dir` never see half a file.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .source import json_or_none
from .urls import FilingDocumentUrl

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class DiskCache:
    def __init__(self, root: Path):
        self.root = Path(root).expanduser().resolve()
        for folder in ("filings_metadata", "filings"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)

    @property
    def tickers_file(self) -> Path:
        return self.root / "tickers.json"

    def metadata_file(self, cik10: str) -> Path:
        return self.root / "filings_metadata" / f"{cik10}.json"

    def text_file(self, url: FilingDocumentUrl) -> Path:
        document = _UNSAFE.sub("_", url.document) if url.document else "index"
        return self.root / "filings" / url.cik / url.accession.replace("-", "") / f"{document}.txt"

    async def read_json(self, path: Path) -> Any | None:
        return json_or_none(await self.read_text(path))  # a corrupt cache file is a miss

    async def read_text(self, path: Path) -> str | None:
        try:
            return await asyncio.to_thread(path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def write_json(self, path: Path, value: Any) -> None:
        await self.write_text(path, json.dumps(value))

    async def write_text(self, path: Path, text: str) -> None:
        await asyncio.to_thread(_atomic_write, path, text)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
