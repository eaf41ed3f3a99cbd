"""Reading a file of a folder we do not control (a mirror, the dump): inside its folders, under a byte cap, and
every failure a miss, never an exception (contract §F.5: a source that cannot answer leaves the next one to)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["read_inside"]

log = logging.getLogger(__name__)


def read_inside(path: Path, within: tuple[Path, ...], max_bytes: int) -> bytes | None:
    """In a worker thread. The bytes of `path`, or None when it does not resolve to a regular file inside every
    folder of `within` (resolved), cannot be read, or is over `max_bytes` (the last two logged)."""
    try:
        target = path.resolve()
        if not all(target.is_relative_to(folder) for folder in within) or not target.is_file():
            return None
        with open(target, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            body = file.read(max_bytes + 1) if size <= max_bytes else b""
    except (OSError, RuntimeError, ValueError) as error:  # RuntimeError: a symlink loop; ValueError: a NUL
        log.warning("cannot read %s (%s); treating it as missing", path, error)
        return None
    if size > max_bytes or len(body) > max_bytes:  # len: a file that grew while it was read
        log.warning("%s is over the %d-byte limit; not read", path, max_bytes)
        return None
    return body
