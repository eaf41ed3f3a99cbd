"""The optional on-disk cache (contract §F.4): ticker registry, filing metadata per company, parsed filing text.

Used only when `use_cache` is set: otherwise no DiskCache is built, so nothing is read or written and no
folder is created. Building one creates its folders (`filings_metadata/`, `filings/`) under the root. Writes
are atomic (temp file + rename), so replicas sharing one `cache_dir` never see half a file. File names are
made of safe characters and bounded in length, whatever the URL or the data they come from.

The cache only saves work, so it never fails a request, nor the start: a file that cannot be read is a miss
(logged unless it is simply absent), a write that fails is logged and skipped (a full disk, a read-only
file system), and folders that cannot be made leave a cache that always misses. A filing text is sealed with
its length and digest, so a file cut short (a crash before its data reached the disk, a copy that stopped) is
a miss too; the JSON files need no seal, as JSON cut short does not parse.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from finsec.edgar.source import parse_json
from finsec.edgar.urls import FilingDocumentUrl

__all__ = ["DiskCache", "MAX_NAME_CHARS", "safe_name"]

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME_CHARS = 150  # well under the 255-byte file-name limit, leaving room for the suffix and temp prefix
_DIGEST_CHARS = 16
_SEAL = b"finsec-text-v1"  # the first line of a text file: `<seal> <body bytes> <body digest>`


def safe_name(text: str) -> str:
    """`text` as one file name: §F.4's mapping (every character outside [A-Za-z0-9._-] becomes '_'), never
    hidden or '.'/'..', and when that is lossy beyond MAX_NAME_CHARS, a prefix plus a digest of `text`."""
    name = _UNSAFE.sub("_", text)
    if not name or name.startswith("."):
        name = "_" + name
    if len(name) > MAX_NAME_CHARS:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
        name = f"{name[: MAX_NAME_CHARS - _DIGEST_CHARS - 1]}-{digest}"
    return name


class DiskCache:
    def __init__(self, root: Path):
        self.root = Path(root).expanduser().resolve()
        self._writes_failing = False
        try:
            for folder in ("filings_metadata", "filings"):
                (self.root / folder).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            log.warning(
                "disk cache %s: cannot create its folders (%s); nothing is cached until they can be", self.root, error
            )

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
        return await parse_json(await self._read(path))  # a corrupt or truncated JSON file does not parse: a miss

    async def read_text(self, path: Path) -> str | None:
        raw = await self._read(path)
        text = None if raw is None else await asyncio.to_thread(_unsealed, raw)  # megabytes to digest: off the loop
        if raw is not None and text is None:
            log.warning(
                "disk cache: %s is truncated, corrupt or not sealed (an older version's); fetching instead", path
            )
        return text

    async def write_json(self, path: Path, value: Any) -> None:
        await self._write(path, lambda: json.dumps(value).encode())  # megabytes of metadata: off the loop

    async def write_text(self, path: Path, text: str) -> None:
        await self._write(path, lambda: _sealed(text))

    async def _read(self, path: Path) -> bytes | None:
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            return None
        except OSError as error:
            log.warning("disk cache: cannot read %s (%s); fetching instead", path, error)
            return None

    async def _write(self, path: Path, encoded: Callable[[], bytes]) -> None:
        """Write in a worker thread; a failure is logged when writes start failing (then at debug level, so a
        full disk does not log every request) and when they work again."""
        try:
            await asyncio.to_thread(lambda: _atomic_write(path, encoded()))
        except OSError as error:
            log.log(
                logging.DEBUG if self._writes_failing else logging.WARNING,
                "disk cache: cannot write %s (%s); serving the result uncached",
                path,
                error,
            )
            self._writes_failing = True
            return
        if self._writes_failing:
            log.info("disk cache: writes to %s work again", self.root)
            self._writes_failing = False


def _sealed(text: str) -> bytes:
    body = text.encode("utf-8", "surrogatepass")
    return b"%s %d %s\n" % (_SEAL, len(body), _body_digest(body).encode()) + body


def _unsealed(raw: bytes) -> str | None:
    """The text of a sealed file; None when the seal is missing or does not match what follows it."""
    seal, newline, body = raw.partition(b"\n")
    if not newline or seal != b"%s %d %s" % (_SEAL, len(body), _body_digest(body).encode()):
        return None
    try:
        return body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def _body_digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    """The one place the cache writes a file (and so where a test injects a full disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
