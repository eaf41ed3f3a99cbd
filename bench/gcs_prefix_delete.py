"""What a delete by key prefix costs in Ray's GCS key-value store as it fills, against deletes by name.

    .venv/bin/python bench/gcs_prefix_delete.py            # ~1 min; writes results/gcs_prefix_delete.{md,json}

The GCS finds a prefix's keys by reading every key it holds, so the GCS mark store deletes a closed session's parts
by name. This fills a namespace of a new local cluster's GCS with stand-in claim keys, 0 to 200,000, and at each
size times deletes one after another (each its own round trip, as a close's): by name, and by a prefix that
matches nothing. Both in the same pass, interleaved in rounds.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, machine, write_report  # noqa: E402

SIZES = (0, 50_000, 200_000)
DELETES = 200  # per kind, size and round
ROUNDS = 3
NAMESPACE = b"bench-prefix-delete"


async def _measure() -> dict[int, dict[str, list[float]]]:
    from session_store.gcs_kv import gcs_kv

    client = gcs_kv()

    async def fill(start: int, stop: int) -> None:
        for first in range(start, stop, 2_000):
            await asyncio.gather(
                *(
                    client.async_internal_kv_put(b"ep:%08d:1:c" % i, b"life", True, NAMESPACE, timeout=30)
                    for i in range(first, min(first + 2_000, stop))
                )
            )

    async def deletes(by_prefix: bool) -> float:
        began = time.perf_counter()
        for i in range(DELETES):
            key = b"ep:zz%d:1:p" % i if by_prefix else b'ep:zz%d:1:p"d:k"' % i
            await client.async_internal_kv_del(key, by_prefix, NAMESPACE, timeout=30)
        return 1e3 * (time.perf_counter() - began) / DELETES

    results: dict[int, dict[str, list[float]]] = {}
    held = 0
    for size in SIZES:
        await fill(held, size)
        held = size
        results[size] = {"by name": [], "by prefix": []}
        for _ in range(ROUNDS):
            results[size]["by name"].append(await deletes(False))
            results[size]["by prefix"].append(await deletes(True))
    await client.async_internal_kv_del(b"", True, NAMESPACE, timeout=30)
    return results


def main() -> None:
    import ray

    ray.init(address="local", include_dashboard=False, logging_level="error")
    try:
        results = asyncio.run(_measure())
    finally:
        ray.shutdown()
    (RESULTS / "gcs_prefix_delete.json").write_text(json.dumps({"machine": machine(), "ms": results}, indent=1))
    lines = [
        "# A delete by key prefix in the GCS as it fills",
        "",
        f"{machine()}. `.venv/bin/python bench/gcs_prefix_delete.py`: {DELETES} deletes one after another per kind, "
        f"{ROUNDS} interleaved rounds; the median round's milliseconds a delete (round trip included), the range "
        "in brackets.",
        "",
        "| keys in the GCS | by name | by prefix | prefix over name |",
        "|---|---|---|---|",
    ]
    for size, kinds in results.items():
        named, prefixed = statistics.median(kinds["by name"]), statistics.median(kinds["by prefix"])
        lines.append(
            f"| {size:,} | {named:.2f} ({min(kinds['by name']):.2f}-{max(kinds['by name']):.2f}) | "
            f"{prefixed:.2f} ({min(kinds['by prefix']):.2f}-{max(kinds['by prefix']):.2f}) | {prefixed / named:.1f}x |"
        )
    write_report("gcs_prefix_delete.md", "\n".join(lines))


if __name__ == "__main__":
    main()
