"""Does an answer commit to what it states? Negation, hedge cues and self-designated answers, read around a span.

One set of rules for values (deterministic.py, rivals.py) and for names (text.py). Each function looks at a bounded
window of characters beside the span, so checking every value of an answer stays linear in its length.

- Negated: a negator ("not", "n't", "never", "neither", "nor", "rather than", "instead of", "other than") at most
  `REACH_WORDS` words before the span, in its clause; or a verdict right after it, past at most `UNIT_WORDS` words
  of its unit ("51% is incorrect", "1,789,000 vehicles is wrong", "Delaware is not", "isn't", "false"), or taken
  back ("51%, no, 49%", "51% - scratch that"). A clause
  ends at punctuation or at "but", "however", "yet", "though", "whereas", "while", "and", "so", so in "not 51%,
  but 49%" only 51% is negated. "not only", "not just", "not more than" and the like are not negations (a bound
  is not a denial).
- Hedge cue: "maybe", "perhaps", "possibly", "alternatively", "otherwise", "or", "either", "might", "could", "may"
  at most `REACH_WORDS` words before the span, in its clause ("it might be $120 billion").
- Hedge after: the span offered as one possibility ("$120 billion is also possible", "Delaware would be an
  option"), or followed by an open alternative ("51% or something else", "Delaware or another state").
- Asked: a span in a sentence that ends with "?" is asked about, not stated ("Is it 51%? No, 49%.").
- Designation: "the answer is", "my answer:", "final answer", "correct answer", "I'd say", "my guess": the rest of
  that sentence is what the answer names as its answer ("The correct answer is X. My answer: Y" designates Y too).
"""

from __future__ import annotations

import bisect
import re

__all__ = [
    "ALTERNATIVE_WORDS",
    "asked",
    "ASKED_REACH",
    "designations",
    "hedge_cue",
    "negation",
    "offered_as_possible",
    "REACH_WORDS",
    "UNIT_WORDS",
    "WINDOW",
]

REACH_WORDS = 5  # words allowed between a negator (or a hedge cue) and the span: "rather than a net loss of $X"
UNIT_WORDS = 2  # words allowed between a span and a verdict on it: "14,840,390,000 shares is incorrect"
WINDOW = 80  # characters looked at before a span; a clause break usually comes much sooner

ALTERNATIVE_WORDS = frozenset({"or", "either", "nor", "alternatively", "otherwise"})  # "A or B" offers both

_CLAUSE_BREAK = re.compile(
    r"[,;:!?\n()\[\]—–]|\.(?!\d)|\b(?:but|however|yet|though|although|whereas|while|and|so)\b", re.I
)
_NEGATOR = re.compile(
    r"(?:\b(?:not|never|neither|nor)\b|n[’']t\b|\brather\s+than\b|\binstead\s+of\b|\bother\s+than\b)"
    r"(?!\s+(?:only|just|more|less|fewer|greater|higher|lower|over|under|exceeding|below|above)\b)"
    rf"(?P<gap>(?:\s+[^\s\d]+){{0,{REACH_WORDS}}}?)\s*$",
    re.I,
)
_VERDICT_AFTER = re.compile(
    rf"""^[\s)\]"'’]*(?:[^\W\d_]+\s+){{0,{UNIT_WORDS}}}?(?:
      (?:,\s*)?(?:which\s+|that\s+)?(?:is|was|are|were|would\s+be|will\s+be|seems?\s+to\s+be|appears?\s+to\s+be)\s*
        (?:not\b(?!\s+(?:only|just|comparable|directly|including|included|the\s+only)\b)|n[’']t\b
           |incorrect\b|wrong\b|false\b|inaccurate\b|mistaken\b|erroneous\b)
      | [\s,:;(\[—–-]*(?:incorrect|wrong|false|inaccurate|mistaken|erroneous)\b
      | [\s,;:—–-]*(?:no|nope|scratch\s+that|i\s+mean|sorry)\s*[,;:!.—–-])  # "51%, no, 49%": taken back""",
    re.I | re.X,
)
_CUE = re.compile(
    r"\b(?P<cue>maybe|perhaps|possibly|alternatively|otherwise|or|either|might|could|may)\b"
    rf"(?P<gap>(?:\s+[^\s\d]+){{0,{REACH_WORDS}}}?)\s*$",
    re.I,
)
_POSSIBLE_AFTER = re.compile(
    rf"""^[\s)\]"'’]*(?:[^\W\d_]+\s+){{0,{UNIT_WORDS}}}?(?:
      ,?\s*(?:is|are|would\s+be|seems|might\s+be|could\s+be|may\s+be)\s+(?:also\s+|equally\s+)?
         (?:possible|plausible|(?:an?|one|another)\s+(?:option|possibility|alternative|candidate))\b
      | ,?\s*(?:or|and/or)\s+(?:something|somewhere|someone|anything|another|other|else|not|different)\b)""",
    re.I | re.X,
)
_TERMINATOR = re.compile(r"[!?\n]|\.(?!\d)")
ASKED_REACH = 200  # characters looked at after a span for the end of its sentence
_DESIGNATION = re.compile(
    r"""\banswer\b
          (?:\s+(?:is|was|would\s+be|will\s+be|should\s+be|here\s+is))?\s*[:=]?
      | \bmy\s+(?:guess|estimate|pick|choice|response|figure)\b(?:\s+(?:is|was|would\s+be))?\s*[:=]?
      | \bI(?:['’]d|\s+would)\s+(?:say|guess|answer|go\s+with)\b""",
    re.I | re.X,
)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[;\n]")


def _clause_before(text: str, start: int) -> str:
    """The text of `start`'s clause before it (at most WINDOW characters)."""
    window = text[max(0, start - WINDOW) : start]
    last = None
    for last in _CLAUSE_BREAK.finditer(window):  # noqa: B007 (the last match is the one wanted)
        pass
    return window[last.end() :] if last else window


def negation(text: str, start: int, end: int) -> str | None:
    """The words that deny text[start:end] ("not 51%", "51% is incorrect"), or None."""
    before = _NEGATOR.search(_clause_before(text, start))
    if before is not None:
        return f"{before.group().strip()} {text[start:end]}"
    after = _VERDICT_AFTER.match(text[end : end + WINDOW])
    if after is not None:
        return f"{text[start:end]} {after.group().strip(' ,')}"
    return None


def hedge_cue(text: str, start: int, end: int) -> str | None:
    """The hedge that introduces text[start:end] ("might be", "or possibly") or follows it ("is also possible",
    "or something else"), or None."""
    found = _CUE.search(_clause_before(text, start))
    if found is not None and not (found["cue"].lower() == "may" and found["cue"] != "may"):  # "May 2024": a month
        return f"{found.group().strip()} {text[start:end]}"
    return offered_as_possible(text, start, end)


def offered_as_possible(text: str, start: int, end: int) -> str | None:
    """The words after text[start:end] that make it one possibility among others, or None."""
    after = _POSSIBLE_AFTER.match(text[end : end + WINDOW])
    return f"{text[start:end]} {after.group().strip(' ,')}" if after else None


def asked(text: str, end: int) -> bool:
    """Does the sentence of the span ending at `end` end with a question mark?"""
    terminator = _TERMINATOR.search(text, end, end + ASKED_REACH)
    return terminator is not None and terminator.group() == "?"


def designations(text: str) -> list[tuple[int, int]]:
    """Spans the answer names as its answer: from each marker to the end of its sentence."""
    ends = [m.start() for m in _SENTENCE_END.finditer(text)]  # once: markers may be many
    spans = []
    for marker in _DESIGNATION.finditer(text):
        k = bisect.bisect_left(ends, marker.end())
        spans.append((marker.end(), ends[k] if k < len(ends) else len(text)))
    return spans
