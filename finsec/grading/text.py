"""Answers whose expected answer holds no quantity: a state, an auditor, a segment, a business, yes or no.

Words are read as names.py reads them (case-folded, plural "s" dropped, articles not counted; an identifier such as
"001-36743" is one word, so "36743-001" does not state it). The answer passes only when it states the expected
words as its answer:
- Mention: every expected word appears, together, in one sentence: a window of the answer's words that holds them
  all with at most max(1, n // 2) other words among them (n expected words). "the Stock Exchange in New York" states
  "New York Stock Exchange"; the words scattered over a paragraph do not.
- No mention is negated: "It is not Delaware", "Delaware is incorrect", "rather than Delaware" (commitment.py).
- No mention is an item of an enumeration. Items are runs of name words (capitalised words in an answer that uses
  case; otherwise words that end at a separator) joined by list punctuation (, ; / |) or by "or", "nor", "and".
  With "or" (or "nor", "either") it is a hedge; with three or more items, or two joined by "and", a list; two items
  joined by punctuation alone are a list only when they are the whole sentence ("Delaware, Nevada."), since in prose
  that is an apposition ("Austin, Texas"). In an answer that uses case, a lowercase item that is not a known place
  ("serving manufacturers and utilities") is prose, and counts only in a bare list or an "or". An item introduced
  by an article ("Deloitte & Touche LLP, the independent auditor") describes rather than competes. For a US state,
  a country beside it ("Delaware, USA") is its address; for an expected answer that is not a place, a place and
  the name just before one ("San Jose, California") are an address too.
- A mention is a phrase of its own: at most `MAX_NAME_EXTENSION` name words glued to it ("Delaware General
  Corporation Law" passes; "Arizona Arkansas Delaware Florida Georgia" buries it).
- A mention in a question ("Is it Delaware? No, Nevada.") is not stated; a mention offered as one possibility
  ("Delaware is one possibility") is a hedge.
- No rival is offered elsewhere: a sentence that is nothing but a name ("Texas. Delaware."), a name after a hedge
  cue or offered as a possibility ("it might be Nevada", "Nevada is also possible"), a name in the sentence of an
  answer marker that holds no mention ("The correct answer is Delaware. My answer: Nevada."), or, for a place, a
  marker whose first place is another ("My final answer is Nevada, though Delaware ...").
- No flood: at most `MAX_WORDS` words in all, and at most `MAX_OTHER_WORDS` distinct content words besides the
  expected ones.
- Yes/no: the opposite word as a clause of its own ("Yes, but no") is a rival.
Everything is one pass, or a bounded look beside each mention: linear in the answer.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

from finsec.grading.commitment import ALTERNATIVE_WORDS, asked, designations, negation, offered_as_possible
from finsec.grading.names import ARTICLES, LIST_PUNCT, Answer, count_words, kind_of, words
from finsec.grading.numbers import normalize

__all__ = [
    "compare_text",
    "MAX_ITEM_WORDS",
    "MAX_LISTED",
    "MAX_NAME_EXTENSION",
    "MAX_OTHER_WORDS",
    "MAX_WALK",
    "MAX_WORDS",
]

MAX_NAME_EXTENSION = 3
MAX_OTHER_WORDS = 30
MAX_WORDS = 300  # a name is stated in a sentence or two; more is an essay that buries it
MAX_ITEM_WORDS = 6  # a name longer than this is prose, not an enumeration item
MAX_LISTED = 6
_JOINERS = frozenset({"or", "nor", "and", "either"})
# Words between a joiner and its item ("or possibly Nevada", "..., the independent auditor").
_SKIPPED = frozenset(
    {
        "possibly",
        "maybe",
        "perhaps",
        "also",
        "even",
        "another",
        "other",
        "some",
        "alternatively",
        "otherwise",
        "rather",
        "else",
        "a",
        "an",
        "the",
    }
)
_CUES = frozenset(
    {"maybe", "perhaps", "possibly", "alternatively", "otherwise", "or", "either", "might", "could", "may"}
)
MAX_WALK = MAX_LISTED + 2  # items looked at on each side of a mention: enough to name the list


def compare_text(expected_answer: str, answer: str) -> tuple[bool, str]:
    """(passed, explanation) for an expected answer without quantities (rules in the module docstring)."""
    wanted = list(dict.fromkeys(words(expected_answer)))
    if not wanted:
        return False, "expected answer has nothing to compare"
    shown = " ".join(normalize(expected_answer).split())[:200]
    text = normalize(answer)
    if count_words(text, MAX_WORDS + 1) > MAX_WORDS:
        return False, f"flood: the answer buries '{shown}' in over {MAX_WORDS} words"
    parsed = Answer(text)
    present = {t.norm for t in parsed.tokens}
    missing = [w for w in wanted if w not in present]
    if missing:
        listed = ", ".join(missing[:MAX_LISTED]) + (", ..." if len(missing) > MAX_LISTED else "")
        return False, f"text mismatch: answer lacks {listed}"
    others = {t.norm for t in parsed.tokens if t.content} - set(wanted)
    if len(others) > MAX_OTHER_WORDS:
        return False, (
            f"flood: the answer buries '{shown}' among {len(others)} other words (at most {MAX_OTHER_WORDS})"
        )
    mentions = _mentions(parsed, wanted)
    if not mentions:
        return False, f"text mismatch: the answer never states '{shown}' as one phrase"
    stated = [(a, b) for a, b in mentions if not asked(text, parsed.tokens[b].end)]
    if not stated:
        return False, f"the answer only asks about '{shown}' ('{parsed.phrase(*mentions[0])} ...?')"
    mentions = stated
    kind = kind_of(" ".join(wanted))
    for a, b in mentions:
        problem = _uncommitted(parsed, a, b, set(wanted), kind, shown)
        if problem:
            return False, problem
    problem = _rival_elsewhere(parsed, mentions, wanted, shown)
    if problem:
        return False, problem
    return True, f"text match: {shown}"


def _mentions(parsed: Answer, wanted: list[str]) -> list[tuple[int, int]]:
    """Minimal windows (first, last token) holding every wanted word within one sentence, few words between."""
    need = set(wanted)
    slack = max(1, len(wanted) // 2)
    tokens = parsed.tokens
    found: list[tuple[int, int]] = []
    have: Counter[str] = Counter()
    extra = 0  # words of the window that are neither wanted nor articles
    left = 0
    for right, token in enumerate(tokens):
        if not parsed.same_sentence(left, right):  # a window never crosses a sentence
            have.clear()
            left, extra = right, 0
        if token.norm in need:
            have[token.norm] += 1
        elif token.norm not in ARTICLES:
            extra += 1
        while left < right and (tokens[left].norm not in need or have[tokens[left].norm] > 1):
            if tokens[left].norm in need:
                have[tokens[left].norm] -= 1
            elif tokens[left].norm not in ARTICLES:
                extra -= 1
            left += 1
        if len(have) == len(need) and token.norm in need and extra <= slack:
            found.append((left, right))
    return found


def _uncommitted(parsed: Answer, a: int, b: int, wanted: set[str], kind: str, shown: str) -> str | None:
    """Why the mention at tokens a..b is not the answer's own statement, or None."""
    denied = negation(parsed.text, parsed.tokens[a].start, parsed.tokens[b].end)
    if denied:
        return f"the answer negates the expected answer '{shown}' ('{denied}')"
    possible = offered_as_possible(parsed.text, parsed.tokens[a].start, parsed.tokens[b].end)
    if possible:
        return f"the answer hedges: '{possible}'"
    items, joiners, bare = _enumeration(parsed, a, b, wanted, kind)
    if "or" in joiners:
        return f"the answer hedges between {_series(items)}"
    if len(items) >= 3 or (len(items) == 2 and ("and" in joiners or bare)):
        return f"the answer lists {len(items)} candidates: {_series(items)}"
    first, last = a, b
    while a - first <= MAX_NAME_EXTENSION and parsed.glued(first - 1, first) and parsed.name_word(first - 1):
        first -= 1
    while (
        (a - first) + (last - b) <= MAX_NAME_EXTENSION and parsed.glued(last, last + 1) and parsed.name_word(last + 1)
    ):
        last += 1
    if (a - first) + (last - b) > MAX_NAME_EXTENSION:
        return f"the answer buries '{shown}' in a run of names: '{parsed.phrase(first, last)[:200]}'"
    return None


def _series(items: list[str]) -> str:
    shown = [f"'{item}'" for item in items[:MAX_LISTED]] + (["..."] if len(items) > MAX_LISTED else [])
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def _enumeration(parsed: Answer, a: int, b: int, wanted: set[str], kind: str) -> tuple[list[str], set[str], bool]:
    """The enumeration the mention a..b is an item of: (items, joiner words, whether it is the whole sentence)."""
    joiners: set[str] = set()
    spans = [(a, b)]
    for step in (1, -1):
        edge = b if step == 1 else a
        for _ in range(MAX_WALK):
            item = _next_item(parsed, edge, step, joiners)
            if item is None:
                break
            spans.append(item)
            edge = item[1] if step == 1 else item[0]
    spans.sort()
    covered = sum(1 for x, y in spans for t in parsed.tokens[x : y + 1] if t.content)
    bare = covered >= parsed.content_in[parsed.sentences[a]]  # nothing in the sentence but the list
    kept = [
        s
        for k, s in enumerate(spans)
        if s == (a, b)
        or (
            not {t.norm for t in parsed.tokens[s[0] : s[1] + 1]} <= wanted
            and _competes(parsed, spans, k, kind)
            and (bare or "or" in joiners or _named(parsed, s))
        )
    ]
    return [parsed.phrase(x, y) for x, y in kept], joiners, bare


def _named(parsed: Answer, span: tuple[int, int]) -> bool:
    """A name, not prose: capitalised (or the answer uses no case), or a known place ("nevada")."""
    if not parsed.cased or parsed.tokens[span[0]].capital:
        return True
    return kind_of(" ".join(t.norm for t in parsed.tokens[span[0] : span[1] + 1])) != "other"


def _next_item(parsed: Answer, edge: int, step: int, joiners: set[str]) -> tuple[int, int] | None:
    """The enumeration item next to token `edge` in direction `step` (1: after, -1: before), or None."""
    tokens, text = parsed.tokens, parsed.text
    k = edge + step
    between: list[str] = []
    while parsed.same_sentence(edge, k) and (tokens[k].low in _JOINERS or tokens[k].low in _SKIPPED):
        between.append(tokens[k].low)
        k += step
    said = {w for w in between if w in _JOINERS}
    if any(w in ALTERNATIVE_WORDS for w in between):
        joiners.add("or")  # an "or" next to the mention is a hedge, whatever follows it
    if not parsed.same_sentence(edge, k):
        return None
    lo, hi = min(edge, k), max(edge, k)
    punct = LIST_PUNCT.search(text, tokens[lo].end, tokens[hi].start) is not None
    if not punct and not said:
        return None
    run = [k]
    while len(run) < MAX_ITEM_WORDS and parsed.glued(run[-1], run[-1] + step) and tokens[run[-1] + step].content:
        run.append(run[-1] + step)
    first, last = min(run[0], run[-1]), max(run[0], run[-1])
    if not tokens[k].content or not _candidate(parsed, first, last):
        return None
    if any(w in ARTICLES for w in between) and not said:  # "..., the independent auditor": an apposition
        return None
    joiners.update(said)
    return first, last


def _candidate(parsed: Answer, first: int, last: int) -> bool:
    """A name (capitalised, in an answer that uses case), or a short run that ends at a separator or the sentence."""
    if parsed.cased and parsed.tokens[first].capital:
        return True
    if last - first + 1 > 4:
        return False
    following = last + 1
    if not parsed.same_sentence(last, following):
        return True
    if LIST_PUNCT.search(parsed.text, parsed.tokens[last].end, parsed.tokens[following].start):
        return True
    return parsed.tokens[following].low in _JOINERS


def _competes(parsed: Answer, spans: list[tuple[int, int]], k: int, kind: str) -> bool:
    """Is item k a rival of the expected's kind, not part of an address ("San Jose, California", "Delaware, USA")?"""

    def place(span: tuple[int, int]) -> str:
        return kind_of(" ".join(t.norm for t in parsed.tokens[span[0] : span[1] + 1]))

    own = place(spans[k])
    if kind == "state":
        return own != "country"
    if kind == "other":
        return own == "other" and not (k + 1 < len(spans) and place(spans[k + 1]) != "other")
    return True


def _rival_elsewhere(parsed: Answer, mentions: list[tuple[int, int]], wanted: list[str], shown: str) -> str | None:  # noqa: C901 (one pass over the tokens, each rival kind a branch)
    """A rival offered away from the mentions: a bare name sentence, a hedge cue, an answer marker, yes and no."""
    tokens = parsed.tokens
    in_mention = bytearray(len(tokens))
    for a, b in mentions:
        in_mention[a : b + 1] = b"\x01" * (b - a + 1)
    if wanted in (["yes"], ["no"]):
        opposite = "no" if wanted == ["yes"] else "yes"
        for k, t in enumerate(tokens):
            if t.low == opposite and _standalone(parsed, k):
                return f"the answer says both '{shown}' and '{opposite}'"
    bare = _bare_names(parsed, in_mention)
    if bare:
        return f"the answer lists {len(bare) + 1} candidates: {_series([shown] + bare)}"
    for k, t in enumerate(tokens):
        if not in_mention[k] and parsed.name_word(k) and (k + 1 == len(tokens) or not parsed.glued(k, k + 1)):
            possible = offered_as_possible(parsed.text, t.start, t.end)  # "... though Nevada is also possible"
            if possible:
                return f"the answer hedges: '{possible}'"
        if t.low in _CUES and not (t.low == "may" and t.capital):  # "May 2024" is a month
            j = k + 1
            while j - k <= 3 and parsed.same_sentence(k, j) and not tokens[j].content:
                j += 1
            if (
                j - k <= 3
                and parsed.same_sentence(k, j)
                and not in_mention[j]
                and parsed.name_word(j)
                and (parsed.cased or _candidate(parsed, j, j))
            ):
                return f"the answer hedges: '{parsed.phrase(k, j)}'"
    kind = kind_of(" ".join(wanted))
    for start, end in designations(parsed.text):
        inside = range(bisect.bisect_left(parsed.starts, start), bisect.bisect_left(parsed.starts, end))
        named = [k for k in inside if parsed.name_word(k)]
        if named and not any(in_mention[k] for k in inside):
            return f"the answer designates '{parsed.phrase(named[0], named[-1])}' as its answer"
        if kind != "other":  # a place: the first place it names is its answer
            first = next(
                (
                    k
                    for k in named
                    if kind_of(tokens[k].norm) == kind
                    or (k + 1 < len(tokens) and kind_of(f"{tokens[k].norm} {tokens[k + 1].norm}") == kind)
                ),
                None,
            )
            if first is not None and not in_mention[first]:
                return f"the answer designates '{parsed.phrase(first, first)}' as its answer"
    return None


def _bare_names(parsed: Answer, in_mention: bytearray) -> list[str]:
    """Sentences that are nothing but a name (at most 4 words, no digits or labels) and hold no mention."""
    tokens, out = parsed.tokens, []
    k = 0
    while k < len(tokens):
        j = k
        while j + 1 < len(tokens) and parsed.sentences[j + 1] == parsed.sentences[k]:
            j += 1
        words_ = [i for i in range(k, j + 1) if tokens[i].low not in ARTICLES]
        if (
            0 < len(words_) <= 4
            and not any(in_mention[k : j + 1])
            and all(parsed.name_word(i) for i in words_)
            and not re.search(r"[:\d]", parsed.text[tokens[k].start : tokens[j].end])
        ):
            out.append(parsed.phrase(k, j))
        k = j + 1
    return out


def _standalone(parsed: Answer, k: int) -> bool:
    """Token k is a clause of its own: punctuation (or the text's edge) on both sides."""
    text, tokens = parsed.text, parsed.tokens
    before = text[tokens[k - 1].end : tokens[k].start] if k else ""
    after = text[tokens[k].end : tokens[k + 1].start] if k + 1 < len(tokens) else ""
    opens = k == 0 or re.search(r"[,;:.!?\n]", before) is not None or tokens[k - 1].low in {"but", "and", "or", "yet"}
    return opens and (k + 1 == len(tokens) or re.search(r"[,;:.!?\n]", after) is not None)
