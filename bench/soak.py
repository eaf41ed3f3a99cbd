"""Leak soak: 10,000 episodes through the Serve app (2 replicas), some abandoned, then nothing must remain.

    .venv/bin/python bench/soak.py [--episodes 10000]     # ~4 minutes; writes bench/results/soak.{md,json,png}

10% of the episodes are abandoned before verify (and so never closed), 5% after verify but before close: only
the TTL can release them. With a short TTL, after the TTL and a reaper tick the store must hold zero sessions,
documents and references, and the deployment's resident memory must be back within 10% of its level before
the run (measured after a warm-up, so caches count as before). Nothing fails here, so every request must get a
200 and every verify an unmasked reward of 1.0 (the scripted answers are right). The script exits 1 when any
of these does not hold, and the report says which.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from _common import machine, write_report  # noqa: E402
from serve_rollouts import _rss_kb, _tree  # noqa: E402

TTL = 20.0


async def episodes(url: str, n: int, concurrency: int, seed: int = 7) -> dict[str, int]:
    from finsec.corpus.generate import questions

    tasks, rng = questions(), random.Random(seed)
    plan = iter(range(n))
    outcome = {
        "completed": 0,
        "abandoned_before_verify": 0,
        "abandoned_before_close": 0,
        "errors": 0,
        "verifies_not_rewarded": 0,
    }

    async def worker():
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            for i in plan:
                client.cookies.clear()
                task = tasks[i % len(tasks)]
                sid, ep = f"resources-session-{uuid.uuid4().hex}", {"rollout_id": f"soak{i}", "attempt": 0}
                fate = rng.random()
                statuses = [
                    (
                        await client.post(
                            "/seed_session",
                            json={
                                "resources_session_id": sid,
                                "episode_id": ep,
                                "task_id": {"taskset": "soak", "task_id": str(i)},
                                "task_data": {},
                            },
                        )
                    ).status_code,
                    (await client.post("/parse_html_page", json={"url": task["url"], "key": "doc"})).status_code,
                    (
                        await client.post("/retrieve_information", json={"prompt": task["question"] + " {{doc}}"})
                    ).status_code,
                ]
                if fate < 0.10:
                    outcome["abandoned_before_verify"] += 1
                else:
                    answer = {
                        "type": "function_call",
                        "name": "submit_final_result",
                        "call_id": "c",
                        "arguments": json.dumps({"final_result": task["expected_answer"]}),
                    }
                    verify = await client.post(
                        "/verify",
                        json={
                            "responses_create_params": {"input": [{"role": "user", "content": task["question"]}]},
                            "response": {"output": [answer]},
                            "question": task["question"],
                            "expected_answer": task["expected_answer"],
                        },
                    )
                    statuses.append(verify.status_code)
                    row = verify.json() if verify.status_code == 200 else {}
                    outcome["verifies_not_rewarded"] += (row.get("mask_sample"), row.get("reward")) != (False, 1.0)
                    if fate < 0.15:
                        outcome["abandoned_before_close"] += 1
                    else:
                        statuses.append(
                            (
                                await client.post(
                                    "/close_session", json={"resources_session_id": sid, "episode_id": ep}
                                )
                            ).status_code
                        )
                        outcome["completed"] += 1
                outcome["errors"] += sum(s != 200 for s in statuses)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    import os

    from deployments.ingress import app_actors
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve, undeploy
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir
    from session_store.ray_store import RaySessionStore, SessionActors

    url = start_ray_and_serve()
    settings = Settings(
        app_name="soak",
        num_shards=2,
        corpus_dir=embedded_corpus_dir(),
        session_ttl_seconds=TTL,
        fence_ttl_seconds=TTL,
        reaper_interval_seconds=1.0,
    )
    deploy(settings, url, replicas=2)
    from deployments.ingress import session_actors_spec

    store = RaySessionStore(SessionActors(app_actors(settings), session_actors_spec(settings)))
    root = os.getpid()

    def rss_mb() -> float:
        return sum(_rss_kb(pid) for pid in _tree(root)) / 1024

    curve: list[tuple[float, float]] = []
    started = time.monotonic()
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            curve.append((round(time.monotonic() - started, 1), round(rss_mb(), 1)))
            sampling.wait(2.0)

    try:
        asyncio.run(episodes(url, 300, 16))  # warm every cache, then let the warm-up's sessions expire
        time.sleep(TTL + 3)
        before = rss_mb()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        run_started = time.monotonic()
        outcome = asyncio.run(episodes(url, options.episodes, options.concurrency))
        run_seconds = time.monotonic() - run_started
        at_end = asyncio.run(store.stats())
        time.sleep(TTL + 3)  # the TTL, and a reaper tick
        after_stats = asyncio.run(store.stats())
        time.sleep(3)
        sampling.set()
        after = rss_mb()
    finally:
        undeploy(settings)
        stop_ray_and_serve()
    held = {k: after_stats[k] for k in ("sessions", "documents", "document_chars", "digests")}
    result = {
        "machine": machine(),
        "episodes": options.episodes,
        "outcome": outcome,
        "run_seconds": run_seconds,
        "held_at_end_of_run": {k: at_end[k] for k in held},
        "held_after_ttl": held,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "rss_change": (after - before) / before,
        "curve": curve,
    }
    result["failures"] = failures(result)
    (ROOT / "bench/results/soak.json").write_text(json.dumps(result, indent=1))
    write_report("soak.md", render(result))
    plot(curve)
    print(render(result))
    return 1 if result["failures"] else 0


def failures(r: dict) -> list[str]:
    """What the soak promises, each as a reason it failed; empty when it held."""
    o = r["outcome"]
    found = [f"{k} = {v} after the TTL (must be 0)" for k, v in r["held_after_ttl"].items() if v]
    if r["rss_change"] > 0.10:
        found.append(f"resident memory {100 * r['rss_change']:+.1f}% over its level before the run (at most +10%)")
    if o["errors"]:
        found.append(f"{o['errors']} requests did not get a 200")
    if o["verifies_not_rewarded"]:
        found.append(f"{o['verifies_not_rewarded']} verifies were masked or not rewarded 1.0 (the answers are right)")
    return found


def render(r: dict) -> str:
    o = r["outcome"]
    return "\n".join(
        [
            "# Leak soak",
            "",
            f"{r['machine']}. {r['episodes']:,} episodes through 2 ingress replicas and 2 shards "
            f"in {r['run_seconds']:.0f} s "
            f"(session TTL {TTL:.0f} s, reaper every 1 s): {o['completed']:,} completed and closed, "
            f"{o['abandoned_before_verify']:,} abandoned before verify, {o['abandoned_before_close']:,} after verify but "
            f"before close; {o['errors']} requests failed, {o.get('verifies_not_rewarded', 0)} verifies masked or not "
            f"rewarded. Produced by `bench/soak.py`.",
            "",
            "| | sessions | documents | characters | text references |",
            "|---|---|---|---|---|",
            "| at the end of the run | "
            + " | ".join(
                f"{r['held_at_end_of_run'][k]:,}" for k in ("sessions", "documents", "document_chars", "digests")
            )
            + " |",
            "| after the TTL and a reaper tick | "
            + " | ".join(f"{r['held_after_ttl'][k]:,}" for k in ("sessions", "documents", "document_chars", "digests"))
            + " |",
            "",
            f"Resident memory of every process of the deployment: {r['rss_before_mb']:.0f} MB before the run (after a "
            f"warm-up), {r['rss_after_mb']:.0f} MB after ({100 * r['rss_change']:+.1f}%). The curve is "
            "`soak.png` (and `curve` in soak.json).",
            "",
            "**Failed:** " + "; ".join(r["failures"]) + "."
            if r.get("failures")
            else "Every check held: nothing left after the TTL, memory within +10%, every request a 200, every verify an "
            "unmasked 1.0.",
            "",
        ]
    )


def plot(curve: list[tuple[float, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.5))
    axes.plot([t for t, _ in curve], [m for _, m in curve])
    axes.set_xlabel("seconds since the run started")
    axes.set_ylabel("resident memory, MB")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(ROOT / "bench/results/soak.png", dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
