"""Reward hacking against the deterministic grader: adversarial answers must earn 0, honest paraphrases 1.

    .venv/bin/python bench/reward_hacking.py        # a few seconds; writes bench/results/reward_hacking.md and .json

The answers are built over the project's own questions: bench/retrieval_questions.json,
bench/retrieval_questions_hard.json, the embedded corpus's questions (`finsec.corpus.generate.questions`, what
`finsec corpus questions` prints), and text questions on the corpus's issuers (state of incorporation, line of
business and name: facts its filings state). Each is graded by `DeterministicGrader().grade_sync` with its default
answer cap, as /verify grades.

Adversarial classes (caught = reward 0; "named" = the explanation names the cause): text shotgun, negation, sign,
flood, hedge, label swap, scale, injection, over-long. Honest classes (must pass): other units, in a sentence,
labelled context, signed in words, reordered parts, other date forms, text in a sentence, and analyst prose
(hand-written answers to the same questions, as a model would write them). Then the time to grade a 1 MB
answer (median of several runs) through the grader, and through `compare` alone (no cap), for context.

The suite and the report's tables live in harness/reward_hacking.py; `tests/unit/harness/test_reward_hacking.py` runs the
same `suite()` and asserts 100% on both sides. No real filings needed.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, write_report  # noqa: E402

from finsec.grading.deterministic import MAX_ANSWER_CHARS, DeterministicGrader, compare  # noqa: E402
from harness.reward_hacking import grade, one_megabyte, report, suite, summary  # noqa: E402

RESULTS_JSON = ROOT / "bench" / "results" / "reward_hacking.json"


def timing(runs: int = 7) -> dict:
    answer, grader = one_megabyte(), DeterministicGrader()
    out = {}
    at_cap = answer[:MAX_ANSWER_CHARS]
    for name, fn, n in (
        ("grader (cap 4,000 characters)", lambda: grader.grade_sync("q", "$115,877 million", answer), runs),
        (
            "grader, an answer at the cap: number expected",
            lambda: grader.grade_sync("q", "$115,877 million", at_cap),
            runs,
        ),
        ("grader, an answer at the cap: text expected", lambda: grader.grade_sync("q", "Delaware", at_cap), runs),
        ("compare, no cap: number expected", lambda: compare("$115,877 million", answer), 3),
        ("compare, no cap: text expected", lambda: compare("Delaware", answer), 3),
    ):
        seconds = []
        for _ in range(n):
            start = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - start)
        out[name] = {"median_ms": round(statistics.median(seconds) * 1000, 3), "runs": n}
    return out


def main() -> None:
    rows = grade(suite())
    times = timing()
    write_report("reward_hacking.md", report(rows, times))
    RESULTS_JSON.write_text(
        json.dumps(
            {
                "when": machine(),
                "summary": summary(rows),
                "timing": times,
                "cases": [{**r, "answer": r["answer"][:500]} for r in rows],
            },
            indent=1,
        )
    )
    counts = summary(rows)
    for side in ("adversarial", "honest"):
        right = sum(v["right"] for v in counts[side].values())
        total = sum(v["cases"] for v in counts[side].values())
        print(f"{side}: {right}/{total} graded as intended")
    print(f"1 MB answer through the grader: {times['grader (cap 4,000 characters)']['median_ms']} ms (median)")


if __name__ == "__main__":
    main()
