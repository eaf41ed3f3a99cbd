"""What durable records cost a Redis's memory (its `used_memory`, per record): a fence as the app keeps it (a
string: the record is its head alone), the same fence kept as a one-field hash (what keeping every record as a hash
would cost), and an open durable session with two documents and a verdict (a hash of parts, records.py).

    .venv/bin/python bench/record_memory.py             # 50,000 records of each kind, 3 rounds; a private redis-server

Writes bench/results/record_memory.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from _common import RESULTS, machine, write_report  # noqa: E402

from harness.redis_server import running_redis  # noqa: E402
from session_store import ShardConfig, ShardService  # noqa: E402
from session_store.core import HEAD, DocumentRef, EpisodeSeed, Mark, Verdict  # noqa: E402
from session_store.marks.records import parts_of  # noqa: E402
from session_store.marks.redis_store import RedisMarkStore  # noqa: E402

EPISODE = {"rollout_id": "r-0123456789", "attempt": 0}


def sid() -> str:
    return f"resources-session-{uuid.uuid4().hex}"


def fence() -> Mark:
    return Mark(time.time() + 3600, "closed", EPISODE)


async def fences(store: RedisMarkStore, n: int) -> None:
    for start in range(0, n, 1_000):
        await store.write({sid(): fence() for _ in range(min(1_000, n - start))})


def hashed_fences(store: RedisMarkStore, client, n: int) -> None:
    head = parts_of(fence(), [HEAD])[HEAD]
    pipe = client.pipeline()
    for k in range(n):
        key = store._key(sid())  # noqa: SLF001 (the store's own key)
        pipe.hset(key, json.dumps(HEAD), head)
        pipe.pexpire(key, 3_600_000)
        if k % 1_000 == 999:
            pipe.execute()
    pipe.execute()


async def sessions(store: RedisMarkStore, n: int) -> None:
    shard = ShardService(ShardConfig(21_600.0, durable_sessions=True, check_durability=False), store)
    for start in range(0, n, 250):
        ops = []
        for k in range(start, min(n, start + 250)):
            s = sid()
            seed = EpisodeSeed({"rollout_id": f"r{k}", "attempt": 0}, {"taskset": "bench", "task_id": str(k)}, "d")
            ops += [
                ("seed_episode", (s, seed)),
                (
                    "put_document",
                    (
                        s,
                        "filing",
                        DocumentRef(f"{k:064x}", 250_000, f"https://www.sec.gov/Archives/edgar/data/{k}/a.htm"),
                    ),
                ),
                (
                    "put_document",
                    (
                        s,
                        "notes",
                        DocumentRef(f"{k + 1:064x}", 2_000, f"https://www.sec.gov/Archives/edgar/data/{k}/b.htm"),
                    ),
                ),
                ("finish_verify", (s, f"{k:064x}", Verdict(1.0))),
            ]
        await shard.run(ops)


def main() -> None:
    import redis

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="record_memory")
    options = parser.parse_args()
    kinds = {
        "fence (a string, as kept)": lambda s, c: asyncio.run(fences(s, options.records)),
        "fence kept as a hash": lambda s, c: hashed_fences(s, c, options.records),
        "durable session: two documents and a verdict (a hash)": lambda s, c: asyncio.run(sessions(s, options.records)),
    }
    rounds = []
    with running_redis() as server:
        client = redis.Redis.from_url(server.url)
        for _ in range(options.rounds):
            measured = {}
            for kind, fill in kinds.items():
                client.flushdb()
                store = RedisMarkStore(server.url, f"mem-{uuid.uuid4().hex[:6]}")
                store.begin()
                before = client.info("memory")["used_memory"]
                fill(store, client)
                measured[kind] = (client.info("memory")["used_memory"] - before) / options.records
            rounds.append(measured)
            print(json.dumps(measured), flush=True)
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "records": options.records,
        "command": " ".join(["bench/record_memory.py", *sys.argv[1:]]),
        "rounds": rounds,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(results, indent=1))
    lines = [
        "# What a durable record costs Redis's memory",
        "",
        f"{results['machine']}. `.venv/bin/python {results['command']}`. Redis's `used_memory` after "
        f"{options.records:,} records of a kind, less before, per record; {len(rounds)} rounds.",
        "",
        "| record | bytes (median) | by round |",
        "|---|---|---|",
    ]
    for kind in kinds:
        values = [r[kind] for r in rounds]
        lines.append(f"| {kind} | {statistics.median(values):.0f} | {', '.join(f'{v:.0f}' for v in values)} |")
    write_report(f"{options.out}.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
