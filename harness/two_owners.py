"""Two owners at once: servers over one mark store (a redeploy's old and new shard lives side by side, two
`finsec serve --in-process` over one Redis), every request of an episode sent to either at random. Used by
tests/unit/session_store/test_one_owner.py and the fault benchmark (bench/faults.py).

What must never happen, each counted (must be 0, as must the app's own 500s): a *split session* (a read that
misses a document the episode stored through the other server), a *late score* (a verify after the close scored
unmasked), a *closed ID seeded again* (a retried seed after the close answered 200). What may happen, counted too:
a request the hand-over answered as on a lost session (masked, 404 or 503), never scored. 5xx and dropped
connections are retried, as a rollout driver does.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence

import httpx

from finsec.corpus.generate import questions
from harness.fault_scenarios import ingress_error_page

__all__ = ["MUST_BE_ZERO", "two_owners"]

TASK = questions()[0]
MUST_BE_ZERO = ("split_sessions", "late_scores", "closed_ids_seeded_again", "app_500s")


Servers = Callable[[], Sequence[str]]  # the servers in service at the moment of a request


async def two_owners(
    urls: Sequence[str] | Servers, workers: int = 8, seconds: float = 10.0, seed: int = 0
) -> dict[str, int]:
    """Episodes from `workers` clients for `seconds`, each request to a random one of `urls` (or of those a callable
    names at that moment: a switch from one server to another); the counts."""
    counts: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    rng = random.Random(seed)
    servers: Servers = urls if callable(urls) else lambda: urls

    async def worker() -> None:
        # One cookie jar per client: the servers share a host, so the cookie follows the episode to either.
        async with httpx.AsyncClient(timeout=60) as client:
            while time.monotonic() < deadline:
                client.cookies.clear()
                await _episode(client, servers, rng, counts)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return {name: counts[name] for name in ("episodes", "scored", *MUST_BE_ZERO, "masked", "refused")}


async def _episode(client: httpx.AsyncClient, servers: Servers, rng: random.Random, counts: Counter[str]) -> None:
    sid = f"resources-session-{uuid.uuid4().hex}"
    episode = {"rollout_id": sid[-12:], "attempt": 0}
    seed = {
        "resources_session_id": sid,
        "episode_id": episode,
        "task_id": {"taskset": "owners", "task_id": sid},
        "task_data": {},
    }

    async def post(path: str, body: dict) -> httpx.Response:
        """As a rollout driver sends it: every route is safe to repeat, so a 5xx or a dropped connection (a
        replica being replaced) is sent again, to either server."""
        for _ in range(40):
            try:
                response = await client.post(rng.choice(servers()) + path, json=body)
            except httpx.TransportError:
                await asyncio.sleep(0.25)
                continue
            if response.status_code < 500:
                return response
            # The app's own 500s (never Serve's or HAProxy's page for a replica that went away) must not happen.
            counts["app_500s"] += response.status_code == 500 and not _ingress_page(response)
            await asyncio.sleep(0.25)
        return response

    counts["episodes"] += 1
    if (await post("/seed_session", seed)).status_code != 200:
        counts["refused"] += 1
        return
    for key in ("first", "second"):
        stored = await post("/parse_html_page", {"url": TASK["url"], "key": key})
        if stored.status_code != 200 or "SUCCESS" not in stored.json()["results"]:
            counts["refused"] += 1
            return
    read = await post("/retrieve_information", {"prompt": "total net revenues {{first}} {{second}}"})
    if read.status_code != 200:
        counts["refused"] += 1
    elif "passages" not in read.json()["results"]:
        counts["split_sessions"] += 1  # a document it stored through the other server was not there
    row = await post("/verify", _verify())
    if row.status_code == 200:
        counts["masked" if row.json()["mask_sample"] else "scored"] += 1
    closed = await post("/close_session", {"resources_session_id": sid, "episode_id": episode})
    if closed.status_code != 200:
        counts["refused"] += 1
        return
    late = await post("/verify", _verify())
    if late.status_code == 200 and not late.json()["mask_sample"]:
        counts["late_scores"] += 1
    if (await post("/seed_session", seed)).status_code == 200:
        counts["closed_ids_seeded_again"] += 1


def _ingress_page(response: httpx.Response) -> bool:
    return ingress_error_page(response) or "content-type" not in response.headers  # HAProxy's page, or Serve's


def _verify() -> dict:
    answer = {
        "type": "function_call",
        "name": "submit_final_result",
        "call_id": "c",
        "arguments": json.dumps({"final_result": TASK["expected_answer"]}),
    }
    return {
        "responses_create_params": {"input": [{"role": "user", "content": TASK["question"]}]},
        "response": {"output": [answer]},
        "question": TASK["question"],
        "expected_answer": TASK["expected_answer"],
    }
