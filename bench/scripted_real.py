"""The scripted policy as an honest baseline on real filings: every question of bench/real_questions.py (answers
from the filings' own inline XBRL) played once through the HTTP contract against the app serving
../shared/data/edgar-real as its mirror, graded by the deterministic grader. Reports the mean reward by question
kind, and each episode's submission beside the expected answer.

    .venv/bin/python bench/scripted_real.py          # ~1 minute; writes bench/results/scripted_real.{md,json}
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict

from _common import DATA, RESULTS, machine, write_report
from real_questions import questions


def play(rows: list[dict]) -> list[dict]:
    """Each question once, through the in-process app on a loopback port (the scripted policy's tool calls are
    the same over Serve; this measures the policy, not the server)."""
    from deployments.inprocess import in_process_app
    from deployments.settings import Settings
    from finsec_client.runner import RunPlan, new_run_id, run_episodes
    from finsec_client.tasks import Task
    from finsec_client.threaded_server import ThreadedServer

    settings = Settings(app_name="scripted-real", num_shards=1, corpus_dir=DATA)
    tasks = tuple(Task(i, "edgar-real", row["task_id"], row["question"], row["expected_answer"], row)
                  for i, row in enumerate(rows))
    records = []
    with ThreadedServer(in_process_app(settings).api, lifespan="on") as server:
        plan = RunPlan(server.url, tasks, len(tasks), 4, run_id=new_run_id(), request_timeout=120)
        asyncio.run(run_episodes(plan, range(len(tasks)), records.append))
    return [{**rows[r.task_index], "reward": r.reward, "final_answer": r.final_answer, "tools": r.tools,
             "failure": r.failure and r.failure.detail} for r in sorted(records, key=lambda r: r.task_index)]


def render(results: dict) -> str:
    played = results["episodes"]
    by_kind: dict[str, list[float]] = defaultdict(list)
    for row in played:
        by_kind[row["kind"]].append(row["reward"] or 0.0)
    mean = statistics.mean(row["reward"] or 0.0 for row in played)
    lines = ["# The scripted policy on real filings", "",
             f"{results['machine']}; {results['ran_at']}. Produced by `.venv/bin/python bench/scripted_real.py`: "
             f"{len(played)} questions over the eight filings of `../shared/data/edgar-real`, answers read from "
             "the filings' inline XBRL (bench/real_questions.py), each played once by the scripted policy through "
             "the HTTP contract and graded by the deterministic grader.", "",
             f"**Mean reward {mean:.2f}** over {len(played)} questions.", "",
             "| question kind | questions | mean reward |", "|---|---|---|"]
    for kind, rewards in sorted(by_kind.items()):
        lines.append(f"| {kind} | {len(rewards)} | {statistics.mean(rewards):.2f} |")
    lines += ["", "| question | expected | submitted | reward |", "|---|---|---|---|"]
    for row in played:
        lines.append(f"| {row['question']} | {row['expected_answer']} | {(row['final_answer'] or '-')[:80]} | "
                     f"{row['reward'] if row['reward'] is not None else row['failure']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    if not (DATA / "MANIFEST.json").is_file():
        print(f"no real filings at {DATA}: nothing to measure")
        return
    began = time.monotonic()
    played = play(questions())
    results = {"machine": machine(), "ran_at": time.strftime("%Y-%m-%d %H:%M"), "episodes": played,
               "seconds": time.monotonic() - began}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scripted_real.json").write_text(json.dumps(results, indent=1))
    print(write_report("scripted_real.md", render(results)) and render(results), file=sys.stdout)


if __name__ == "__main__":
    main()
