"""Where EDGAR data comes from: one interface, a local mirror folder or live HTTP (contract §F.1, §F.2).

Both speak in sec.gov's own paths, so one mirror folder can be read directly or served over HTTP and read
through the live code path (that is how the live path is tested). Both accept only the paths of the EDGAR
layout (`urls.is_edgar_path`): a mirror folder holds other files too (MANIFEST.json, questions.json), and
a path built from data (a submissions page name) must not reach them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, Protocol

from finsec.edgar.files import read_inside
from finsec.edgar.urls import is_edgar_path
from finsec.metrics import NO_METRICS, Metrics

__all__ = [
    "DEFAULT_MAX_BYTES",
    "EdgarSource",
    "JSON_OFF_LOOP_BYTES",
    "json_or_none",
    "MirrorSource",
    "parse_json",
    "submissions_path",
    "TICKERS_PATH",
]

log = logging.getLogger(__name__)

TICKERS_PATH = "files/company_tickers.json"
DEFAULT_MAX_BYTES = 20_000_000  # the settings' fetch_max_bytes default
JSON_OFF_LOOP_BYTES = 64 * 1024  # parsing more than this on the event loop stalls every other request


def json_or_none(raw: str | bytes | None) -> Any | None:
    """EDGAR's JSON documents, where missing and unparseable both mean "no data"."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


async def parse_json(raw: str | bytes | None) -> Any | None:
    """`json_or_none`, in a worker thread when the payload is big (submissions JSON runs to megabytes)."""
    if raw is not None and len(raw) > JSON_OFF_LOOP_BYTES:
        return await asyncio.to_thread(json_or_none, raw)
    return json_or_none(raw)


def submissions_path(cik10: str) -> str:
    return f"submissions/CIK{cik10}.json"


class EdgarSource(Protocol):
    """Raw EDGAR reads; None means "no data" (missing, refused, or the source gave up after its retries)."""

    async def read_json(self, path: str) -> Any | None:
        """`files/company_tickers.json` or `submissions/<name>.json`."""

    async def read_archive(self, path: str) -> bytes | None:
        """`Archives/edgar/data/<cik>/<accession>/<document>`."""

    async def aclose(self) -> None: ...


class MirrorSource:
    """A folder in the sec.gov URL layout (`../shared/data/edgar-real` is one; so is the embedded corpus).

    Reads at most `max_bytes` per file. All file-system work runs in a worker thread: a resolve() or a
    read of a slow disk must not stall the event loop."""

    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, metrics: Metrics = NO_METRICS):
        self.root = Path(root).resolve()
        self.max_bytes = max_bytes
        self._metrics = metrics

    async def read_json(self, path: str) -> Any | None:
        return await parse_json(await self.read_archive(path))

    async def read_archive(self, path: str) -> bytes | None:
        if not is_edgar_path(path):
            self._metrics.sec_fetch("mirror", "refused")
            log.warning("mirror: refused %.200r, which is not a path of the EDGAR layout", path)
            return None
        body = await asyncio.to_thread(self._read, path)
        self._metrics.sec_fetch("mirror", 404 if body is None else 200)
        return body

    def _read(self, path: str) -> bytes | None:
        """In a worker thread. The file must resolve inside the mirror and inside its own folder (the
        accession folder for a document), so a symlink cannot hand out another issuer's filing or a file
        outside the mirror."""
        parts = path.split("/")
        folder = "/".join(parts[:5] if parts[0] == "Archives" else parts[:1])
        try:
            expected = (self.root / folder).resolve()
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop
            return None
        return read_inside(self.root / path, (expected, self.root), self.max_bytes)

    async def aclose(self) -> None:
        pass
