"""The optional on-disk cache (contract §F.4): ticker registry, filing metadata per company, parsed filing text.

Used only when `use_cache` is set: otherwise no DiskCache is built, so nothing is read or written and no
folder is created. Building one creates its folders (`filings_metadata/`, `filings/`) under the root. Writes
are atomic (temp file + rename), so replicas sharing one `cache_dir` never see half a file. File names are
made of safe characters and bounded in length, whatever the URL or the data they come from.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .source import parse_json
from .urls import FilingDocumentUrl

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME_CHARS = 150  # well under the 255-byte file-name limit, leaving room for the suffix and temp prefix
_DIGEST_CHARS = 16


def safe_name(text: str) -> str:
    """`text` as one file name: §F.4's mapping (every character outside [A-Za-z0-9._-] becomes '_'), never
    hidden or '.'/'..', and when that is lossy beyond MAX_NAME_CHARS, a prefix plus a digest of `text`."""
    name = _UNSAFE.sub("_", text)
    if not name or name.startswith("."):
        name = "_" + name
    if len(name) > MAX_NAME_CHARS:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
        name = f"{name[:MAX_NAME_CHARS - _DIGEST_CHARS - 1]}-{digest}"
    return name


class DiskCache:
    def __init__(self, root: Path):
        self.root = Path(root).expanduser().resolve()
        for folder in ("filings_metadata", "filings"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)

    @property
    def tickers_file(self) -> Path:
        return self.root / "tickers.json"

    def metadata_file(self, cik10: str) -> Path:
        return self.root / "filings_metadata" / f"{safe_name(cik10)}.json"

    def text_file(self, url: FilingDocumentUrl) -> Path:
        document = safe_name(url.document) if url.document else "index"
        accession = safe_name(url.accession.replace("-", ""))
        return self.root / "filings" / safe_name(url.cik) / accession / f"{document}.txt"

    async def read_json(self, path: Path) -> Any | None:
        return await parse_json(await self.read_text(path))  # a corrupt cache file is a miss

    async def read_text(self, path: Path) -> str | None:
        try:
            return await asyncio.to_thread(path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def write_json(self, path: Path, value: Any) -> None:
        await asyncio.to_thread(lambda: _atomic_write(path, json.dumps(value)))  # megabytes of metadata: off the loop

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
