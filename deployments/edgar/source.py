"""Where EDGAR data comes from: one interface, a local mirror folder or live HTTP (contract §F.1, §F.2).

Both speak in sec.gov's own paths, so one mirror folder can be read directly or served over HTTP and read
through the live code path (that is how the live path is tested).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Protocol

TICKERS_PATH = "files/company_tickers.json"


def json_or_none(raw: str | bytes | None) -> Any | None:
    """EDGAR's JSON documents, where missing and unparseable both mean "no data"."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def submissions_path(cik10: str) -> str:
    return f"submissions/CIK{cik10}.json"


class EdgarSource(Protocol):
    """Raw EDGAR reads; None means "no data" (missing, or the source gave up after its retries)."""

    async def read_json(self, path: str) -> Any | None:
        """`files/company_tickers.json` or `submissions/<name>.json`."""

    async def read_archive(self, path: str) -> bytes | None:
        """`Archives/edgar/data/<cik>/<accession>/<document>`."""

    async def aclose(self) -> None: ...


class MirrorSource:
    """A folder in the sec.gov URL layout (`../shared/data/edgar-real` is one; so is the embedded corpus)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()

    def _file(self, path: str) -> Path | None:
        target = (self.root / path).resolve()
        return target if target.is_relative_to(self.root) and target.is_file() else None

    async def read_json(self, path: str) -> Any | None:
        return json_or_none(await self.read_archive(path))

    async def read_archive(self, path: str) -> bytes | None:
        target = self._file(path)
        return None if target is None else await asyncio.to_thread(target.read_bytes)

    async def aclose(self) -> None:
        pass
