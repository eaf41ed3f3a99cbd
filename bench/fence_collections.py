"""What a shard's fences cost its garbage collector: this tree against `--before`, side by side.

    .venv/bin/python bench/fence_collections.py --before e582eff      # ~5 min; results/fence_collections.{md,json}

A shard holds the fence of every closed session for fence_ttl_seconds (6 h by default): at 1,000 episodes a
second over 16 shards, about 60 a second a shard, over a million. A full collection walks every object the
collector tracks while the shard's loop waits. For each tree and fence count, a fresh process (its own
interpreter, the tree's code) plays whole episodes on one `SessionCore` (seed, close; the shell's writes taken
every 1,000, as the shard's group commits take them), then times five full collections, repeated closes of held
fences (each reads its fence back), and counts the objects the collector tracks and the resident memory grown.
Rounds interleave the two trees, the order reversed every other round (this machine drifts between passes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, commit_tree, machine, table, write_report  # noqa: E402

# Run in a fresh interpreter with PYTHONPATH set to the tree measured; prints one JSON object.
_MEASURE = """
import gc, json, resource, statistics, sys, time
from session_store.core import EpisodeSeed, SessionCore

fences = int(sys.argv[1])
core = SessionCore(session_ttl_seconds=3600, fence_ttl_seconds=6 * 3600)
gc.collect()
tracked, kb = len(gc.get_objects()), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.process_time()
for n in range(fences):
    episode = {"rollout_id": f"rollout-{n:08d}", "attempt": 0}
    sid = f"resources-session-{n:032x}"
    core.seed_episode(sid, EpisodeSeed(episode, {"taskset": "finance", "task_id": "t1"}, "0" * 64))
    core.close(sid, episode)
    if n % 1000 == 999:
        core.take_changes()
core.take_changes()
episode_us = 1e6 * (time.process_time() - began) / fences
collections = []
for _ in range(5):
    began = time.perf_counter()
    gc.collect()
    collections.append(1e3 * (time.perf_counter() - began))
held = range(0, fences, max(1, fences // 10_000))
began = time.process_time()
for n in held:
    core.close(f"resources-session-{n:032x}", {"rollout_id": f"rollout-{n:08d}", "attempt": 0})
repeat_us = 1e6 * (time.process_time() - began) / len(held)
print(json.dumps({
    "fences": core.stats()["fences"],
    "episode_us": episode_us,
    "full_collection_ms": statistics.median(collections),
    "repeated_close_us": repeat_us,
    "tracked_per_fence": (len(gc.get_objects()) - tracked) / fences,
    "bytes_per_fence": 1024 * (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - kb) / fences,
}))
"""


def _measure(tree: Path, fences: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # and run in it: `-c` puts the working directory first
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(fences)], cwd=tree, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout)


def render(results: dict) -> str:
    rows = []
    for fences in results["fences"]:
        for tree in ("before", "this"):
            runs = [p for p in results["points"] if p["tree"] == tree and p["fences"] == fences]

            def median(key: str, runs: list[dict] = runs) -> float:
                return statistics.median(p[key] for p in runs)

            def span(key: str, runs: list[dict] = runs) -> str:
                return f"{min(p[key] for p in runs):.0f}-{max(p[key] for p in runs):.0f}"

            rows.append(
                [
                    f"{fences:,}",
                    results["trees"][tree],
                    f"{median('full_collection_ms'):.0f} ({span('full_collection_ms')})",
                    f"{round(median('tracked_per_fence'), 2) + 0.0:.2f}",  # not "-0.00"
                    f"{median('episode_us'):.1f}",
                    f"{median('repeated_close_us'):.1f}",
                    f"{median('bytes_per_fence'):.0f}",
                ]
            )
    ratios = []
    for fences in results["fences"]:

        def ratio(key: str, fences: int = fences) -> float:
            medians = [
                statistics.median(p[key] for p in results["points"] if p["tree"] == tree and p["fences"] == fences)
                for tree in ("this", "before")
            ]
            return medians[0] / medians[1]

        ratios.append(
            f"- {fences:,} fences, this tree over {results['trees']['before']}: a full collection "
            f"{ratio('full_collection_ms'):.3f}x, an episode {ratio('episode_us'):.2f}x, a repeated close "
            f"{ratio('repeated_close_us'):.2f}x, memory a fence {ratio('bytes_per_fence'):.2f}x"
        )
    return "\n".join(
        [
            "# A shard's fences and its garbage collector",
            "",
            f"{results['machine']}. `.venv/bin/python {results['command']}`. One `SessionCore` in a fresh process "
            f"per point, holding the fences of whole episodes played on it; {results['rounds']} interleaved rounds, "
            "medians (the range of full collections in brackets).",
            "",
            table(
                [
                    "fences held",
                    "tree",
                    "full collection ms",
                    "objects tracked a fence",
                    "us an episode (seed, close)",
                    "us a repeated close",
                    "bytes a fence (peak RSS)",
                ],
                rows,
            ),
            "",
            *ratios,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=False, help="the commit to compare against")
    parser.add_argument("--fences", default="250000,1000000", help="fence counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--render", action="store_true", help="only write the report again from its JSON")
    options = parser.parse_args()
    out = RESULTS / "fence_collections.json"
    if options.render:
        write_report("fence_collections.md", render(json.loads(out.read_text())))
        return
    if not options.before:
        parser.error("--before COMMIT is required to measure")
    fences = [int(f) for f in options.fences.split(",")]
    results = {
        "machine": machine(),
        "command": "bench/fence_collections.py " + " ".join(sys.argv[1:]),
        "rounds": options.rounds,
        "fences": fences,
        "trees": {"before": options.before, "this": "this tree"},
        "points": [],
    }
    with commit_tree(options.before) as before:
        trees = {"before": before, "this": ROOT}
        for number in range(1, options.rounds + 1):
            order = ["before", "this"] if number % 2 else ["this", "before"]
            for count in fences:
                for tree in order:
                    point = {"round": number, "tree": tree, **_measure(trees[tree], count)}
                    print(json.dumps(point), flush=True)
                    results["points"].append(point)
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    write_report("fence_collections.md", render(results))


if __name__ == "__main__":
    main()
