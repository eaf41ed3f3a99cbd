"""Versions of code, for names and keys that must change when the code does (actor names, verdict keys)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

__all__ = ["code_version"]


def code_version(*modules: ModuleType) -> str:
    """A digest of the source of these modules (a package means every .py file in it)."""
    digest = hashlib.blake2b(digest_size=8)
    for module in modules:
        if module.__file__ is None:  # what Path(None) would raise, with the module named
            raise TypeError(f"module {module.__name__} has no source file")
        path = Path(module.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(str(file.relative_to(path.parent)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()
