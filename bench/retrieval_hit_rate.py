"""Retrieval quality: does `PassageRetriever.answer` put the answer in front of the agent?

    .venv/bin/python bench/retrieval_hit_rate.py

For each question of bench/retrieval_questions.json the filing is reduced to text with `html_to_text`, and
`PassageRetriever().answer(question, {"filing": excerpt(text)})` is called. A question is a hit when the FIRST 8,000
characters of the reply contain the answer string (as a standalone number: `1.08` does not match inside `11.08`).

Side by side, on the same texts, questions and 8,000-character budget:
- `ours k=12`: PassageRetriever(top_passages=12), still cut to 8,000 characters (8 passages leave ~30% of the
  budget unused);
- `first 8k`: the first 8,000 characters of the document (what a reader gets without search);
- `bm25 windows/ws`: rank-bm25's BM25Okapi over fixed 700-character windows, whitespace tokens, best 8 windows
  (the naive baseline);
- `bm25 windows/fin`: the same windows with our finance tokenizer (separates the tokenizer's effect from the
  passage cutting's).
And `ours, 8 filings in session`: the same call with all eight filings in `documents` (as when an agent names
several keys); a hit counts only in passages of the question's own filing.

First the script re-checks that every answer string occurs in its filing's text and reports any that do not.
For each miss of ours it lists the top passage's first line and where the passage holding the answer ranked,
with the query terms it shares, so the cause of the miss can be read off.

Writes bench/results/retrieval_hit_rate.md.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, real_filings, table, write_report  # noqa: E402

from rank_bm25 import BM25Okapi  # noqa: E402

from deployments.retrieval.passages import IndexedDocument, PassageRetriever, excerpt  # noqa: E402
from deployments.retrieval.tokenize import tokenize  # noqa: E402
from deployments.text.html_to_text import html_to_text  # noqa: E402

QUESTIONS = ROOT / "bench" / "retrieval_questions.json"
BUDGET = 8000
WINDOW = 700
TOP = 8  # passages in a reply: PassageRetriever's default, and the baselines' window count
WIDE = 12  # a wider reply, still cut to the budget: does filling the 8,000 characters help?
CATEGORIES = ("cover", "statement", "prose")


def contains(text: str, answer: str) -> bool:
    """The answer as a standalone string: not inside a longer number (`1.08` in `11.08`, `5,833` in `25,833`)."""
    return re.search(r"(?<![\d.,])" + re.escape(answer) + r"(?![\d]|[.,]\d)", text) is not None


def count(text: str, answer: str) -> int:
    return len(re.findall(r"(?<![\d.,])" + re.escape(answer) + r"(?![\d]|[.,]\d)", text))


class WindowBaseline:
    """BM25Okapi over fixed, non-overlapping 700-character windows; the reply is the best 8 windows (as many as
    our passages), best first, cut to the budget."""

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


def reply_passages(reply: str) -> list[str]:
    """The passages of a PassageRetriever reply, best first."""
    return re.split(r"\n\[[^\]\n]* characters \d+-\d+\]\n", reply)[1:]


def keyed_passages(reply: str) -> list[tuple[str, str]]:
    """(key, passage) pairs of a PassageRetriever reply, best first."""
    parts = re.split(r"\n\[([^\]\n]*) characters \d+-\d+\]\n", reply)
    return list(zip(parts[1::2], parts[2::2]))


def diagnose(indexed: IndexedDocument, question: str, answer: str) -> dict:
    """Where the passages holding the answer rank, their scores and the query terms they share."""
    query = tokenize(question)
    scores = indexed.index.scores(query)
    ranking = sorted(range(len(indexed.passages)), key=lambda i: -scores[i])
    rank_of = {p: r for r, p in enumerate(ranking)}
    holders = [i for i, p in enumerate(indexed.passages) if contains(indexed.text[p.start : p.end], answer)]
    best = min(holders, key=lambda i: rank_of[i]) if holders else None
    top = ranking[0]

    def terms(i: int) -> list[str]:
        tokens = set(tokenize(indexed.text[indexed.passages[i].start : indexed.passages[i].end]))
        return [t for t in dict.fromkeys(query) if t in tokens]

    def first_line(i: int) -> str:
        p = indexed.passages[i]
        return indexed.text[p.start : p.end].split("\n", 1)[0][:160]

    return {
        "query": query,
        "passages": len(indexed.passages),
        "holders": len(holders),
        "answer_rank": rank_of[best] + 1 if best is not None else None,
        "answer_score": float(scores[best]) if best is not None else None,
        "answer_terms": terms(best) if best is not None else [],
        "answer_first_line": first_line(best) if best is not None else "",
        "answer_chars": (indexed.passages[best].end - indexed.passages[best].start) if best is not None else 0,
        "top_score": float(scores[top]),
        "top_terms": terms(top),
        "top_first_line": first_line(top),
        "top_chars": indexed.passages[top].end - indexed.passages[top].start,
    }


def main() -> None:
    filings = {f.url_path: f for f in real_filings()}
    questions = json.loads(QUESTIONS.read_text())
    texts = {}
    for url_path in dict.fromkeys(q["filing"] for q in questions):
        if url_path not in filings:
            print(f"question filing {url_path} is not in MANIFEST.json")
            raise SystemExit(1)
        texts[url_path] = html_to_text(filings[url_path].html())

    missing_answers = [q for q in questions if not contains(texts[q["filing"]], q["answer"])]
    for q in missing_answers:
        print(f"ANSWER NOT IN TEXT: {q['answer']!r} for {q['question']!r} ({q['filing']})")

    retriever = PassageRetriever()
    keys = {url: filings[url].label.replace(" ", "_") for url in texts}
    indexed = {url: excerpt(text) for url, text in texts.items()}
    session = {keys[url]: indexed[url] for url in texts}
    baselines = {
        url: {"bm25 windows/ws": WindowBaseline(t, whitespace), "bm25 windows/fin": WindowBaseline(t, tokenize)}
        for url, t in texts.items()
    }
    wide = PassageRetriever(top_passages=WIDE)
    methods = ("ours", f"ours k={WIDE}", "ours, 8 filings in session", "first 8k", "bm25 windows/ws",
               "bm25 windows/fin")
    results = []
    for q in questions:
        text = texts[q["filing"]]
        reply = retriever.answer(q["question"], {"filing": indexed[q["filing"]]})
        passages = reply_passages(reply)
        hit_rank = next((i + 1 for i, p in enumerate(passages) if contains(p, q["answer"])), None)
        multi = keyed_passages(retriever.answer(q["question"], session)[:BUDGET])
        own = keys[q["filing"]]
        row = {
            **q,
            "company": filings[q["filing"]].label,
            "occurrences": count(text, q["answer"]),
            "hits": {
                "ours": contains(reply[:BUDGET], q["answer"]),
                f"ours k={WIDE}": contains(wide.answer(q["question"], {"filing": indexed[q["filing"]]})[:BUDGET], q["answer"]),
                "ours, 8 filings in session": any(k == own and contains(p, q["answer"]) for k, p in multi),
                "first 8k": contains(text[:BUDGET], q["answer"]),
                **{name: contains(b.reply(q["question"]), q["answer"]) for name, b in baselines[q["filing"]].items()},
            },
            "hit_rank": hit_rank,
            "reply_chars": len(reply),
            "passages_in_budget": sum(1 for _ in reply_passages(reply[:BUDGET])),
            "session_own_passages": sum(k == own for k, _ in multi),
            "session_passages": len(multi),
            "session_keys": [k for k, _ in multi],
        }
        if not row["hits"]["ours"]:
            row["diagnosis"] = diagnose(indexed[q["filing"]].document, q["question"], q["answer"])
        results.append(row)
        print(f"{'HIT ' if row['hits']['ours'] else 'MISS'} {row['company']:24s} {q['question']}")
    markdown = render(results, methods, missing_answers)
    write_report("retrieval_hit_rate.md", markdown)
    (ROOT / "bench/results/retrieval_hit_rate.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(markdown.split("## Misses")[0])


def rate(rows: list[dict], method: str) -> str:
    hits = sum(r["hits"][method] for r in rows)
    return f"{hits}/{len(rows)} ({100 * hits / len(rows):.0f}%)" if rows else "-"


def render(results: list[dict], methods: tuple[str, ...], missing_answers: list[dict]) -> str:
    by_category = defaultdict(list)
    for r in results:
        by_category[r["category"]].append(r)
    ours = sum(r["hits"]["ours"] for r in results)
    out = [
        "# Retrieval hit rate: PassageRetriever vs naive baselines",
        "",
        f"{machine()}. {len(results)} questions over {len({r['filing'] for r in results})} real filings "
        f"(bench/retrieval_questions.json). Hit = the answer string occurs, as a standalone number, in the first "
        f"{BUDGET:,} characters of the reply. Baseline windows: the best {TOP}, like ours. `ours k={WIDE}` = "
        f"PassageRetriever(top_passages={WIDE}), cut to the same budget.",
        "",
        "## Headline",
        "",
        f"- **ours: {rate(results, 'ours')}**; first 8k of the document: {rate(results, 'first 8k')}; "
        f"BM25Okapi over 700-char windows, whitespace tokens: {rate(results, 'bm25 windows/ws')}; "
        f"same windows with our tokenizer: {rate(results, 'bm25 windows/fin')}; ours with {WIDE} passages "
        f"(same budget): {rate(results, f'ours k={WIDE}')}.",
        f"- ours with all eight filings in the session (hit only in the question's own filing): "
        f"**{rate(results, 'ours, 8 filings in session')}**.",
    ]
    for base in ("first 8k", "bm25 windows/ws"):
        other = sum(r["hits"][base] for r in results)
        out.append(f"- ours / {base} = {ours}/{other} = {ours / other:.2f}x" if other else f"- {base}: no hits")
    if missing_answers:
        out.append(f"- **{len(missing_answers)} answers do not occur in their filing's text** (listed below).")
    else:
        out.append("- Every answer string was re-checked and occurs in its filing's `html_to_text` output.")
    out += ["", "## By category", ""]
    out.append(
        table(
            ["category", "n"] + list(methods),
            [[c, len(by_category[c])] + [rate(by_category[c], m) for m in methods] for c in CATEGORIES]
            + [["all", len(results)] + [rate(results, m) for m in methods]],
        )
    )
    ranks = [r["hit_rank"] for r in results if r["hit_rank"]]
    out += [
        "",
        f"Rank of the first passage holding the answer, when ours hit: "
        + ", ".join(f"#{k}: {ranks.count(k)}" for k in sorted(set(ranks)))
        + f". Mean reply length {sum(r['reply_chars'] for r in results) / len(results):,.0f} characters; "
        f"mean passages within the first {BUDGET:,} characters "
        f"{sum(r['passages_in_budget'] for r in results) / len(results):.1f}.",
        "",
        "## Misses (ours)",
        "",
    ]
    misses = [r for r in results if not r["hits"]["ours"]]
    if not misses:
        out.append("None.")
    for r in misses:
        d = r["diagnosis"]
        out += [
            f"### {r['company']}: {r['question']}",
            "",
            f"- answer `{r['answer']}` ({r['category']}; occurs {r['occurrences']}x in the text); "
            f"baselines: " + ", ".join(f"{m} {'hit' if r['hits'][m] else 'miss'}" for m in methods[1:]),
            f"- query tokens: `{' '.join(d['query'])}`",
            f"- top passage (score {d['top_score']:.2f}, {d['top_chars']} chars, shares "
            f"`{' '.join(d['top_terms'])}`): {d['top_first_line']!r}",
            (
                f"- best passage holding the answer: rank {d['answer_rank']} of {d['passages']} "
                f"(score {d['answer_score']:.2f}, {d['answer_chars']} chars, shares `{' '.join(d['answer_terms'])}`;"
                f" {d['holders']} passages hold it): {d['answer_first_line']!r}"
                if d["answer_rank"]
                else "- no passage holds the answer (cut across a passage boundary?)"
            ),
            "",
        ]
    session_misses = [r for r in results if not r["hits"]["ours, 8 filings in session"]]
    out += [
        "## Misses with all eight filings in the session",
        "",
        "Passages of the question's own filing among those within the budget, and which filings took the slots.",
        "",
        table(
            ["filing", "question", "answer", "hit alone", "own passages", "slots taken by"],
            [
                [
                    r["company"], r["question"], r["answer"], "hit" if r["hits"]["ours"] else "-",
                    f"{r['session_own_passages']}/{r['session_passages']}",
                    ", ".join(f"{k} x{n}" for k, n in Counter(r["session_keys"]).most_common()),
                ]
                for r in session_misses
            ],
        )
        if session_misses
        else "None.",
        "",
    ]
    if missing_answers:
        out += ["## Answers not found in the text", ""]
        out += [f"- `{q['answer']}`: {q['question']} ({q['filing']})" for q in missing_answers]
        out.append("")
    out += ["## All questions", ""]
    out.append(
        table(
            ["filing", "category", "question", "answer", "occurs"] + list(methods) + ["rank"],
            [
                [r["company"], r["category"], r["question"], r["answer"], r["occurrences"]]
                + ["hit" if r["hits"][m] else "-" for m in methods]
                + [r["hit_rank"] or "-"]
                for r in results
            ],
        )
    )
    return "\n".join(out)


if __name__ == "__main__":
    main()
