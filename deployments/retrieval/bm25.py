"""Okapi BM25 over a fixed set of passages, with an inverted index so a query touches only its terms' postings."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np


class Bm25Index:
    def __init__(self, passages: list[list[str]], k1: float = 1.5, b: float = 0.75):
        self.size = len(passages)
        lengths = np.array([len(p) for p in passages], dtype=np.float64)
        average = float(lengths.mean()) if self.size and lengths.sum() else 1.0
        self._norm = k1 * (1.0 - b + b * lengths / average)
        self._k1 = k1
        ids: dict[str, list[int]] = defaultdict(list)
        counts: dict[str, list[int]] = defaultdict(list)
        for i, tokens in enumerate(passages):
            for term, count in Counter(tokens).items():
                ids[term].append(i)
                counts[term].append(count)
        self._postings = {
            term: (np.array(ids[term], dtype=np.int64), np.array(counts[term], dtype=np.float64)) for term in ids
        }
        self._idf = {
            term: math.log(1.0 + (self.size - len(p) + 0.5) / (len(p) + 0.5)) for term, p in ids.items()
        }

    def scores(self, query: list[str]) -> np.ndarray:
        scores = np.zeros(self.size)
        for term, weight in Counter(query).items():
            posting = self._postings.get(term)
            if posting is None:
                continue
            ids, tf = posting
            scores[ids] += weight * self._idf[term] * tf * (self._k1 + 1.0) / (tf + self._norm[ids])
        return scores
