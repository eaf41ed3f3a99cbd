"""Versions of code, for names and keys that must change when the code does (actor names, verdict keys)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType


def code_version(*modules: ModuleType) -> str:
    """A digest of the source of these modules (a package means every .py file in it)."""
    digest = hashlib.blake2b(digest_size=8)
    for module in modules:
        path = Path(module.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(str(file.relative_to(path.parent)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()
