"""A task set as a versioned artifact: `manifest.json` beside a build's files says what went in (each filing and the
digest of its text), which builder made it (a digest of its source), how many tasks of each kind each split holds,
and the digest of every file it wrote. A task file the manifest lists is checked against it when it is loaded
(finsec_client/tasks.py), so a file edited or mixed in after the build is refused, not played as the build's."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finsec.grading.identity import source_digest

__all__ = ["BUILDER_VERSION", "MANIFEST", "document_digest", "listed_digest", "write_manifest"]

MANIFEST = "manifest.json"
_PACKAGE = Path(__file__).parent
# What decides a build's tasks: the builder and the XBRL reader it checks facts with
BUILDER_VERSION = hashlib.blake2b(
    (source_digest(_PACKAGE) + source_digest(_PACKAGE.parent / "xbrl")).encode(), digest_size=8
).hexdigest()


def document_digest(document: str) -> str:
    return hashlib.sha256(document.encode("utf-8", "surrogatepass")).hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(
    out: Path, inputs: list[dict[str, Any]], tasks: dict[str, list[dict[str, Any]]], files: list[Path]
) -> dict:
    """Write `out/manifest.json`: the build's inputs, the builder's version, each split's tasks by kind and the
    digest of each written file (relative to `out`)."""
    manifest = {
        "builder": {"command": "finsec tasks build", "version": BUILDER_VERSION},
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "inputs": inputs,
        "counts": {split: dict(Counter(task["kind"] for task in rows)) for split, rows in tasks.items() if rows},
        "files": {str(path.relative_to(out)): _file_digest(path) for path in files},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def listed_digest(path: Path) -> tuple[Path, str, str] | None:
    """The manifest that lists this file (in its folder or the one above: `nemo-gym/train.jsonl`), the digest it
    records and the file's own; None when no manifest lists it."""
    path = Path(path).resolve()
    for folder in (path.parent, path.parent.parent):
        manifest = folder / MANIFEST
        if not manifest.is_file():
            continue
        try:
            files = json.loads(manifest.read_text()).get("files", {})
        except (OSError, ValueError, AttributeError):
            continue
        recorded = files.get(str(path.relative_to(folder))) if isinstance(files, dict) else None
        if isinstance(recorded, str):
            return manifest, recorded, _file_digest(path)
    return None
