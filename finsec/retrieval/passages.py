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
- Table rows are indexed on their own too, each with its table's context: the statement heading, the group label
  above it ("Greater China:"), the unit ("in millions") and the column header (the periods). A row is a cheap,
  exact answer to "inventories as of September 28, 2024"; the reply shows it with that context line.
- A question can have several parts (`question_parts`): a list of line items, segments or periods ("Products and
  Services", "North America, International and AWS") or a ratio that needs two figures ("operating margin" needs
  operating income and revenues). Each part is searched on its own words, with the rest of the question as
  context at a lower weight.
- A figure the filing states in other words than the question uses is matched by concept too (concepts.py): a
  headcount question searches for the tag of passages that state a number of employees, and a question for the
  top line ("revenue") also searches for its other names ("total net sales").
- The reply fills a character budget shared fairly among the parts: the part that has used the fewest characters
  adds its next best row or passage, so one part cannot crowd out another. A single-part question gets its best
  rows and passages, best first.
Indexes (passages and rows) are built once per document text; the replica caches them by the text's digest, so one
index serves every session that stores the same filing. A character range restricts the passages, not the index.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from finsec.retrieval import concepts
from finsec.retrieval.bm25 import Bm25Index, idf
from finsec.retrieval.tokenize import normalize, stem, tokenize

__all__ = [
    "CONTEXT_WEIGHT",
    "COVER_WEIGHT",
    "cut_passages",
    "Excerpt",
    "excerpt",
    "HEAD_CHARS",
    "IndexedDocument",
    "LINE_CHARS",
    "MAX_PARTS",
    "MAX_QUERY_TERMS",
    "Passage",
    "PASSAGE_CHARS",
    "PassageRetriever",
    "query_weights",
    "question_parts",
    "ROW_CHARS",
    "ROW_SHARE",
    "ROWS_PER_PART",
    "table_rows",
]

PASSAGE_CHARS = 700
LINE_CHARS = 6_000  # a longer line is cut into pieces (a filing's paragraphs are shorter)
ROW_CHARS = 400  # a longer "row" is prose with a pipe in it, not a table row
HEAD_CHARS = 4_000
COVER_WEIGHT = 2.0
CONTEXT_WEIGHT = 0.35  # the rest of the question, in each part's query
ROWS_PER_PART = 3
ROW_SHARE = 0.5  # a row is offered when it scores at least this share of the part's best row
MAX_PARTS = 6
MAX_QUERY_TERMS = 256

# Words of the question's form, not its content.
_QUESTION_WORDS = frozenset(
    stem(w)
    for w in """according amount company corporation did disclose disclosed does
    figure figures filing find give how inc many much number provide provided reported report state stated tell
    value what which""".split()
)
# Period words: they select a column, rarely the passage (weight is cut, not removed).
_PERIOD_WORDS = frozenset(
    stem(w)
    for w in """annual calendar date day days end ended ending first fiscal fourth
    half month months nine period quarter quarterly second six third three twelve year years january february
    march april may june july august september october november december""".split()
)
_EXPANSIONS = {
    "eps": "earnings per share diluted",
    "capex": "capital expenditures purchases property equipment",
    "fcf": "free cash flow",
    "opex": "operating expenses",
    "headcount": "employees",
    "workforce": "employees",
    "yoy": "year over year",
}
# A header cell or line is made of these words only. Possessive, longest word first: with backtracking, a line of
# years that fails at its end ("2020 2021 ... 2027 Total") tried every way to split each year, 2^n of them.
_TABLE_HEADER_CELL = re.compile(
    r"^(?:(?:19|20)\d\d|q[1-4]|fiscal|years|year|three|six|nine|twelve|months?|ended|as of|change|\W|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|\d{1,2},?|\s)++$",
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
    return _add(weights, concepts.question_terms(question, weights))


# Ratios and derived figures: the stated figures an analyst computes them from (each becomes a part).
_COMPONENTS = {
    "operating margin": ("operating income income from operations", "total revenues net sales"),
    "operating income margin": ("operating income income from operations", "total revenues net sales"),
    "net margin": ("net income", "total revenues net sales"),
    "profit margin": ("net income", "total revenues net sales"),
    "effective tax rate": (
        "provision for income taxes income tax expense",
        "income before provision for income taxes income before income taxes",
    ),
    "tax rate": ("provision for income taxes income tax expense", "income before income taxes"),
    "current ratio": ("total current assets", "total current liabilities"),
    "quick ratio": ("cash and cash equivalents marketable securities accounts receivable", "total current liabilities"),
    "debt to equity": ("long-term debt", "total stockholders equity"),
    "debt-to-equity": ("long-term debt", "total stockholders equity"),
    "return on equity": ("net income", "total stockholders equity"),
    "return on assets": ("net income", "total assets"),
    "free cash flow": ("net cash provided by operating activities", "purchases of property and equipment"),
    "asset turnover": ("total revenues net sales", "total assets"),
}
_COORDINATION = re.compile(
    r",|;|:|\band\b|\bversus\b|\bvs\b\.?|\bcompared (?:with|to)\b|\bas well as\b|\bplus\b"
    r"|\bagainst\b",
    re.IGNORECASE,
)
# "as of September 28, 2024", "at December 31": a balance at a date, so the balance sheet's row.
_AT_A_DATE = re.compile(
    r"\b(?:as of|at|on)\s+(?:the end of\s+)?(?:january|february|march|april|may|june|july|"
    r"august|september|october|november|december|fiscal|year|quarter)",
    re.IGNORECASE,
)
_BALANCE_WORDS = "balance sheets"


def _is_period_word(token: str) -> bool:
    return token in _PERIOD_WORDS or re.fullmatch(r"(?:19|20)\d\d|fy\d+|q[1-4]|\d{1,2}", token) is not None


def question_parts(question: str) -> list[dict[str, float]]:
    """The question's parts, each a query (token -> weight); one part when nothing is listed or derived.

    - A list of items ("Products and Services", "North America, International and AWS") gives one part per item
      that has words of its own (a chunk of only periods, "fiscal 2023", is a column of the same rows, not a part).
    - A derived figure ("operating margin") adds one part per stated figure it is computed from.
    Every part also carries the whole question at `CONTEXT_WEIGHT`, so "International" is still Amazon's 2024
    operating income. The whole question is a part of its own when items are derived.
    """
    whole = query_weights(question)
    context = {t: w * CONTEXT_WEIGHT for t, w in whole.items()}

    def part(words: str) -> dict[str, float]:
        return _add(query_weights(words), context)

    lowered = normalize(question)
    matched = [concept for concept in _COMPONENTS if concept in lowered]
    concepts = [c for c in matched if not any(c != other and c in other for other in matched)]  # longest
    if concepts:  # the subject ("Google Cloud's") counts in full: it selects the rows of the figures
        subject = query_weights(re.sub("|".join(map(re.escape, concepts)), " ", lowered))
        derived = dict.fromkeys(c for concept in concepts for c in _COMPONENTS[concept])
        return [whole] + [_add(query_weights(c), subject) for c in derived][: MAX_PARTS - 1]
    chunks = [c for c in _COORDINATION.split(question) if c.strip()]
    items = [c for c in chunks if any(not _is_period_word(t) for t in query_weights(c))]
    if len(items) < 2:
        return [whole]
    return [part(c) for c in items[:MAX_PARTS]]


def _add(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {t: a.get(t, 0.0) + b.get(t, 0.0) for t in {*a, *b}}


def _at_a_date(question: str, weights: dict[str, float]) -> dict[str, float]:
    """A balance asked at a date also looks for the balance sheet (at a low weight: the item's words decide)."""
    if not _AT_A_DATE.search(question):
        return weights
    return _add(weights, {t: 0.5 for t in tokenize(_BALANCE_WORDS)})


def _is_heading(line: str) -> bool:
    return (
        3 < len(line) < 90
        and "|" not in line
        and not line.endswith((".", ";", ","))
        and _LETTER.search(line) is not None
    )


_LETTER = re.compile(r"[^\W\d_]")


def _is_table_header(line: str) -> bool:
    cells = [c.strip() for c in line.split("|") if c.strip()]
    return bool(cells) and all(_TABLE_HEADER_CELL.match(c) for c in cells) and any(ch.isdigit() for ch in line)


def _pieces(text: str):
    """Each line, and the newline after it (1, or 0 when a line over LINE_CHARS goes on in the next piece): such
    a line is cut after its last space within LINE_CHARS, so no passage is a whole page of one line (its reply
    would be the page, and tokenizing it one long call that holds the GIL)."""
    for line in text.split("\n"):
        at = 0
        while len(line) - at > LINE_CHARS:
            cut = line.rfind(" ", at, at + LINE_CHARS) + 1
            cut = cut if cut > at else at + LINE_CHARS
            yield line[at:cut], 0
            at = cut
        yield line[at:], 1


def cut_passages(text: str) -> list[Passage]:
    passages: list[Passage] = []
    start = position = ended = 0  # `ended`: where the previous piece ended, its newline not included
    heading = header = context = ""
    for line, newline in _pieces(text):
        full = position + len(line) - start > PASSAGE_CHARS
        if full and position > start and not line.startswith("("):  # a caption stays with the row above it
            passages.append(Passage(start, ended, context))
            # Context only for a passage that starts inside a table: its rows need the statement and columns.
            start, context = position, " / ".join(c for c in (heading, header) if c) if header else ""
        if "|" in line:
            if _is_table_header(line):
                header = line
        elif line.endswith(",") and len(line) < 60:  # "Year Ended December 31," above a table's years
            header = line
        elif not line.startswith("(") and _is_heading(line):
            heading, header = line, ""
        ended = position + len(line)
        position = ended + newline
    if start < len(text):
        passages.append(Passage(start, len(text), context))
    return [p for p in passages if text[p.start : p.end].strip()]


_UNIT = re.compile(r"\b(?:dollars |amounts |shares )?in (?:millions|thousands|billions)\b[^)\n]{0,60}", re.IGNORECASE)


_FIGURE_CELL = re.compile(r"^\s*[$€£(-]*\s*\d[\d,.]*\s*[)%]*\s*(?:pts?)?\s*$")


def table_rows(text: str) -> list[Passage]:
    """Every table row with a figure, each with its context: heading / group label / unit / column header."""
    rows: list[Passage] = []
    position = 0
    heading = group = unit = ""
    header: list[str] = []
    previous_was_header = False
    for line in text.split("\n"):
        end = position + len(line)
        is_header = False
        if "|" in line:
            first = line.split("|", 1)[0].strip()
            if all(_TABLE_HEADER_CELL.match(c) for c in line.split("|") if c.strip()):  # periods, no figures
                header = (header if previous_was_header else [])[-1:] + [line]
                is_header = True
            elif (
                first
                and any(c.isalpha() for c in first)
                and len(line) <= ROW_CHARS
                and any(_FIGURE_CELL.match(c) for c in line.split("|")[1:])
            ):
                context = " / ".join(c for c in (heading, group, unit, " / ".join(header)) if c)
                rows.append(Passage(position, end, context))
        else:
            found = _UNIT.search(line)
            if found:
                unit = found.group().strip()
            if line.endswith(":"):
                group = line if len(line) < 60 else group  # a long one is the sentence introducing a table
            elif (line.endswith(",") and len(line) < 60) or _TABLE_HEADER_CELL.match(line):
                header = [line]  # "Year Ended December 31,", "Years ended": the top of a column header
                is_header = True
            elif not line.startswith("(") and _is_heading(line):
                heading, group, header = line, "", []
                unit = found.group().strip() if found else ""
        previous_was_header = is_header
        position = end + 1
    return rows


class _Units:
    """One kind of retrievable unit (passages, or table rows) of a document, with its BM25 index."""

    def __init__(self, text: str, units: list[Passage]):
        self.units = units
        self.index = Bm25Index(
            [
                tokenize(u.context + "\n" + text[u.start : u.end]) + concepts.document_tags(text[u.start : u.end])
                for u in units
            ]
        )
        self._starts = np.array([u.start for u in units], dtype=np.int64)
        self._ends = np.array([u.end for u in units], dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + 100 * len(self.units) + self._starts.nbytes + self._ends.nbytes

    def best(
        self,
        query,
        limit: int,
        idfs=None,
        bounds: tuple[int, int] | None = None,
        full: int = 0,
        scores: np.ndarray | None = None,
    ) -> list[tuple[float, Passage]]:
        """`scores`: this query's scores of these units, when the caller already has them (a text under many keys)."""
        if not self.units:
            return []
        scores = self.index.scores(query, idfs) if scores is None else scores
        if bounds is not None and bounds != (0, full):
            start, end = bounds
            scores = np.where((self._starts < end) & (self._ends > start), scores, 0.0)
        order = np.argsort(-scores, kind="stable")[:limit]
        hits = [(float(scores[i]), self.units[i]) for i in order if scores[i] > 0]
        if bounds is None:
            return hits
        return [(s, Passage(max(p.start, bounds[0]), min(p.end, bounds[1]), p.context)) for s, p in hits]


class IndexedDocument:
    def __init__(self, text: str):
        self.text = text
        self.head_terms = frozenset(tokenize(text[:HEAD_CHARS]))  # the cover page: company, form, period
        self._passages = _Units(text, cut_passages(text))
        self.rows = _Units(text, table_rows(text))
        self.passages = self._passages.units
        self.index = self._passages.index

    @property
    def nbytes(self) -> int:
        """Roughly what the indexed document holds: its text, the two BM25 indexes and their units."""
        return sys.getsizeof(self.text) + self._passages.nbytes + self.rows.nbytes + 64 * len(self.head_terms)

    def units(self, kind: str) -> _Units:
        return self._passages if kind == "passages" else self.rows

    def best(self, query, limit: int, idfs=None, bounds: tuple[int, int] | None = None) -> list[tuple[float, Passage]]:
        """The top passages by BM25; with `bounds`, only passages overlapping that range, clipped to it."""
        return self._passages.best(query, limit, idfs, bounds, len(self.text))

    def best_rows(
        self, query, limit: int, idfs=None, bounds: tuple[int, int] | None = None
    ) -> list[tuple[float, Passage]]:
        """The top table rows by BM25 (scored over rows only), as `best`."""
        return self.rows.best(query, limit, idfs, bounds, len(self.text))


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


@dataclass(frozen=True)
class _Candidate:
    key: str
    passage: Passage
    document: IndexedDocument

    def block(self) -> str:
        context = f"({self.passage.context})\n" if self.passage.context else ""
        return (
            f"\n[{self.key} characters {self.passage.start}-{self.passage.end}]\n{context}"
            f"{self.document.text[self.passage.start : self.passage.end]}"
        )


def _shared_idfs(documents: dict[str, Excerpt], terms, units: str) -> dict[str, float] | None:
    """With several documents, one IDF scale for all of them (over passages, or over rows)."""
    if len(documents) < 2:
        return None
    indexes = [e.document.index if units == "passages" else e.document.rows.index for e in documents.values()]
    size = sum(i.size for i in indexes)
    return {t: idf(size, sum(i.document_frequency(t) for i in indexes)) for t in terms}


class PassageRetriever:
    def __init__(self, top_passages: int = 24, reply_chars: int = 7_600, rows_per_part: int = ROWS_PER_PART):
        self.top_passages = top_passages
        self.reply_chars = reply_chars
        self.rows_per_part = rows_per_part

    def _ranked(
        self, question: str, weights: dict[str, float], documents: dict[str, Excerpt], cover: dict[str, float]
    ) -> list[_Candidate]:
        """One part's candidates, best first: its best rows (those close to the top row's score) interleaved with
        its best passages."""
        terms = set(weights)
        ranked = []
        for units in ("passages", "rows"):
            query = weights if units == "passages" else _at_a_date(question, weights)
            idfs = _shared_idfs(documents, terms | set(query), units)
            limit = self.top_passages if units == "passages" else self.rows_per_part
            scored: dict[int, np.ndarray] = {}  # one scoring per text, however many keys name it
            hits = []
            for key, e in documents.items():
                kind = e.document.units(units)
                if id(kind) not in scored:
                    scored[id(kind)] = kind.index.scores(query, idfs)
                hits += [
                    (score * cover[key], key, p, e.document)
                    for score, p in kind.best(query, limit, idfs, e.bounds(), len(e.document.text), scored[id(kind)])
                ]
            hits.sort(key=lambda h: -h[0])
            if units == "rows" and hits:
                hits = [h for h in hits if h[0] >= ROW_SHARE * hits[0][0]][: self.rows_per_part]
            else:
                hits = hits[:limit]
            ranked.append([_Candidate(key, p, doc) for _, key, p, doc in hits])
        passages, rows = ranked
        merged = []
        for i in range(max(len(passages), len(rows))):  # a row, then a passage, while rows last
            merged += rows[i : i + 1] + passages[i : i + 1]
        return merged

    def answer(self, question: str, documents: dict[str, Excerpt]) -> str:
        """The best rows and passages of the named documents, within each excerpt's range, filling the reply
        budget shared among the question's parts."""
        texts = list({id(e.document): e.document for e in documents.values()}.values())
        whole = _strongest(query_weights(question), texts)
        idfs = _shared_idfs(documents, whole, "passages")
        cover = {key: _cover_match(e.document, whole, idfs) for key, e in documents.items()}  # the whole question's
        candidates = [
            self._ranked(question, _strongest(weights, texts), documents, cover) for weights in question_parts(question)
        ]
        if not any(candidates):
            return (
                "No passage of " + ", ".join(documents) + " matches the words of your prompt. "
                "Try other words, or read a part of the document with input_character_ranges."
            )
        blocks = _share_budget(candidates, self.reply_chars)
        head = (
            f"The {len(blocks)} passages of {', '.join(documents)} that best match your prompt (BM25 search; "
            "table rows and passages for each part of the question, most relevant first; a passage's context "
            "line in parentheses says where it sits; character ranges refer to the stored document, for "
            "input_character_ranges):"
        )
        return head + "\n" + "\n".join(blocks)


def _strongest(weights: dict[str, float], texts: list[IndexedDocument]) -> dict[str, float]:
    """At most MAX_QUERY_TERMS of a query's terms: the heaviest, the rarest in these texts first among equals. A
    question names a few things; scoring costs each term's postings in every text, and a prompt can hold 50,000
    characters of distinct words."""
    if len(weights) <= MAX_QUERY_TERMS:
        return weights
    frequency = {t: sum(d.index.document_frequency(t) for d in texts) for t in weights}
    kept = sorted(weights, key=lambda t: (-weights[t], frequency[t]))[:MAX_QUERY_TERMS]
    return {t: weights[t] for t in kept}


def _share_budget(candidates: list[list[_Candidate]], budget: int) -> list[str]:
    """Fill `budget` characters: the part that has used the fewest characters adds its next candidate that is not
    already shown (a row inside a shown passage is shown). A candidate too big for what is left is skipped."""
    used = [0] * len(candidates)
    cursor = [0] * len(candidates)
    shown: dict[str, list[tuple[int, int]]] = {}
    blocks: list[str] = []
    total = 0
    while True:
        open_parts = [i for i in range(len(candidates)) if cursor[i] < len(candidates[i])]
        if not open_parts:
            return blocks
        part = min(open_parts, key=lambda i: (used[i], i))
        candidate = candidates[part][cursor[part]]
        cursor[part] += 1
        spans = shown.setdefault(candidate.key, [])
        start, end = candidate.passage.start, candidate.passage.end
        if any(a <= start and end <= b for a, b in spans):
            continue
        block = candidate.block()
        if blocks and total + len(block) > budget:
            continue
        spans.append((start, end))
        blocks.append(block)
        used[part] += len(block)
        total += len(block)
