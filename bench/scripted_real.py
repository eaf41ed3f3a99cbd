"""The scripted policy on tasks built from real filings: the tasks finsec/taskgen builds from the inline XBRL of
the filings in ../shared/data/edgar-real, played through the HTTP contract against the in-process app serving
that folder as its mirror, and graded by the deterministic grader.

The policy was tuned on some companies (`--companies`, AAPL,AMZN,GOOGL by default) and is measured as well on
companies it never saw (`--held-out`, NVDA,TSLA by default). The report gives the mean reward of each set, per
task kind, and the failures by kind (submitted beside expected).

    .venv/bin/python bench/scripted_real.py                       # both sets; ~20 seconds on 2 cores
    .venv/bin/python bench/scripted_real.py --held-out ""         # the tuning set only, while tuning
    .venv/bin/python bench/scripted_real.py --per-kind 20 --seed 1  # at most 20 tasks per kind and set
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shlex
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from _common import DATA, RESULTS, machine

DEFAULT_TUNING = "AAPL,AMZN,GOOGL"
DEFAULT_HELD_OUT = "NVDA,TSLA"
KINDS = ("cover", "line_item", "segment", "change", "ratio")
# The held-out set's earlier measurements, oldest first: each is spent once it is seen, so the report counts them.
PREVIOUS_HELD_OUT = (("round one (285ceb2)", 0.66),)


def build(tickers: set[str]) -> list[dict]:
    """Every task the builder makes from the manifest's filings of these companies."""
    from finsec.taskgen.build import Source, build_tasks

    out = []
    for row in json.loads((DATA / "MANIFEST.json").read_text()):
        if row["ticker"] not in tickers:
            continue
        source = Source(
            str(row["cik"]).zfill(10),
            row["ticker"],
            row["form"],
            row["accession_number"],
            "https://www.sec.gov/" + row["url_path"],
            row["filing_date"],
        )
        out += build_tasks(source, (DATA / row["url_path"]).read_text(errors="replace")).tasks
    return out


def sample(tasks: list[dict], per_kind: int | None, seed: int) -> list[dict]:
    """At most `per_kind` tasks of each kind, drawn with a fixed seed; all of them without a limit."""
    if not per_kind:
        return tasks
    rng = random.Random(seed)
    out = []
    for kind in KINDS:
        of_kind = [t for t in tasks if t["kind"] == kind]
        out += of_kind if len(of_kind) <= per_kind else rng.sample(of_kind, per_kind)
    return out


def play(rows: list[dict], concurrency: int) -> list[dict]:
    """Each task once, through the in-process app on a loopback port (the scripted policy's tool calls are the
    same over Serve; this measures the policy, not the server). The policy sees the question and the hints
    `ticker` and `form` only (Task.hint); the rest of the row goes to /verify."""
    from deployments.inprocess import in_process_app
    from deployments.settings import Settings
    from finsec_client.runner import RunPlan, new_run_id, run_episodes
    from finsec_client.tasks import Task
    from finsec_client.threaded_server import ThreadedServer

    if not rows:
        return []
    settings = Settings(app_name="scripted-real", num_shards=1, corpus_dir=DATA)
    tasks = tuple(
        Task(i, "edgar-real", row["task_id"], row["question"], row["expected_answer"], row)
        for i, row in enumerate(rows)
    )
    records = []
    with ThreadedServer(in_process_app(settings).api, lifespan="on") as server:
        plan = RunPlan(server.url, tasks, len(tasks), concurrency, run_id=new_run_id(), request_timeout=120)
        asyncio.run(run_episodes(plan, range(len(tasks)), records.append))
    keep = ("task_id", "ticker", "form", "kind", "question", "expected_answer")
    return [
        {
            **{k: rows[r.task_index][k] for k in keep},
            "reward": r.reward,
            "final_answer": r.final_answer,
            "tools": r.tools,
            "failure": r.failure and r.failure.detail,
        }
        for r in sorted(records, key=lambda r: r.task_index)
    ]


def summary(played: list[dict]) -> dict:
    by_kind: dict[str, list[float]] = defaultdict(list)
    for row in played:
        by_kind[row["kind"]].append(row["reward"] or 0.0)
    rewards = [row["reward"] or 0.0 for row in played]
    return {
        "episodes": len(played),
        "mean": statistics.mean(rewards) if rewards else None,
        "by_kind": {k: {"episodes": len(v), "mean": statistics.mean(v)} for k, v in sorted(by_kind.items())},
    }


def _cell(text: str | None, width: int = 90) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")[:width]


def render(results: dict) -> str:
    lines = [
        "# The scripted policy on tasks built from real filings",
        "",
        f"{results['machine']}; {results['ran_at']}; {results['seconds']:.0f} s.",
        "",
        f"    {results['command']}",
        "",
        "Tasks built by finsec/taskgen from the inline XBRL of the filings in `../shared/data/edgar-real`, "
        "each played once by the scripted policy through the HTTP contract (in-process app, concurrency "
        f"{results['concurrency']}) and graded by the deterministic grader. The policy was tuned on the "
        "tuning companies only; the held-out companies' tasks were not looked at while it was changed.",
        "",
    ]
    if results.get("per_kind"):
        lines += [f"At most {results['per_kind']} tasks of each kind per set, drawn with seed {results['seed']}.", ""]
    if (held := results["sets"].get("held-out")) and not results.get("per_kind"):
        earlier = "; ".join(f"{mean:.2f} after {name}" for name, mean in PREVIOUS_HELD_OUT)
        lines += [
            f"The held-out set has now been measured {len(PREVIOUS_HELD_OUT) + 1} times: {earlier}; "
            f"{held['summary']['mean']:.2f} after this round. Between the measurements only the tuning "
            "companies' tasks and failures were used to change the policy.",
            "",
        ]
    lines += ["| set | companies | tasks | mean reward |", "|---|---|---|---|"]
    for name, part in results["sets"].items():
        s = part["summary"]
        mean = "-" if s["mean"] is None else f"**{s['mean']:.2f}**"
        lines.append(f"| {name} | {', '.join(part['companies'])} | {s['episodes']} | {mean} |")
    lines += [
        "",
        "| kind | " + " | ".join(f"{n} tasks | {n} mean" for n in results["sets"]) + " |",
        "|---|" + "---|---|" * len(results["sets"]),
    ]
    for kind in KINDS:
        cells = []
        for part in results["sets"].values():
            k = part["summary"]["by_kind"].get(kind)
            cells += [str(k["episodes"]), f"{k['mean']:.2f}"] if k else ["0", "-"]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    for name, part in results["sets"].items():
        failed = [row for row in part["episodes"] if (row["reward"] or 0.0) < 1.0]
        lines += ["", f"## Failures: {name} ({len(failed)} of {len(part['episodes'])})"]
        for kind in KINDS:
            rows = [row for row in failed if row["kind"] == kind]
            if not rows:
                continue
            lines += ["", f"### {kind} ({len(rows)})", "", "| question | expected | submitted |", "|---|---|---|"]
            for row in rows:
                submitted = row["final_answer"] if row["reward"] is not None else f"(failed: {row['failure']})"
                lines.append(
                    f"| {_cell(row['question'], 160)} | {_cell(row['expected_answer'])} | {_cell(submitted)} |"
                )
    return "\n".join(lines) + "\n"


def _tickers(text: str) -> list[str]:
    return [t.strip().upper() for t in text.split(",") if t.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--companies", default=DEFAULT_TUNING, help="the tuning companies' tickers")
    parser.add_argument(
        "--held-out", default=DEFAULT_HELD_OUT, help="companies the policy was not tuned on ('' for none)"
    )
    parser.add_argument("--per-kind", type=int, default=0, help="at most this many tasks per kind and set (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", default=str(RESULTS / "scripted_real"), help="the report's path, without .md/.json")
    args = parser.parse_args()
    if not (DATA / "MANIFEST.json").is_file():
        print(f"SKIP: no real filings at {DATA}: nothing to measure")
        return
    began = time.monotonic()
    sets = {"tuning": _tickers(args.companies), "held-out": _tickers(args.held_out)}
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "concurrency": args.concurrency,
        "command": ".venv/bin/python bench/scripted_real.py " + shlex.join(sys.argv[1:]),
        "per_kind": args.per_kind,
        "seed": args.seed,
        "sets": {},
    }
    for name, tickers in sets.items():
        if not tickers:
            continue
        rows = sample(build(set(tickers)), args.per_kind, args.seed)
        played = play(rows, args.concurrency)
        results["sets"][name] = {"companies": tickers, "summary": summary(played), "episodes": played}
        print(f"{name}: {summary(played)}", file=sys.stderr)
    results["seconds"] = time.monotonic() - began
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    out.with_suffix(".md").write_text(render(results))
    print(f"report written to {out}.md")


if __name__ == "__main__":
    main()
