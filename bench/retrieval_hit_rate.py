"""Retrieval quality: does `PassageRetriever.answer` put every figure a question needs in front of the agent? And
does the deterministic grader score restated answers right and wrong ones wrong?

    .venv/bin/python bench/retrieval_hit_rate.py [--previous bench/results/retrieval_hit_rate.json]

Two question sets over the eight real filings, each filing reduced to text with `html_to_text`:
- `current` (bench/retrieval_questions.json): one figure per question, by category (cover, statement, prose,
  headcount, total);
- `hard` (bench/retrieval_questions_hard.json): analyst questions by kind (change, segment, balance, ratio,
  deep_prose, multipart, headcount, total) that need one to four figures each.
`PassageRetriever().answer(question, {"filing": excerpt(text)})` is called for each. A question is a hit only when
EVERY figure it needs occurs in the first 8,000 characters of the reply (as a standalone number: `1.08` does not
match inside `11.08`).

Side by side, on the same texts, questions and 8,000-character budget:
- `ours k=12`: PassageRetriever(top_passages=12), still cut to 8,000 characters;
- `ours, 8 filings in session`: all eight filings in `documents`; a figure counts only in blocks of the
  question's own filing;
- `first 8k`: the first 8,000 characters of the document (what a reader gets without search);
- `bm25 windows/ws`: rank-bm25's BM25Okapi over fixed 700-character windows, whitespace tokens, best 8 windows;
- `bm25 windows/fin`: the same windows with our finance tokenizer.
The previous report's figures (its JSON, read before it is overwritten; `--previous` names another) are shown
beside ours, by category and kind.

Cost: the time of one `answer` call per set (indexes built and cached first, as the server caches them), and
the index build time and size per filing.

Grader: for every question's expected answer, correct variants (restated in other units and precision,
reworded and reordered, a change given with a sign instead of words) and wrong ones (off by 10%, wrong sign,
labels swapped, a part dropped, a hedge between the right value and a wrong one) are graded by
`finsec.grading.deterministic.compare`; the report gives the share graded as intended, by variant, and
the grader's time on a hostile 1 MB answer.

First the script re-checks that every figure occurs in its filing's text and reports any that do not. For each
miss it lists the figures missing from the reply and where the passage holding the first of them ranked.

Writes bench/results/retrieval_hit_rate.md and .json.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, real_filings, table, write_report  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

from finsec.grading.deterministic import compare, required  # noqa: E402
from finsec.grading.numbers import find_quantities  # noqa: E402
from finsec.retrieval.passages import IndexedDocument, PassageRetriever, excerpt  # noqa: E402
from finsec.retrieval.tokenize import tokenize  # noqa: E402
from finsec.text.html_to_text import html_to_text  # noqa: E402

SETS = {
    "current": ROOT / "bench" / "retrieval_questions.json",
    "hard": ROOT / "bench" / "retrieval_questions_hard.json",
}
RESULTS_JSON = ROOT / "bench" / "results" / "retrieval_hit_rate.json"
BUDGET = 8000
WINDOW = 700
TOP = 8  # the baselines' window count
WIDE = 12  # a wider reply, still cut to the budget
GROUPS = {
    "current": ("cover", "statement", "prose", "headcount", "total"),
    "hard": ("change", "segment", "balance", "ratio", "deep_prose", "multipart", "headcount", "total"),
}
METHODS = ("ours", f"ours k={WIDE}", "ours, 8 filings in session", "first 8k", "bm25 windows/ws", "bm25 windows/fin")


def contains(text: str, answer: str) -> bool:
    """The figure as a standalone string: not inside a longer number (`1.08` in `11.08`, `5,833` in `25,833`)."""
    return re.search(r"(?<![\d.,])" + re.escape(answer) + r"(?![\d]|[.,]\d)", text) is not None


def count(text: str, answer: str) -> int:
    return len(re.findall(r"(?<![\d.,])" + re.escape(answer) + r"(?![\d]|[.,]\d)", text))


def figures(question: dict) -> list[str]:
    return question.get("figures") or [question["answer"]]


def group(question: dict) -> str:
    return question.get("kind") or question["category"]


def covers(text: str, question: dict) -> bool:
    return all(contains(text, f) for f in figures(question))


class WindowBaseline:
    """BM25Okapi over fixed, non-overlapping 700-character windows; the reply is the best 8 windows, best first,
    cut to the budget."""

    def __init__(self, text: str, tokenizer):
        self.windows = [text[i : i + WINDOW] for i in range(0, len(text), WINDOW)]
        self.tokenizer = tokenizer
        self.bm25 = BM25Okapi([tokenizer(w) or ["<empty>"] for w in self.windows])

    def reply(self, question: str) -> str:
        scores = self.bm25.get_scores(self.tokenizer(question))
        order = sorted(range(len(self.windows)), key=lambda i: -scores[i])
        return "\n\n".join(self.windows[i] for i in order[:TOP])[:BUDGET]


def whitespace(text: str) -> list[str]:
    return text.lower().split()


def keyed_passages(reply: str) -> list[tuple[str, str]]:
    """(key, block) pairs of a PassageRetriever reply, best first."""
    parts = re.split(r"\n\[([^\]\n]*) characters \d+-\d+\]\n", reply)
    return list(zip(parts[1::2], parts[2::2], strict=False))


def diagnose(indexed: IndexedDocument, question: str, figure: str) -> dict:
    """Where the passages holding a missing figure rank for the whole question, and the terms they share."""
    query = tokenize(question)
    scores = indexed.index.scores(query)
    ranking = sorted(range(len(indexed.passages)), key=lambda i: -scores[i])
    rank_of = {p: r for r, p in enumerate(ranking)}
    holders = [i for i, p in enumerate(indexed.passages) if contains(indexed.text[p.start : p.end], figure)]
    best = min(holders, key=lambda i: rank_of[i]) if holders else None
    if best is None:
        return {"figure": figure, "rank": None, "passages": len(indexed.passages)}
    p = indexed.passages[best]
    tokens = set(tokenize(indexed.text[p.start : p.end]))
    return {
        "figure": figure,
        "rank": rank_of[best] + 1,
        "passages": len(indexed.passages),
        "holders": len(holders),
        "terms": [t for t in dict.fromkeys(query) if t in tokens],
        "first_line": indexed.text[p.start : p.end].split("\n", 1)[0][:160],
    }


# --- grader variants ------------------------------------------------------------------------------------------


def _render(value: float, like: str) -> str:
    """`value` written the way `like` is written (currency sign, scale word, decimals, thousands separators)."""
    scale = next((w for w in ("trillion", "billion", "million", "thousand") if w in like), "")
    factor = {"trillion": 1e12, "billion": 1e9, "million": 1e6, "thousand": 1e3, "": 1.0}[scale]
    decimals = len(re.search(r"\d(?:[\d,]*)(?:\.(\d+))?", like).group(1) or "")
    number = (
        f"{abs(value) / factor:,.{decimals}f}"
        if "," in like or abs(value) / factor < 1000
        else f"{abs(value) / factor:.{decimals}f}"
    )
    written = re.sub(r"\d[\d,]*(?:\.\d+)?", number, like, count=1)
    return ("-" + written.lstrip("-")) if value < 0 and like.startswith("-") else written


def _restate(q) -> str | None:
    """A correct restatement of one quantity in other units or precision, or None when there is none."""
    if q.kind == "date":
        return (
            f"{int(q.value // 10000):04d}-{int(q.value // 100 % 100):02d}-{int(q.value % 100):02d}"
            if q.precision == 1
            else None
        )
    # a sign in words stays in the words
    sign = "-" if q.value < 0 and getattr(q, "stated_sign", "symbol") == "symbol" else ""
    size = abs(q.value)
    if q.kind == "percent":
        decimals = max(0, -round(math.log10(q.precision))) + 1
        return f"{sign}{size:.{decimals}f} percent"
    money = "$" if q.kind == "money" else ""
    if size >= 1e6:
        for decimals in range(1, 7):  # billions, as precisely as needed to stay within a rubric-tolerant 0.4%
            rounded = round(size / 1e9, decimals) * 1e9
            if abs(rounded - size) <= 0.004 * size and abs(rounded - size) <= q.precision * 0.5 + 10**-decimals * 5e8:
                return f"{sign}{money}{size / 1e9:,.{decimals}f} billion"
    if size >= 10_000 and size == int(size):
        return f"{sign}{money}{size / 1e3:,g} thousand"
    decimals = max(0, -round(math.log10(q.precision))) + 1
    return f"{sign}{money}{size:,.{decimals}f}"


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _label_and_value(part: str) -> tuple[str, str] | None:
    """("North America", "$24,967 million") from "North America $24,967 million", if the part is one of those."""
    found = [q for q in find_quantities(part) if q.kind != "date"]
    if len(found) != 1:
        return None
    label = (part[: found[0].start] + part[found[0].end :]).strip(" :")
    return (label, found[0].text) if label else None


def _series(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


def variants(expected: str) -> list[tuple[str, str, bool]]:
    """(variant, answer, should pass) for one expected answer."""
    from finsec.grading.numbers import normalize

    text = normalize(expected)
    wanted = required(find_quantities(text))
    out: list[tuple[str, str, bool]] = [("verbatim in a sentence", f"Per the filing, it was {text}.", True)]
    identifier = re.fullmatch(r"\d+-\d+", text.strip()) is not None
    if not wanted or identifier:  # names and identifiers: the text is the answer
        last = re.search(r"\d(?=\D*$)", text)
        wrong = (
            text[: last.start()] + str((int(last.group()) + 1) % 10) + text[last.end() :]
            if last
            else ("Nevada" if "delaware" not in text.lower() else "Texas")
        )
        return out + [("wrong value", f"It was {wrong}.", False)]
    restated = [_restate(q) for q in wanted]
    if all(restated):
        out.append(
            ("other units", _replace(text, [(q.start, q.end, r) for q, r in zip(wanted, restated, strict=False)]), True)
        )
    parts = [p.strip() for p in text.split(";") if p.strip()]
    if len(parts) > 1:
        out.append(("parts reordered", " and ".join(reversed(parts)) + ".", True))
        out.append(("a part dropped", "; ".join(parts[:-1]), False))
        pairs = [_label_and_value(p) for p in parts]
        if all(pairs):
            labels, values = [p[0] for p in pairs], [p[1] for p in pairs]
            out.append(("respectively", f"{_series(labels)} were {_series(values)}, respectively.", True))
            out.append(
                (
                    "respectively, values swapped",
                    f"{_series(labels)} were {_series(values[::-1])}, respectively.",
                    False,
                )
            )
    if re.search(r"\ba (?:decrease|decline) of\b", text):
        out.append(("change as a signed figure", re.sub(r"\ba (?:decrease|decline) of\s+", "-", text), True))
        out.append(("wrong sign", re.sub(r"\ba (decrease|decline) of\b", "an increase of", text), False))
    elif re.search(r"\ban increase of\b", text):
        out.append(("change as a signed figure", re.sub(r"\ban increase of\s+", "+", text), True))
        out.append(("wrong sign", text.replace("an increase of", "a decrease of"), False))
    elif not any(q.text.startswith("(") or q.kind == "date" for q in wanted):
        first = wanted[0]
        out.append(("wrong sign", text[: first.start] + "-" + text[first.start :], False))
    off = [
        (
            q.start,
            q.end,
            _render(q.value * 1.1, q.text)
            if q.kind != "date"
            else q.text.replace(str(int(q.value // 10000)), str(int(q.value // 10000) + 1)),
        )
        for q in wanted
    ]
    out.append(("off by 10%", _replace(text, off), False))
    out.append(("hedged", f"It was {_replace(text, off)} or {text}.", False))
    by_family = defaultdict(list)
    for q in wanted:
        by_family["amount" if q.kind in ("money", "number") else q.kind].append(q)
    for members in by_family.values():
        if len(members) >= 2 and len({m.value for m in members}) > 1:
            rotated = members[1:] + members[:1]
            out.append(
                (
                    "labels swapped",
                    _replace(text, [(m.start, m.end, r.text) for m, r in zip(members, rotated, strict=False)]),
                    False,
                )
            )
            break
    return out


def grade_variants(questions: list[dict]) -> dict:
    scores: dict[str, list[bool]] = defaultdict(list)
    intent: dict[str, bool] = {}
    failures = []
    for q in questions:
        for name, answer, should_pass in variants(q["expected"]):
            passed, why = compare(q["expected"], answer)
            scores[name].append(passed == should_pass)
            intent[name] = should_pass
            if passed != should_pass:
                failures.append(
                    {"expected": q["expected"], "variant": name, "answer": answer, "passed": passed, "why": why}
                )
    return {"by_variant": {k: [sum(v), len(v)] for k, v in scores.items()}, "intent": intent, "failures": failures}


def hostile_grading_cost() -> dict:
    """The grader on a ~1 MB answer: one full of figures (over the cap), one of prose with the right pairs."""
    block = (
        "In fiscal 2024, U.S. revenue was $167,045 million (51%) and international revenue was 49%, compared "
        "with December 31, 2023; a decrease of $163 million, respectively. Americas | 167,045 | 3% | (4)% "
    )
    figures_answer = (block * (1_000_000 // len(block) + 1))[:1_000_000]
    prose = ("The U.S. and international businesses grew in every region during the year. " * 14_000)[:1_000_000]
    out = {}
    for name, expected, answer in (
        ("1 MB of figures vs 300 KB expected", figures_answer[:300_000], figures_answer),
        ("1 MB of prose vs labelled expected", "U.S. 51%, international 49%", prose + " U.S. 51%, international 49%"),
    ):
        start = time.perf_counter()
        passed, why = compare(expected, answer)
        out[name] = {"seconds": round(time.perf_counter() - start, 3), "passed": passed, "why": why[:120]}
    return out


# --- the run --------------------------------------------------------------------------------------------------


def load_previous(path: Path) -> dict:
    """{set: {question: {method: hit}}} and the previous cost figures, from an earlier report's JSON."""
    if not path.is_file():
        return {"hits": {}, "costs": {}, "grader": {}}
    data = json.loads(path.read_text())
    if isinstance(data, list):  # the report before the hard set: one list of rows of the current set
        data = {"sets": {"current": data}}
    hits = {name: {r["question"]: r["hits"] for r in rows} for name, rows in data.get("sets", {}).items()}
    return {
        "hits": hits,
        "costs": data.get("costs", {}),
        "grader": data.get("grader", {}),
        "when": data.get("when", "an earlier run"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--previous", type=Path, default=RESULTS_JSON)
    args = parser.parse_args()
    filings = {f.url_path: f for f in real_filings()}
    previous = load_previous(args.previous)
    question_sets = {name: json.loads(path.read_text()) for name, path in SETS.items() if path.is_file()}
    texts = {}
    for questions in question_sets.values():
        for url_path in dict.fromkeys(q["filing"] for q in questions):
            if url_path not in filings:
                print(f"question filing {url_path} is not in MANIFEST.json")
                raise SystemExit(1)
            texts.setdefault(url_path, html_to_text(filings[url_path].html()))
    missing = [
        (name, q, f)
        for name, qs in question_sets.items()
        for q in qs
        for f in figures(q)
        if not contains(texts[q["filing"]], f)
    ]
    for name, q, f in missing:
        print(f"FIGURE NOT IN TEXT ({name}): {f!r} for {q['question']!r} ({q['filing']})")

    build = {}
    indexed = {}
    for url, text in texts.items():
        start = time.perf_counter()
        indexed[url] = excerpt(text)
        build[filings[url].label] = {
            "seconds": time.perf_counter() - start,
            "bytes": indexed[url].document.nbytes,
            "chars": len(text),
        }
    keys = {url: filings[url].label.replace(" ", "_") for url in texts}
    session = {keys[url]: indexed[url] for url in texts}
    baselines = {
        url: {"bm25 windows/ws": WindowBaseline(t, whitespace), "bm25 windows/fin": WindowBaseline(t, tokenize)}
        for url, t in texts.items()
    }
    retriever, wide = PassageRetriever(), PassageRetriever(top_passages=WIDE)
    results, timings = {}, {}
    for name, questions in question_sets.items():
        rows, alone, together = [], [], []
        for q in questions:
            doc = {"filing": indexed[q["filing"]]}
            start = time.perf_counter()
            reply = retriever.answer(q["question"], doc)
            alone.append(time.perf_counter() - start)
            start = time.perf_counter()
            multi = retriever.answer(q["question"], session)[:BUDGET]
            together.append(time.perf_counter() - start)
            own = keys[q["filing"]]
            own_text = "\n".join(p for k, p in keyed_passages(multi) if k == own)
            row = {
                **q,
                "group": group(q),
                "company": filings[q["filing"]].label,
                "occurrences": [count(texts[q["filing"]], f) for f in figures(q)],
                "hits": {
                    "ours": covers(reply[:BUDGET], q),
                    f"ours k={WIDE}": covers(wide.answer(q["question"], doc)[:BUDGET], q),
                    "ours, 8 filings in session": covers(own_text, q),
                    "first 8k": covers(texts[q["filing"]][:BUDGET], q),
                    **{m: covers(b.reply(q["question"]), q) for m, b in baselines[q["filing"]].items()},
                },
                "missing_in_reply": [f for f in figures(q) if not contains(reply[:BUDGET], f)],
                "reply_chars": len(reply),
                "blocks_in_budget": len(keyed_passages(reply[:BUDGET])),
            }
            if not row["hits"]["ours"]:
                row["diagnosis"] = diagnose(indexed[q["filing"]].document, q["question"], row["missing_in_reply"][0])
            rows.append(row)
            print(f"{name:7s} {'HIT ' if row['hits']['ours'] else 'MISS'} {row['company']:22s} {q['question']}")
        results[name] = rows
        timings[name] = {"alone_ms": _spread(alone), "session_ms": _spread(together)}
    costs = {"answer": timings, "index_build": build}
    grader = {name: grade_variants(questions) for name, questions in question_sets.items()}
    grader["hostile"] = hostile_grading_cost()
    markdown = render(results, previous, costs, grader, missing)
    write_report("retrieval_hit_rate.md", markdown)
    RESULTS_JSON.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "sets": results,
                "costs": costs,
                "grader": grader,
            },
            indent=1,
            ensure_ascii=False,
        )
    )
    print(markdown.split("## Misses")[0])


def _spread(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "median": round(statistics.median(ms), 3),
        "p90": round(ms[int(0.9 * (len(ms) - 1))], 3),
        "mean": round(statistics.fmean(ms), 3),
        "max": round(ms[-1], 3),
    }


def rate(rows: list[dict], method: str) -> str:
    hits = sum(r["hits"][method] for r in rows)
    return f"{hits}/{len(rows)} ({100 * hits / len(rows):.0f}%)" if rows else "-"


def previous_rate(rows: list[dict], previous: dict, name: str, method: str = "ours") -> str:
    old = previous["hits"].get(name, {})
    known = [old[r["question"]][method] for r in rows if r["question"] in old and method in old[r["question"]]]
    if not known or len(known) < len(rows):
        return "-"
    return f"{sum(known)}/{len(known)} ({100 * sum(known) / len(known):.0f}%)"


def render(results: dict, previous: dict, costs: dict, grader: dict, missing: list) -> str:
    out = [
        "# Retrieval hit rate and grader variants on real filings",
        "",
        f"{machine()}. Hit = EVERY figure the question needs occurs, as a standalone number, in the first "
        f"{BUDGET:,} characters of the reply. `previous` = the same question scored by the report this one "
        f"replaced ({previous.get('when', 'none')}). Baseline windows: the best {TOP}. `ours k={WIDE}` = "
        f"PassageRetriever(top_passages={WIDE}), cut to the same budget.",
        "",
        "## Headline",
        "",
    ]
    for name, rows in results.items():
        out.append(
            f"- **{name} set ({len(rows)} questions): ours {rate(rows, 'ours')}** (previous "
            f"{previous_rate(rows, previous, name)}); with all eight filings in the session "
            f"{rate(rows, 'ours, 8 filings in session')} (previous "
            f"{previous_rate(rows, previous, name, 'ours, 8 filings in session')}); first 8k "
            f"{rate(rows, 'first 8k')}; BM25Okapi windows {rate(rows, 'bm25 windows/ws')}."
        )
    if missing:
        out.append(f"- **{len(missing)} figures do not occur in their filing's text** (listed below).")
    else:
        out.append("- Every figure of both sets was re-checked and occurs in its filing's `html_to_text` output.")
    for name, scores in grader.items():
        if name == "hostile":
            continue
        right = sum(v[0] for v in scores["by_variant"].values())
        total = sum(v[1] for v in scores["by_variant"].values())
        old = previous["grader"].get(name, {}).get("by_variant")
        old_text = (
            f" (previous grader: {sum(v[0] for v in old.values())}/{sum(v[1] for v in old.values())})" if old else ""
        )
        out.append(
            f"- Grader on the {name} set's answer variants: **{right}/{total} graded as intended "
            f"({100 * right / total:.0f}%)**{old_text}."
        )
    alone = {n: costs["answer"][n]["alone_ms"]["median"] for n in results}
    out.append(
        "- Cost of one `answer` call, indexes cached: median "
        + ", ".join(f"{v:.2f} ms ({n})" for n, v in alone.items())
        + "; details below."
    )
    for name, rows in results.items():
        groups = GROUPS.get(name, tuple(dict.fromkeys(r["group"] for r in rows)))
        by = defaultdict(list)
        for r in rows:
            by[r["group"]].append(r)
        out += ["", f"## By {'kind' if name == 'hard' else 'category'}: {name} set", ""]
        out.append(
            table(
                [("kind" if name == "hard" else "category"), "n", "ours", "previous"]
                + list(METHODS[1:])
                + ["previous, 8 filings"],
                [
                    [g, len(by[g]), rate(by[g], "ours"), previous_rate(by[g], previous, name)]
                    + [rate(by[g], m) for m in METHODS[1:]]
                    + [previous_rate(by[g], previous, name, "ours, 8 filings in session")]
                    for g in groups
                ]
                + [
                    ["all", len(rows), rate(rows, "ours"), previous_rate(rows, previous, name)]
                    + [rate(rows, m) for m in METHODS[1:]]
                    + [previous_rate(rows, previous, name, "ours, 8 filings in session")]
                ],
            )
        )
        out.append("")
        out.append(
            f"Mean reply length {statistics.fmean(r['reply_chars'] for r in rows):,.0f} characters; mean "
            f"blocks within the first {BUDGET:,} characters "
            f"{statistics.fmean(r['blocks_in_budget'] for r in rows):.1f}."
        )
    out += [
        "",
        "## Cost",
        "",
        "One `PassageRetriever().answer` call (indexes built and cached beforehand, as the server does), in ms; "
        "`previous` from the replaced report where it measured the same.",
        "",
    ]
    old_answer = previous["costs"].get("answer", {})
    out.append(
        table(
            ["set", "documents", "median", "p90", "mean", "max", "previous median"],
            [
                [
                    n,
                    docs,
                    t[k]["median"],
                    t[k]["p90"],
                    t[k]["mean"],
                    t[k]["max"],
                    old_answer.get(n, {}).get(k, {}).get("median", "-"),
                ]
                for n, t in costs["answer"].items()
                for docs, k in (("1 filing", "alone_ms"), ("8 filings", "session_ms"))
            ],
        )
    )
    old_build = previous["costs"].get("index_build", {})
    out += ["", "Index build, once per filing text (the server caches it by digest):", ""]
    out.append(
        table(
            ["filing", "characters", "build s", "index MB", "previous build s", "previous MB"],
            [
                [
                    f,
                    f"{b['chars']:,}",
                    f"{b['seconds']:.2f}",
                    f"{b['bytes'] / 1e6:.1f}",
                    f"{old_build[f]['seconds']:.2f}" if f in old_build else "-",
                    f"{old_build[f]['bytes'] / 1e6:.1f}" if f in old_build else "-",
                ]
                for f, b in costs["index_build"].items()
            ],
        )
    )
    out += [
        "",
        "## Grader: answer variants",
        "",
        "Each question's expected answer, restated (should pass) or altered (should fail), graded by "
        "`compare`. Cells: graded as intended / variants.",
        "",
    ]
    names = list(dict.fromkeys(v for s in grader.values() if "by_variant" in s for v in s["by_variant"]))
    old_scores = {n: previous["grader"].get(n, {}).get("by_variant", {}) for n in results}
    header = ["variant", "should"] + [f"{n} set" for n in results] + [f"{n}, previous grader" for n in results]
    intent = {v: ok for s in grader.values() for v, ok in s.get("intent", {}).items()}
    rows = []
    for v in names:
        cells = []
        for scores in [grader[n]["by_variant"] for n in results] + [old_scores[n] for n in results]:
            got = scores.get(v)
            cells.append(f"{got[0]}/{got[1]}" if got else "-")
        rows.append([v, "pass" if intent[v] else "fail"] + cells)
    out.append(table(header, rows))
    failures = [f for n in results for f in grader[n]["failures"]]
    out += ["", f"Variants graded against intent: {len(failures)}.", ""]
    for f in failures[:30]:
        out.append(
            f"- {f['variant']}: expected `{f['expected']}`, answer `{f['answer'][:120]}` -> "
            f"{'pass' if f['passed'] else 'fail'} ({f['why'][:120]})"
        )
    old_hostile = previous["grader"].get("hostile", {})
    out += [
        "",
        "Grader time on hostile answers (`compare` reads at most 2,000 quantities per side; `previous` = the "
        "replaced report's grader on the same texts):",
        "",
    ]
    out.append(
        table(
            ["case", "seconds", "verdict", "explanation", "previous seconds", "previous verdict"],
            [
                [
                    k,
                    v["seconds"],
                    "pass" if v["passed"] else "fail",
                    v["why"],
                    old_hostile.get(k, {}).get("seconds", "-"),
                    {True: "pass", False: "fail"}.get(old_hostile.get(k, {}).get("passed"), "-"),
                ]
                for k, v in grader["hostile"].items()
            ],
        )
    )
    out += ["", "## Misses (ours)", ""]
    misses = [(n, r) for n, rows in results.items() for r in rows if not r["hits"]["ours"]]
    if not misses:
        out.append("None.")
    for n, r in misses:
        d = r["diagnosis"]
        out += [
            f"### {n}: {r['company']}: {r['question']}",
            "",
            f"- needs {', '.join(f'`{f}`' for f in figures(r))} ({r['group']}); missing from the reply: "
            f"{', '.join(f'`{f}`' for f in r['missing_in_reply'])}",
            (
                f"- best passage holding `{d['figure']}`: rank {d['rank']} of {d['passages']} for the whole "
                f"question, shares `{' '.join(d['terms'])}`: {d['first_line']!r}"
                if d.get("rank")
                else f"- no passage holds `{d['figure']}` (cut across a passage boundary?)"
            ),
            "",
        ]
    if missing:
        out += ["## Figures not found in the text", ""]
        out += [f"- ({n}) `{f}`: {q['question']} ({q['filing']})" for n, q, f in missing]
        out.append("")
    for name, rows in results.items():
        out += ["", f"## All questions: {name} set", ""]
        out.append(
            table(
                ["filing", "group", "question", "figures", "expected", "occurs"] + list(METHODS),
                [
                    [
                        r["company"],
                        r["group"],
                        r["question"],
                        ", ".join(figures(r)),
                        r.get("expected", ""),
                        ", ".join(map(str, r["occurrences"])),
                    ]
                    + ["hit" if r["hits"][m] else "-" for m in METHODS]
                    for r in rows
                ],
            )
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
