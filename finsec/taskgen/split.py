"""Train, validation and test by company: every task of a company falls in one split, so evaluation never sees a
company trained on. A company's split is a digest of its CIK, so it stays put as the corpus grows; companies
named as held out go to test whatever their digest says."""

from __future__ import annotations

import hashlib
from collections.abc import Collection

__all__ = ["SPLITS", "split_of"]

SPLITS = ("train", "validation", "test")


def split_of(
    cik: str, ticker: str, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1), held_out: Collection[str] = ()
) -> str:
    if ticker.upper() in {name.upper() for name in held_out}:
        return "test"
    point = int.from_bytes(hashlib.sha256(f"finsec-split:{int(cik)}".encode()).digest()[:8], "big") / 2**64
    total = sum(fractions)
    bound = 0.0
    for name, fraction in zip(SPLITS, fractions, strict=False):
        bound += fraction / total
        if point < bound:
            return name
    return SPLITS[-1]
