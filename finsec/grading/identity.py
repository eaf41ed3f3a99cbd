"""Which grader graded a verify row, and which version of it: what a later re-grade (`finsec reverify`) compares
against (contract §A.3).

`GRADING_VERSION` is a digest of this package's source, taken once at import. It changes whenever any grading code
changes, with no constant for anyone to forget to bump, and it is the same digest the verdict cache's key holds
(deployments/services.py:grading_key), so rows of one version could share a kept verdict and rows of two could
not. An edit that changes no grade (a comment) changes it too: a re-grade reports the rewards that moved, and the
versions only as what they were."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["GRADING_VERSION", "digest_of", "grader_identity", "source_digest"]


def source_digest(package: Path) -> str:
    """A digest of every .py file under `package`, by relative path (the algorithm of session_store's
    code_version, which this layer may not import: the client re-grades without any server module)."""
    digest = hashlib.blake2b(digest_size=8)
    for file in sorted(package.rglob("*.py")):
        digest.update(str(file.relative_to(package)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


GRADING_VERSION = source_digest(Path(__file__).parent)


def digest_of(value: Any) -> str:
    """A short digest of a JSON value (a judge's template, its create-params), key order ignored."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def grader_identity(grader: Any) -> dict[str, Any]:
    """`grader.identity()`, or its class name and the package's version for a grader that does not say."""
    identity = getattr(grader, "identity", None)
    if callable(identity):
        return dict(identity())
    return {"name": type(grader).__name__, "version": GRADING_VERSION}
