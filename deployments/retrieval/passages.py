"""The embedded retrieval backend: answer with the passages of the named documents that best match the prompt.

A document is cut into line-aligned passages (a table row is one line, so it keeps its label) and indexed
once; the index is cached by the text's digest, so every session holding the same filing shares it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .bm25 import Bm25Index
from .tokenize import tokenize

PASSAGE_CHARS = 700


@dataclass(frozen=True)
class Passage:
    start: int
    end: int


class IndexedDocument:
    def __init__(self, text: str):
        self.text = text
        self.passages = cut_passages(text)
        self.index = Bm25Index([tokenize(text[p.start : p.end]) for p in self.passages])

    def best(self, query: list[str], limit: int) -> list[tuple[float, Passage]]:
        if not self.passages:
            return []
        scores = self.index.scores(query)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(float(scores[i]), self.passages[i]) for i in order if scores[i] > 0]


def cut_passages(text: str) -> list[Passage]:
    passages: list[Passage] = []
    start = 0
    position = 0
    for line in text.split("\n"):
        end = position + len(line)
        if end - start > PASSAGE_CHARS and position > start:
            passages.append(Passage(start, position - 1))
            start = position
        position = end + 1
    if position - 1 > start:
        passages.append(Passage(start, len(text)))
    return passages


class PassageRetriever:
    def __init__(self, top_passages: int = 8, cache_documents: int = 64):
        self.top_passages = top_passages
        self._cache: OrderedDict[str, IndexedDocument] = OrderedDict()
        self._cache_size = cache_documents

    def document(self, text: str) -> IndexedDocument:
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        indexed = self._cache.get(digest)
        if indexed is None:
            indexed = self._cache[digest] = IndexedDocument(text)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(digest)
        return indexed

    def answer(self, question: str, documents: dict[str, tuple[str, int]]) -> str:
        """documents: key -> (text, offset of that text in the stored document, when a range was applied)."""
        query = tokenize(question)
        hits: list[tuple[float, str, int, Passage, str]] = []
        for key, (text, offset) in documents.items():
            indexed = self.document(text)
            for score, passage in indexed.best(query, self.top_passages):
                hits.append((score, key, offset, passage, text))
        hits.sort(key=lambda hit: -hit[0])
        hits = hits[: self.top_passages]
        if not hits:
            return (
                "No passage of " + ", ".join(documents) + " matches the words of your prompt. "
                "Try other words, or read a part of the document with input_character_ranges."
            )
        out = [
            f"The {len(hits)} passages of {', '.join(documents)} that best match your prompt (BM25 search; "
            "most relevant first; character ranges refer to the stored document, for input_character_ranges):"
        ]
        for _, key, offset, passage, text in hits:
            out.append(f"\n[{key} characters {offset + passage.start}-{offset + passage.end}]\n"
                       f"{text[passage.start : passage.end]}")
        return "\n".join(out)
