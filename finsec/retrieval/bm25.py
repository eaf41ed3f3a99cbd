"""Okapi BM25 over a fixed set of passages, with an inverted index so a query touches only its terms' postings."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping

import numpy as np

__all__ = ["Bm25Index", "idf"]


def idf(size: int, document_frequency: int) -> float:
    return math.log(1.0 + (size - document_frequency + 0.5) / (document_frequency + 0.5))


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

    @property
    def nbytes(self) -> int:
        """Roughly what the index holds in memory: its arrays plus ~120 bytes of dict and tuple per term."""
        arrays = sum(ids.nbytes + tf.nbytes for ids, tf in self._postings.values())
        return arrays + self._norm.nbytes + 120 * len(self._postings)

    def document_frequency(self, term: str) -> int:
        posting = self._postings.get(term)
        return 0 if posting is None else len(posting[0])

    def scores(self, query: Mapping[str, float] | list[str], idfs: Mapping[str, float] | None = None) -> np.ndarray:
        """BM25 of every passage. `query` is a token list or token -> weight; `idfs` overrides this index's own
        term statistics (several documents scored on one scale)."""
        weights = query if isinstance(query, Mapping) else Counter(query)
        scores = np.zeros(self.size)
        for term, weight in weights.items():
            posting = self._postings.get(term)
            if posting is None or weight <= 0:
                continue
            ids, tf = posting
            term_idf = idfs[term] if idfs is not None else idf(self.size, len(ids))
            scores[ids] += weight * term_idf * tf * (self._k1 + 1.0) / (tf + self._norm[ids])
        return scores
