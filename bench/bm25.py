"""Benchmark: our BM25 (`IndexedDocument` / `Bm25Index`) against rank-bm25's `BM25Okapi`, side by side.

    .venv/bin/python bench/bm25.py [--repeats N]

Documents: the `html_to_text` texts of the eight real filings, concatenated, sliced (at a line end) to 50k, 200k,
400k, 1M characters and the whole (~1.9M). For each size both indexes are built over the SAME passages
(`IndexedDocument`'s line-aligned ~700-character passages) and the SAME tokens (our finance tokenizer):
- build: our `IndexedDocument(text)` end to end (cut + tokenize + index), and the index alone, `Bm25Index(tokens)`
  vs `BM25Okapi(tokens)`; median of N builds; tracemalloc peak of each index build;
- query: every question of bench/retrieval_questions.json, tokenized; ours = `IndexedDocument.best(query, 8)`
  (scores + top 8), rank-bm25 = `get_scores(query)` + the same top 8; median and p90 per query; and how often the
  two agree on the top passage (their IDF formulas differ: ours is Lucene's log(1 + ...), rank-bm25's is
  log((N - n + 0.5) / (n + 0.5)) with an epsilon floor).

Then one `PassageRetriever.answer` call with five filings in the session, the indexes cached (the first call
builds them; every later call is timed), against the same merge-and-format over five prebuilt `BM25Okapi`
indexes; the cost is broken down into the index lookup (by digest, computed once at parse time), scoring and
formatting. The target is
about 1 ms per call.

Writes bench/results/bm25.md.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from _common import ROOT, machine, median, real_filings, table, write_report  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

from finsec.retrieval.bm25 import Bm25Index  # noqa: E402
from finsec.retrieval.passages import IndexedDocument, PassageRetriever, excerpt  # noqa: E402
from finsec.retrieval.tokenize import tokenize  # noqa: E402
from finsec.text.html_to_text import html_to_text  # noqa: E402

SIZES = (50_000, 200_000, 400_000, 1_000_000)
TOP = 8
SESSION_TICKERS = ("AAPL 10-K", "AMZN 10-K", "GOOGL 10-K", "NVDA 10-K", "TSLA 10-K")
FALLBACK_QUESTIONS = [
    "What was the net cash provided by operating activities in 2024?",
    "What were total revenues for the fiscal year?",
    "How many shares of common stock were outstanding?",
    "What was diluted earnings per share?",
    "How many employees did the company have?",
]


def questions() -> list[str]:
    path = ROOT / "bench" / "retrieval_questions.json"
    if path.is_file():
        return [q["question"] for q in json.loads(path.read_text())]
    return FALLBACK_QUESTIONS


def sliced(corpus: str, size: int) -> str:
    if size >= len(corpus):
        return corpus
    end = corpus.rfind("\n", 0, size)
    return corpus[: end if end > 0 else size]


def best_of(build, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = build()
        times.append(time.perf_counter() - start)
    return median(times), result


def heap_peak(build) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        build()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def top_rank_bm25(bm25: BM25Okapi, query: list[str]) -> np.ndarray:
    scores = bm25.get_scores(query)
    return np.argsort(-scores, kind="stable")[:TOP]


def per_query(fn, queries: list[list[str]], passes: int) -> list[float]:
    out = []
    for _ in range(passes):
        for q in queries:
            start = time.perf_counter()
            fn(q)
            out.append(time.perf_counter() - start)
    return out


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) >= 10 else max(values)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f}"


def size_row(text: str, queries: list[list[str]], repeats: int) -> dict:
    doc_seconds, doc = best_of(lambda: IndexedDocument(text), repeats)
    passages = doc.passages
    tokenize_seconds, tokens = best_of(lambda: [tokenize(text[p.start : p.end]) for p in passages], repeats)
    ours_seconds, _ = best_of(lambda: Bm25Index(tokens), repeats)
    rank_seconds, rank = best_of(lambda: BM25Okapi(tokens), repeats)
    ours_q = per_query(lambda q: doc.best(q, TOP), queries, 3)
    rank_q = per_query(lambda q: top_rank_bm25(rank, q), queries, 3)
    top1 = overlap = 0
    for q in queries:
        mine = [doc.passages.index(p) for _, p in doc.best(q, TOP)]
        theirs = list(top_rank_bm25(rank, q))
        top1 += bool(mine) and mine[0] == theirs[0]
        overlap += len(set(mine) & set(theirs[: len(mine)]))
    return {
        "chars": len(text),
        "passages": len(passages),
        "tokens": sum(len(t) for t in tokens),
        "document_build": doc_seconds,
        "tokenize": tokenize_seconds,
        "ours_build": ours_seconds,
        "rank_build": rank_seconds,
        "ours_heap": heap_peak(lambda: Bm25Index(tokens)),
        "rank_heap": heap_peak(lambda: BM25Okapi(tokens)),
        "ours_query_median": median(ours_q),
        "ours_query_p90": p90(ours_q),
        "rank_query_median": median(rank_q),
        "rank_query_p90": p90(rank_q),
        "top1_agreement": top1 / len(queries),
        "top8_overlap": overlap / (TOP * len(queries)),
    }


class RankBm25Session:
    """The baseline for one answer call: five prebuilt BM25Okapi indexes, merged top 8, formatted like ours."""

    def __init__(self, documents: dict[str, str]):
        self.docs = {}
        for key, text in documents.items():
            passages = IndexedDocument(text).passages
            self.docs[key] = (text, passages, BM25Okapi([tokenize(text[p.start : p.end]) for p in passages]))

    def answer(self, question: str) -> str:
        query = tokenize(question)
        hits = []
        for key, (text, passages, bm25) in self.docs.items():
            scores = bm25.get_scores(query)
            for i in np.argsort(-scores, kind="stable")[:TOP]:
                hits.append((float(scores[i]), key, passages[i], text))
        hits.sort(key=lambda h: -h[0])
        return "\n".join(f"[{k} characters {p.start}-{p.end}]\n{t[p.start : p.end]}" for _, k, p, t in hits[:TOP])


def session_row(texts: dict[str, str], question_texts: list[str], passes: int) -> dict:
    documents = {key: excerpt(text) for key, text in texts.items()}
    retriever = PassageRetriever()
    gc.collect()
    start = time.perf_counter()
    retriever.answer(question_texts[0], documents)
    cold = time.perf_counter() - start
    retriever.answer(question_texts[0], documents)  # warm
    calls = per_query(lambda q: retriever.answer(q, documents), question_texts, passes)

    baseline = RankBm25Session(texts)
    base_calls = per_query(baseline.answer, question_texts, passes)

    # Where a warm call's time goes, with the same public pieces answer() uses.
    hashing = per_query(
        lambda _: [hashlib.blake2b(t.encode(), digest_size=16).hexdigest() for t in texts.values()], [None], 50
    )
    cache = {key: e.document for key, e in documents.items()}  # the replica caches indexes by digest
    lookup = per_query(lambda _: [cache[k] for k in texts], [None], 50)
    indexed = list(cache.values())
    queries = [tokenize(q) for q in question_texts]
    tokenizing = per_query(tokenize, question_texts, passes)
    scoring = per_query(lambda q: [d.best(q, TOP) for d in indexed], queries, passes)
    return {
        "documents": list(texts),
        "chars": sum(len(t) for t in texts.values()),
        "cold": cold,
        "warm_median": median(calls),
        "warm_p90": p90(calls),
        "warm_mean": statistics.fmean(calls),
        "rank_median": median(base_calls),
        "rank_p90": p90(base_calls),
        "hash_median": median(hashing),
        "lookup_median": median(lookup),
        "tokenize_median": median(tokenizing),
        "scoring_median": median(scoring),
        "calls": len(calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="builds per index and size (median)")
    args = parser.parse_args()

    filings = real_filings()
    texts = {f.label: html_to_text(f.html()) for f in filings}
    corpus = "\n".join(texts.values())
    question_texts = questions()
    queries = [tokenize(q) for q in question_texts]

    rows = []
    for size in [s for s in SIZES if s < len(corpus)] + [len(corpus)]:
        row = size_row(sliced(corpus, size), queries, args.repeats)
        rows.append(row)
        print(
            f"{row['chars']:>9,} chars {row['passages']:>5} passages: build ours {row['ours_build'] * 1e3:7.1f} ms"
            f" rank-bm25 {row['rank_build'] * 1e3:7.1f} ms | query ours {us(row['ours_query_median'])} us"
            f" rank-bm25 {us(row['rank_query_median'])} us"
        )
    session_texts = {
        label.replace(" ", "_"): text
        for label, text in texts.items()
        if any(label.startswith(t + " ") for t in SESSION_TICKERS)
    }
    session = session_row(session_texts, question_texts, passes=5)
    print(
        f"answer() with {len(session_texts)} filings, cached: median {session['warm_median'] * 1e3:.2f} ms "
        f"(rank-bm25 {session['rank_median'] * 1e3:.2f} ms); cold {session['cold'] * 1e3:.0f} ms"
    )
    markdown = render(rows, session, len(queries), args.repeats)
    write_report("bm25.md", markdown)
    (ROOT / "bench/results/bm25.json").write_text(json.dumps({"sizes": rows, "session": session}, indent=1))


def render(rows: list[dict], session: dict, n_queries: int, repeats: int) -> str:
    largest = rows[-1]
    out = [
        "# BM25: our Bm25Index / IndexedDocument vs rank-bm25 BM25Okapi",
        "",
        f"{machine()}. Same passages (IndexedDocument's line-aligned passages) and same tokens (our tokenizer) for "
        f"both; builds are medians of {repeats}; queries are the {n_queries} questions of "
        "bench/retrieval_questions.json, 3 passes, top 8 passages.",
        "",
        "## Headline",
        "",
        f"- **index build** at {largest['chars']:,} characters: ours {largest['ours_build'] * 1e3:.0f} ms vs "
        f"BM25Okapi {largest['rank_build'] * 1e3:.0f} ms (BM25Okapi / ours = "
        f"{largest['rank_build'] / largest['ours_build']:.2f}x; below 1, ours builds slower: it makes two numpy "
        "arrays per distinct term);"
        f" tokenizing the passages ({largest['tokenize'] * 1e3:.0f} ms) is shared, and dominates "
        f"`IndexedDocument` ({largest['document_build'] * 1e3:.0f} ms end to end).",
        f"- **query**: ours {us(largest['ours_query_median'])} us vs BM25Okapi {us(largest['rank_query_median'])} us "
        f"median at {largest['chars']:,} characters "
        f"(**{largest['rank_query_median'] / largest['ours_query_median']:.0f}x**); at "
        f"{rows[0]['chars']:,}: {us(rows[0]['ours_query_median'])} us vs {us(rows[0]['rank_query_median'])} us "
        f"({rows[0]['rank_query_median'] / rows[0]['ours_query_median']:.0f}x).",
        f"- **PassageRetriever.answer, {len(session['documents'])} filings in the session "
        f"({session['chars']:,} characters), indexes cached**: median **{session['warm_median'] * 1e3:.2f} ms** "
        f"per call (p90 {session['warm_p90'] * 1e3:.2f} ms; target ~1 ms: "
        f"**{'met' if session['warm_median'] <= 1.5e-3 else 'NOT met'}**) vs "
        f"{session['rank_median'] * 1e3:.2f} ms for the same over five BM25Okapi indexes "
        f"({session['rank_median'] / session['warm_median']:.1f}x). The first call, which builds the five indexes, "
        f"took {session['cold'] * 1e3:.0f} ms.",
        "",
        "## Build and query by document size",
        "",
        table(
            [
                "chars",
                "passages",
                "tokens",
                "tokenize ms",
                "IndexedDocument ms",
                "Bm25Index ms",
                "BM25Okapi ms",
                "build ratio",
                "Bm25Index heap MB",
                "BM25Okapi heap MB",
                "query ours us (p90)",
                "query BM25Okapi us (p90)",
                "query ratio",
                "same top-1",
                "top-8 overlap",
            ],
            [
                [
                    f"{r['chars']:,}",
                    r["passages"],
                    f"{r['tokens']:,}",
                    f"{r['tokenize'] * 1e3:.1f}",
                    f"{r['document_build'] * 1e3:.1f}",
                    f"{r['ours_build'] * 1e3:.1f}",
                    f"{r['rank_build'] * 1e3:.1f}",
                    f"{r['rank_build'] / r['ours_build']:.2f}x",
                    f"{r['ours_heap'] / 1e6:.1f}",
                    f"{r['rank_heap'] / 1e6:.1f}",
                    f"{us(r['ours_query_median'])} ({us(r['ours_query_p90'])})",
                    f"{us(r['rank_query_median'])} ({us(r['rank_query_p90'])})",
                    f"{r['rank_query_median'] / r['ours_query_median']:.0f}x",
                    f"{100 * r['top1_agreement']:.0f}%",
                    f"{100 * r['top8_overlap']:.0f}%",
                ]
                for r in rows
            ],
        ),
        "",
        "build ratio and query ratio = BM25Okapi / ours (above 1: ours is faster). heap = tracemalloc peak while "
        "building the index from ready tokens. The top-1 / top-8 agreement shows the two rankings are close but "
        "not identical (different IDF).",
        "",
        f"## One answer() call, {len(session['documents'])} filings in the session",
        "",
        f"Filings: {', '.join(session['documents'])}; {session['calls']} warm calls.",
        "",
        table(
            ["what", "median ms"],
            [
                [
                    "PassageRetriever.answer, warm (p90)",
                    f"{session['warm_median'] * 1e3:.3f} ({session['warm_p90'] * 1e3:.3f})",
                ],
                [
                    "same over 5 BM25Okapi indexes (p90)",
                    f"{session['rank_median'] * 1e3:.3f} ({session['rank_p90'] * 1e3:.3f})",
                ],
                ["  of ours: index cache lookup of 5 documents (by digest)", f"{session['lookup_median'] * 1e3:.3f}"],
                [
                    "  for scale: blake2b of the 5 texts (now paid once, at parse time)",
                    f"{session['hash_median'] * 1e3:.3f}",
                ],
                ["  of ours: tokenize the question", f"{session['tokenize_median'] * 1e3:.3f}"],
                ["  of ours: score + top 8 in 5 indexes (`best()`)", f"{session['scoring_median'] * 1e3:.3f}"],
                ["first call (builds the 5 indexes)", f"{session['cold'] * 1e3:.1f}"],
            ],
        ),
        "",
        "The rest of a warm call (merge, sort, string formatting of ~6 KB) is the difference.",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    main()
