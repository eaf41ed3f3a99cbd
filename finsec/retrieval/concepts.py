"""Figures a filing states in other words than the question asks for them, matched by concept as well as by word.

- Headcount. "Apple's headcount", "how many people worked at NVIDIA" and "the size of its workforce" ask for the
  one sentence that states the number of employees ("approximately 164,000 full-time equivalent employees", "our
  employee headcount worldwide was 125,665"). It usually comes once, in the Human Capital section, among many
  passages that say "employee" more often (stock plans, benefits, payroll taxes). When a document is indexed, a
  passage or row with such a sentence gets the `HEADCOUNT` tag, a token the tokenizer never produces. A headcount
  question also searches for the tag. Few passages have it, so it weighs like a rare word.
- Top line. Revenue has several names, and each filing uses one of them: "total net sales" (Apple, Amazon),
  "revenue" (NVIDIA), "total revenues" (Tesla, Alphabet). A statement that splits the line (Products and Services,
  or premiums, products and services) states the top line as its total row. So a question for the top line
  searches for every name of it, and for "total", at the weight of the name it used: "Apple's revenue" finds
  "Total net sales", below the Products and Services lines. A question that names a line of its own ("Google
  Cloud revenues", "automotive sales") is left alone: that line's name is the filing's.
"""

from __future__ import annotations

import bisect
import re

from finsec.retrieval.tokenize import tokenize

__all__ = [
    "asks_headcount",
    "asks_top_line",
    "document_tags",
    "HEADCOUNT",
    "HEADCOUNT_WEIGHT",
    "owner",
    "question_terms",
]

HEADCOUNT = "#headcount"
HEADCOUNT_WEIGHT = 2.0

# A question for the number of employees. A question about shares or awards granted to employees is not one:
# "how many" counts only when a word for people follows it before a "?" or a word for securities does. Spaces
# are taken possessively: "head" and a long run of them must not be split every way before "count" fails.
_ASKS_HEADCOUNT = re.compile(
    r"""\bhead\s*+(?:-\s*+)?counts?\b | \bworkforce\b | \bemployee\s+count\b
      | \bnumber\s+of\s+(?:[a-z-]+\s+){0,2}(?:employees|staff|workers|personnel)\b""",
    re.IGNORECASE | re.VERBOSE,
)
# The "how many" rule, as events read in one pass (a pattern that rescans from every "how many" is quadratic
# on the repetitive prompts a policy under RL writes): an arm, a disarm, or a word for people.
_HOW_MANY_EVENTS = re.compile(
    r"(?P<arm>\bhow\s+many\b)|(?P<disarm>\?|\b(?:shares?|stock|options?|units|awards?|grants?)\b)"
    r"|(?P<people>\b(?:employ\w*|people|staff|workers|personnel)\b)",
    re.IGNORECASE,
)
# A sentence that states a headcount: a number, then at most four words ("full-time and part-time"), then
# "employees"; or "headcount" and then a number in the same sentence.
_STATES_HEADCOUNT = re.compile(  # a number is read from its first digit only, at once: not again from each one
    r"(?<![\d,])\d[\d,]*+\s+(?:[\w-]+\s+){0,4}?employees\b|\bheadcount\b[^.\d]{0,60}\d", re.IGNORECASE
)
# The stems (tokenize.stem) of the names of the top line, and of the words that qualify it without naming another.
_TOP_LINE = ("revenu", "sale")
_TOP_LINE_NAMES = frozenset({*_TOP_LINE, "sell"})
# Whose line a question names: the words between "of" (or "was", "is", ...) and the first possessive after them,
# with no "?" between ("the total revenues of Tesla's", "was Helixar Analytics Corp.'s"). Found in one pass.
_OWNER_INTRO = re.compile(r"\b(?P<word>was|were|is|are|did|does|of)\s+(?:the\s+)?", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s?\s")
_TOP_LINE_WORDS = frozenset({*_TOP_LINE_NAMES, "net", "total", "consolidat", "top", "line", "combin"})


def asks_headcount(question: str) -> bool:
    if _ASKS_HEADCOUNT.search(question) is not None:
        return True
    armed = False
    for event in _HOW_MANY_EVENTS.finditer(question):
        if event.lastgroup == "people" and armed:
            return True
        armed = event.lastgroup == "arm" or (armed and event.lastgroup != "disarm")
    return False


def owner(question: str) -> str | None:
    """The words that name whose line the question asks for, or None: what the pattern `<intro>\\s+(the\\s+)?
    ([^?]+?)'s\\s` finds, in one pass (each introducing word looks up the next possessive and "?" in tables of
    positions) where the pattern rescans the rest of the question from each introducing word."""
    possessives = [m.start() for m in _POSSESSIVE.finditer(question)]
    marks = [i for i, c in enumerate(question) if c == "?"]
    for intro in _OWNER_INTRO.finditer(question):
        start = intro.end()
        at = bisect.bisect_left(possessives, start)
        if at == len(possessives):
            return None  # no possessive after this intro, so none after any later one either
        mark = bisect.bisect_left(marks, start)
        stop = marks[mark] if mark < len(marks) else len(question)  # the owner holds no "?"
        right_here = possessives[at] == start
        end = possessives[at + right_here] if at + right_here < len(possessives) else stop
        if end < stop:
            return question[start:end]  # at least one character, so past a possessive right at the start
        if right_here and start - intro.end("word") >= 2:
            return ""  # the pattern gives back a space or "the" to end there: an owner that names nobody
    return None


def document_tags(text: str) -> list[str]:
    """The tags of one indexed unit (a passage or a table row)."""
    return [HEADCOUNT] if _STATES_HEADCOUNT.search(text) else []


def asks_top_line(question: str, weights: dict[str, float]) -> bool:
    """Revenue or sales and nothing else but whose: "Apple's revenue", "Helixar Analytics Corp.'s net sales", "the
    total revenues of Tesla". Another content word names a line of its own ("Google Cloud revenues", "automotive
    sales"), whose name is the filing's."""
    whose = owner(question)
    owners = set(tokenize(whose)) if whose else set()
    content = [t for t, w in weights.items() if w >= 1.0 and t not in owners]  # period words weigh less
    named = [t for t in content if t in _TOP_LINE_NAMES]
    others = [t for t in content if t not in _TOP_LINE_WORDS]
    return len(named) == 1 and len(others) <= (0 if owners else 1)


def question_terms(question: str, weights: dict[str, float]) -> dict[str, float]:
    """What a question with these token weights also searches for: tags and other names of the same line."""
    extra: dict[str, float] = {}
    if asks_headcount(question):
        extra[HEADCOUNT] = HEADCOUNT_WEIGHT
    if asks_top_line(question, weights):  # the question names the line one way; the filing may name it another way
        weight = max(weights[t] for t in _TOP_LINE_NAMES if t in weights)
        extra.update({t: weight for t in (*_TOP_LINE, "total") if t not in weights})
    return extra
