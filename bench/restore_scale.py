"""A later shard life that restores 100,000 durable sessions: how long its settle and the take-over writes take, and
the longest the shard's event loop is held meanwhile (what a request arriving then would wait), against the
shard's store timeout (5 s).

    .venv/bin/python bench/restore_scale.py                      # 100,000 records, in-memory store
    .venv/bin/python bench/restore_scale.py --records 20000 --out restore_quick

The records are written by an earlier life of the shard (episode sessions with two documents and a verdict, as
`durable_sessions` keeps them) into the in-memory mark store, the store a shard that settles reads the way it
reads the GCS (one listing, then every mark). A probe coroutine sleeps 1 ms at a time on the same loop; the
longest gap between its wake-ups is the longest stall. Writes bench/results/<out>.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from _common import RESULTS, machine, write_report  # noqa: E402

from session_store import MemoryMarkStore, ShardConfig, ShardService  # noqa: E402
from session_store.core import DocumentRef, EpisodeSeed, Verdict  # noqa: E402

TTL = 21_600.0


async def fill(marks: MemoryMarkStore, records: int) -> None:
    earlier = ShardService(ShardConfig(TTL, durable_sessions=True), marks)
    for start in range(0, records, 1_000):
        ops = []
        for n in range(start, min(records, start + 1_000)):
            sid = f"resources-session-{n:08d}"
            seed = EpisodeSeed({"rollout_id": f"r{n}", "attempt": 0}, {"taskset": "bench", "task_id": str(n)}, "d")
            ops += [
                ("seed_episode", (sid, seed)),
                ("put_document", (sid, "filing", DocumentRef(f"{n:064x}", 250_000, f"https://www.sec.gov/{n}"))),
                ("put_document", (sid, "notes", DocumentRef(f"{n + 1:064x}", 2_000, f"https://www.sec.gov/{n}b"))),
                ("finish_verify", (sid, f"{n:064x}", Verdict(1.0))),
            ]
        await earlier.run(ops)


async def restore(marks: MemoryMarkStore) -> dict:
    later = ShardService(ShardConfig(TTL, durable_sessions=True), marks)
    marks.changes_written = marks.largest_write = 0
    longest, stop = 0.0, asyncio.Event()

    async def probe() -> None:
        nonlocal longest
        while not stop.is_set():
            began = time.perf_counter()
            await asyncio.sleep(0.001)
            longest = max(longest, time.perf_counter() - began - 0.001)

    probing = asyncio.create_task(probe())
    await asyncio.sleep(0.01)
    began = time.perf_counter()
    loaded = await later.settle()
    settled = time.perf_counter()
    await later.tick()  # the reaper's next tick writes the take-overs back, in bounded writes
    ticks = 1
    while later._pending:  # noqa: SLF001 (any still owed)
        await later.tick()
        ticks += 1
    written = time.perf_counter()
    stop.set()
    await probing
    stats = await later.stats()
    return {
        "loaded": loaded,
        "restored": stats["counters"].get("restored", 0),
        "settle_s": settled - began,
        "write_back_s": written - settled,
        "ticks": ticks,
        "changes_written": marks.changes_written,
        "largest_write": marks.largest_write,
        "longest_stall_ms": 1e3 * longest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="restore_scale")
    options = parser.parse_args()
    rounds = []
    for _ in range(options.rounds):
        marks = MemoryMarkStore()
        asyncio.run(fill(marks, options.records))
        rounds.append(asyncio.run(restore(marks)))
        print(json.dumps(rounds[-1]), flush=True)
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "records": options.records,
        "command": " ".join(["bench/restore_scale.py", *sys.argv[1:]]),
        "rounds": rounds,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(results, indent=1))
    lines = [
        f"# A shard life restoring {options.records:,} durable sessions",
        "",
        f"{results['machine']}. `.venv/bin/python {results['command']}`. In-memory mark store (read as a "
        "settle reads the GCS); each record an episode with two documents and a verdict.",
        "",
        "| round | restored | settle s | write-back s | ticks | changes written | largest write | longest loop "
        "stall ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(rounds, 1):
        lines.append(
            f"| {n} | {r['restored']:,} | {r['settle_s']:.2f} | {r['write_back_s']:.2f} | {r['ticks']} | "
            f"{r['changes_written']:,} | {r['largest_write']:,} | {r['longest_stall_ms']:.0f} |"
        )
    write_report(f"{options.out}.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
