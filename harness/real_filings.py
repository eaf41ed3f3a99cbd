"""Where the real filings of ../shared/data/edgar-real are; tests that need them skip when they are absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EDGAR_REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "edgar-real"

needs_real_filings = pytest.mark.skipif(
    not (EDGAR_REAL / "MANIFEST.json").is_file(), reason=f"real filings not found at {EDGAR_REAL}"
)


def manifest() -> list[dict]:
    return json.loads((EDGAR_REAL / "MANIFEST.json").read_text()) if EDGAR_REAL.is_dir() else []
