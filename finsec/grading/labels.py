"""Which label each value of an answer is stated for: "U.S. 49%, international 51%" binds 49% to U.S.

The expected answer names the labels. Each of its values takes the words on its side of the nearest clause break
(the words before it, or after it when the first value opens its sentence: "$167,045 million (Americas)"); a
year or date next to a value is a label word too ("2024: 24.1%"). A part's *distinctive* words are those no other
part of the same kind uses ("greater", "china" against "americas"; "net sales" is shared and says nothing).

In the answer, every occurrence of a distinctive word binds to the value next to it on one side or the other
within its sentence, whichever is closer in words (a clause break, "and", "while", ... costs more; a value is
never crossed; a preposition pulls a following label to the value before it: "$67.0 billion in 2024"). In a
sentence that says "respectively", the labels and the values pair off in order. A value is bound to the part
whose distinctive words it collects the largest share of (on a tie in share, the part whose word sits closest);
a full tie binds it to none.

Linear in the text: one tokenizing pass, and each label occurrence looks at most `MAX_GAP` characters each way.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from dataclasses import dataclass

from finsec.grading.numbers import Quantity

__all__ = ["bind", "BREAK_COST", "distinctive", "expected_labels", "MAX_GAP", "year_label"]

MAX_GAP = 160  # characters between a label word and its value, beyond which they do not bind

_ALIASES = [  # different spellings of one label, rewritten to one word before tokenizing (same length kept)
    (re.compile(r"\bnon[-\s]?(?:u\.?s\.?|united\s+states)(?![a-z])", re.I), "international"),
    (re.compile(r"\boutside\s+(?:of\s+)?(?:the\s+)?(?:u\.?s\.?|united\s+states)(?![a-z])", re.I), "international"),
    (re.compile(r"\b(?:united\s+states|u\.s\.a\.|u\.s\.|usa)(?![a-z])", re.I), "us"),
    (re.compile(r"\b(?:intl|foreign|overseas)\b", re.I), "international"),
]
# The comma of a company's name ("Tesla, Inc.", "AMAZON.COM, INC.") is no clause break: it is read as a space.
_NAME_COMMA = re.compile(r",(?=\s*(?:inc|corp|corporation|co|ltd|llc|plc|lp|n\.v|s\.a|ag)\b)", re.I)
_ABBREVIATIONS = re.compile(r"\b(?:[^\W\d_]\.){2,}|\b(?:vs|inc|corp|co|approx|no|ltd|mr|ms|dr|jr|sr)\.", re.I)
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)|\n")
_BREAK = re.compile(r",|\b(?:and|while|whereas|but|versus|vs|compared|against|or)\b", re.I)
_PREPOSITIONS = frozenset("in for at of during as from the a an by".split())
_STOPWORDS = frozenset(
    """a an the of in for at on by to from as and or was were is are be been its their it this that which with
    total about approximately roughly around nearly some respectively while whereas but versus vs compared
    against than each what how much many during period ended ending year years fiscal""".split()
)
BREAK_COST = 3.0


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    """Plural and -ing/-ion forms to one token: "operations", "operating" -> "operat"; "sales" -> "sale"."""
    for suffix, replacement in (("ing", ""), ("ions", ""), ("ion", ""), ("ies", "y"), ("ally", "al"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + replacement
    return word


def year_label(date: Quantity) -> str:
    return f"@{int(date.value // 10000)}"


@dataclass
class _Text:
    """An answer tokenized once: label words with positions, sentence breaks, values."""

    words: list[tuple[int, int, str]]  # (start, end, token), values masked out
    sentence_ends: list[int]
    masked: str


def _prepare(text: str, quantities: list[Quantity]) -> _Text:
    chars = list(text)
    for q in quantities:  # a value's own words ("million", "percent") are not label words
        chars[q.start : q.end] = " " * (q.end - q.start)
    masked = "".join(chars)
    for pattern, word in _ALIASES:
        masked = pattern.sub(lambda m: word.ljust(len(m.group())), masked)  # noqa: B023 (sub calls it at once)
    masked = _NAME_COMMA.sub(" ", masked)
    masked = _ABBREVIATIONS.sub(lambda m: m.group().replace(".", "_"), masked)
    words = [(m.start(), m.end(), _stem(m.group().casefold())) for m in _WORD.finditer(masked)]
    words += [(q.start, q.end, year_label(q)) for q in quantities if q.kind == "date"]
    words.sort()
    return _Text(words, [m.start() for m in _SENTENCE_END.finditer(masked)], masked)


def _sentence(prepared: _Text, position: int) -> int:
    return bisect.bisect_right(prepared.sentence_ends, position)


def expected_labels(text: str, quantities: list[Quantity], values: list[Quantity]) -> list[set[str]]:
    """For each of `values` (quantities of the expected answer, in reading order), the label words stated for it."""
    prepared = _prepare(text, quantities)
    starts = [w[0] for w in prepared.words]
    ends = prepared.sentence_ends

    def words_between(a: int, b: int) -> set[str]:
        lo, hi = bisect.bisect_left(starts, a), bisect.bisect_left(starts, b)
        return {w[2] for w in prepared.words[lo:hi] if w[2] not in _STOPWORDS}

    def sentence_bounds(position: int) -> tuple[int, int]:
        k = bisect.bisect_left(ends, position)
        return (ends[k - 1] + 1 if k else 0), (ends[k] if k < len(ends) else len(text))

    labels = []
    for i, value in enumerate(values):  # the words before each value, back to the clause break after the last
        first, _ = sentence_bounds(value.start)
        a = values[i - 1].end if i and values[i - 1].end > first else first
        if a != first:  # the clause break after the previous value starts this value's clause
            first_break = _BREAK.search(prepared.masked, a, value.start)
            a = first_break.end() if first_break else a
        labels.append(words_between(a, value.start))
    if values and not labels[0]:  # "$167,045 million (Americas); ...": labels follow their values
        labels = []
        for i, value in enumerate(values):
            _, last = sentence_bounds(value.end)
            b = min(values[i + 1].start, last) if i + 1 < len(values) else last
            if i + 1 < len(values) and values[i + 1].start <= last:
                first_break = _BREAK.search(prepared.masked, value.end, b)
                b = first_break.start() if first_break else b
            labels.append(words_between(value.end, b))
    return labels


def distinctive(labels: list[set[str]]) -> list[set[str]]:
    """Each part's words that no other part uses."""
    parts_using = Counter(word for own in labels for word in own)  # one pass: many parts stay linear
    return [{word for word in own if parts_using[word] == 1} for own in labels]


def bind(text: str, quantities: list[Quantity], values: list[Quantity], parts: list[set[str]]) -> list[int | None]:
    """For each of `values` (answer quantities, in reading order), the index of the part it is stated for."""
    owner = {word: i for i, words in enumerate(parts) for word in words}
    prepared = _prepare(text, quantities)
    starts = [v.start for v in values]
    collected: list[dict[int, set[str]]] = [{} for _ in values]
    nearest: list[dict[int, float]] = [{} for _ in values]  # the part's closest occurrence: breaks a tie in share
    occurrences = [(s, e, w, owner[w]) for s, e, w in prepared.words if w in owner]

    def add(value_index: int, part: int, word: str, cost: float = 0.0) -> None:
        collected[value_index].setdefault(part, set()).add(word)
        nearest[value_index][part] = min(cost, nearest[value_index].get(part, cost))

    occurrence_starts = [o[0] for o in occurrences]
    respectively = {_sentence(prepared, m.start()) for m in re.finditer(r"\brespectively\b", prepared.masked, re.I)}
    for sentence in respectively:  # "A and B were $1 and $2, respectively": pair in order
        lo = prepared.sentence_ends[sentence - 1] if sentence else -1
        hi = prepared.sentence_ends[sentence] if sentence < len(prepared.sentence_ends) else len(text)
        in_values = range(bisect.bisect_right(starts, lo), bisect.bisect_left(starts, hi))
        in_occurrences = occurrences[
            bisect.bisect_right(occurrence_starts, lo) : bisect.bisect_left(occurrence_starts, hi)
        ]
        in_parts = list(dict.fromkeys(o[3] for o in in_occurrences))
        if in_values and len(in_values) == len(in_parts):
            for value_index, part in zip(in_values, in_parts, strict=False):
                for word in parts[part]:
                    add(value_index, part, word)
    for start, end, word, part in occurrences:
        sentence = _sentence(prepared, start)
        if sentence in respectively:
            continue
        after = bisect.bisect_left(starts, end)
        before = after - 1
        costs = []
        if (
            before >= 0
            and values[before].end <= start
            and start - values[before].end <= MAX_GAP
            and _sentence(prepared, values[before].start) == sentence
        ):
            costs.append((_cost(prepared.masked[values[before].end : start], owner, after=True), before))
        if (
            after < len(values)
            and values[after].start - end <= MAX_GAP
            and _sentence(prepared, values[after].start) == sentence
        ):
            costs.append((_cost(prepared.masked[end : values[after].start], owner, after=False), after))
        if costs:
            cost, value_index = min(costs)
            add(value_index, part, word, cost)
    bound: list[int | None] = []
    for found, closest in zip(collected, nearest, strict=False):
        ranked = sorted((-len(words) / len(parts[p]), closest[p], p) for p, words in found.items())
        unique = ranked and (len(ranked) == 1 or ranked[0][:2] != ranked[1][:2])
        bound.append(ranked[0][2] if unique else None)
    return bound


def _cost(gap: str, owner: dict[str, int], after: bool) -> float:
    """How far a label is from a value across `gap`: words that are not labels, plus clause breaks."""
    words = [_stem(w.casefold()) for w in _WORD.findall(gap)]
    cost = sum(1.0 for w in words if w not in owner and w not in _STOPWORDS)
    cost += 0.5 * sum(1 for w in words if w in _STOPWORDS and w not in _PREPOSITIONS)
    cost += BREAK_COST * len(_BREAK.findall(gap))
    if after and words and all(w in _PREPOSITIONS for w in words):
        cost -= 0.5  # "$67.0 billion in 2024", "$167.0 billion for the Americas"
    return cost
