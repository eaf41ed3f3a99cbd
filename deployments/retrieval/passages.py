"""The embedded retrieval backend: answer with the passages of the named documents that best match the prompt.

- Passages are line-aligned (~700 characters), so a table row keeps its label. A value row is never cut from
  the caption line under it (cover pages put "(I.R.S. Employer Identification No.)" below the number).
- Each passage is indexed with its context: the last heading and the last table-header row before it, so
  "Total assets | 122,070" is found by "total assets December 31, 2024" even when the column dates are in
  an earlier passage. The reply shows that context too.
- The question's own words are weighed: question boilerplate counts for nothing, dates and period words count
  for little, so they do not drown the content words ("net income", "operating activities").
- With several documents, every document is scored with term statistics over all of them, so a company name
  that appears in only one filing steers to that filing.
- The reply fills a character budget, best passage first.
Indexes are built once per document text; the replica caches them by the text's digest, so one index serves
every session that stores the same filing. A character range restricts the passages, not the index.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from .bm25 import Bm25Index, idf
from .tokenize import normalize, stem, tokenize

PASSAGE_CHARS = 700
HEAD_CHARS = 4_000
COVER_WEIGHT = 2.0

# Words of the question's form, not its content.
_QUESTION_WORDS = frozenset(stem(w) for w in """according amount company corporation did disclose disclosed does
    figure figures filing find give how inc many much number provide provided reported report state stated tell
    value what which""".split())
# Period words: they select a column, rarely the passage (weight is cut, not removed).
_PERIOD_WORDS = frozenset(stem(w) for w in """annual calendar date day days end ended ending first fiscal fourth
    half month months nine period quarter quarterly second six third three twelve year years january february
    march april may june july august september october november december""".split())
_EXPANSIONS = {
    "eps": "earnings per share diluted",
    "capex": "capital expenditures purchases property equipment",
    "fcf": "free cash flow",
    "opex": "operating expenses",
    "headcount": "employees",
    "workforce": "employees",
    "yoy": "year over year",
}
_TABLE_HEADER_CELL = re.compile(
    r"^(?:(?:19|20)\d\d|q[1-4]|fiscal|year|years|three|six|nine|twelve|months?|ended|as of|\W|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|\d{1,2},?|\s)+$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Passage:
    start: int
    end: int
    context: str = ""  # the heading and table header in force where the passage starts


def query_weights(question: str) -> dict[str, float]:
    words = normalize(question).split()
    expanded = " ".join([question, *(_EXPANSIONS[w.strip("?.,;:")] for w in words if w.strip("?.,;:") in _EXPANSIONS)])
    weights: dict[str, float] = {}
    for token in tokenize(expanded):
        if token in _QUESTION_WORDS:
            continue
        weight = 0.25 if token in _PERIOD_WORDS or re.fullmatch(r"(?:19|20)\d\d|fy\d+|q[1-4]|\d{1,2}", token) else 1.0
        weights[token] = weights.get(token, 0.0) + weight
    return weights


def _is_heading(line: str) -> bool:
    return 3 < len(line) < 90 and "|" not in line and not line.endswith((".", ";", ",")) and any(
        c.isalpha() for c in line)


def _is_table_header(line: str) -> bool:
    cells = [c.strip() for c in line.split("|") if c.strip()]
    return bool(cells) and all(_TABLE_HEADER_CELL.match(c) for c in cells) and any(ch.isdigit() for ch in line)


def cut_passages(text: str) -> list[Passage]:
    passages: list[Passage] = []
    start = position = 0
    heading = header = context = ""
    for line in text.split("\n"):
        full = position + len(line) - start > PASSAGE_CHARS
        if full and position > start and not line.startswith("("):  # a caption stays with the row above it
            passages.append(Passage(start, position - 1, context))
            # Context only for a passage that starts inside a table: its rows need the statement and columns.
            start, context = position, " / ".join(c for c in (heading, header) if c) if header else ""
        if "|" in line:
            if _is_table_header(line):
                header = line
        elif line.endswith(",") and len(line) < 60:  # "Year Ended December 31," above a table's years
            header = line
        elif not line.startswith("(") and _is_heading(line):
            heading, header = line, ""
        position += len(line) + 1
    if start < len(text):
        passages.append(Passage(start, len(text), context))
    return [p for p in passages if text[p.start : p.end].strip()]


class IndexedDocument:
    def __init__(self, text: str):
        self.text = text
        self.head_terms = frozenset(tokenize(text[:HEAD_CHARS]))  # the cover page: company, form, period
        self.passages = cut_passages(text)
        self.index = Bm25Index([tokenize(p.context + "\n" + text[p.start : p.end]) for p in self.passages])
        self._starts = np.array([p.start for p in self.passages], dtype=np.int64)
        self._ends = np.array([p.end for p in self.passages], dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Roughly what the indexed document holds: its text, the BM25 index and ~100 bytes per passage."""
        return sys.getsizeof(self.text) + self.index.nbytes + 100 * len(self.passages) + 64 * len(self.head_terms)

    def best(self, query, limit: int, idfs=None, bounds: tuple[int, int] | None = None) -> list[tuple[float, Passage]]:
        """The top passages by BM25; with `bounds`, only passages overlapping that range, clipped to it."""
        if not self.passages:
            return []
        scores = self.index.scores(query, idfs)
        if bounds is not None and bounds != (0, len(self.text)):
            start, end = bounds
            scores = np.where((self._starts < end) & (self._ends > start), scores, 0.0)
        order = np.argsort(-scores, kind="stable")[:limit]
        hits = [(float(scores[i]), self.passages[i]) for i in order if scores[i] > 0]
        if bounds is None:
            return hits
        return [(s, Passage(max(p.start, bounds[0]), min(p.end, bounds[1]), p.context)) for s, p in hits]


def _cover_match(doc: IndexedDocument, weights: dict[str, float], idfs: dict[str, float] | None) -> float:
    """With several documents: how much of the question (by weight and rarity) the document's cover page names,
    so "Apple's operating cash flow" prefers Apple's filing to another company's cash-flow statement."""
    if idfs is None:
        return 1.0
    total = sum(w * idfs[t] for t, w in weights.items()) or 1.0
    named = sum(w * idfs[t] for t, w in weights.items() if t in doc.head_terms)
    return 1.0 + COVER_WEIGHT * named / total


@dataclass(frozen=True)
class Excerpt:
    """A stored document as one retrieve_information call sees it: its index (built once per text, cached by
    digest in the replica) and the character range `input_character_ranges` asked for (§E.1 step 6)."""

    document: IndexedDocument
    start: int = 0
    end: int | None = None

    def bounds(self) -> tuple[int, int]:
        start, end, _ = slice(self.start, self.end).indices(len(self.document.text))
        return start, max(start, end)


def excerpt(text: str, start: int = 0, end: int | None = None) -> Excerpt:
    """An excerpt of a text indexed on the spot (tests and benchmarks; the server reuses cached indexes)."""
    return Excerpt(IndexedDocument(text), start, end)


class PassageRetriever:
    def __init__(self, top_passages: int = 24, reply_chars: int = 7_600):
        self.top_passages = top_passages
        self.reply_chars = reply_chars

    def answer(self, question: str, documents: dict[str, Excerpt]) -> str:
        """The best passages of the named documents, within each excerpt's range, filling the reply budget."""
        weights = query_weights(question)
        idfs = None
        if len(documents) > 1:  # one scale for all documents
            size = sum(e.document.index.size for e in documents.values())
            idfs = {t: idf(size, sum(e.document.index.document_frequency(t) for e in documents.values()))
                    for t in weights}
        hits = [
            (score * _cover_match(e.document, weights, idfs), key, passage, e.document)
            for key, e in documents.items()
            for score, passage in e.document.best(weights, self.top_passages, idfs, e.bounds())
        ]
        hits.sort(key=lambda hit: -hit[0])
        if not hits:
            return (
                "No passage of " + ", ".join(documents) + " matches the words of your prompt. "
                "Try other words, or read a part of the document with input_character_ranges."
            )
        blocks, used = [], 0
        for _, key, passage, doc in hits[: self.top_passages]:
            context = f"({passage.context})\n" if passage.context else ""
            block = (f"\n[{key} characters {passage.start}-{passage.end}]\n{context}"
                     f"{doc.text[passage.start : passage.end]}")
            if blocks and used + len(block) > self.reply_chars:
                break
            blocks.append(block)
            used += len(block)
        head = (f"The {len(blocks)} passages of {', '.join(documents)} that best match your prompt (BM25 search; "
                "most relevant first; a passage's context line in parentheses says where it sits; character "
                "ranges refer to the stored document, for input_character_ranges):")
        return head + "\n" + "\n".join(blocks)
