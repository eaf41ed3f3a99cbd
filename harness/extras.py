"""Tests of an optional integration skip when its extra is not installed, naming the extra that brings it."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

__all__ = ["needs"]


def needs(extra: str, *modules: str) -> ModuleType:
    """Import `modules` (the first is returned), or skip: "needs the mcp extra: pip install -e '.[mcp]'"."""
    imported = []
    for name in modules:
        try:
            imported.append(importlib.import_module(name))
        except ImportError:
            pytest.skip(f"needs the {extra} extra ({name} is not installed): pip install -e '.[{extra}]'")
    return imported[0]
