"""Whole episodes as a trainer's plain client plays them: the eight requests NeMo Gym's single_agent_turn sends,
each sent once, a 503 or any other failure ending the episode (NeMo Gym's own client retries only dropped
connections). The load generators (bench/loadgen.py and the others) and the admission tests share them."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

from harness.cookies import cookie_header, take_cookies

__all__ = ["Burst", "burst", "rollout_steps"]


def rollout_steps(task: dict, n: int) -> list[tuple[str, dict]]:
    """An episode of `task` (a question of the embedded corpus): episode seed, sec_filing_search, parse_html_page,
    retrieve_information twice, submit_final_result, verify with the right answer, close_session."""
    sid = f"resources-session-{uuid.uuid4().hex}"
    episode = {"rollout_id": f"bench-{n}", "attempt": 0}
    answer = {
        "type": "function_call",
        "name": "submit_final_result",
        "call_id": "c",
        "arguments": json.dumps({"final_result": task["expected_answer"]}),
    }
    return [
        (
            "seed_session",
            {
                "resources_session_id": sid,
                "episode_id": episode,
                "task_id": {"taskset": "bench", "task_id": str(n)},
                "task_data": {},
            },
        ),
        ("sec_filing_search", {"ticker": task["ticker"], "form_types": [task["form"]]}),
        ("parse_html_page", {"url": task["url"], "key": "filing"}),
        ("retrieve_information", {"prompt": task["question"] + " {{filing}}"}),
        (
            "retrieve_information",
            {
                "prompt": "total revenues and net income {{filing}}",
                "input_character_ranges": [{"key": "filing", "start": 0, "end": 20_000}],
            },
        ),
        ("submit_final_result", {"final_result": task["expected_answer"]}),
        (
            "verify",
            {
                "responses_create_params": {"input": [{"role": "user", "content": task["question"]}]},
                "response": {"output": [answer]},
                "question": task["question"],
                "expected_answer": task["expected_answer"],
            },
        ),
        ("close_session", {"resources_session_id": sid, "episode_id": episode}),
    ]


@dataclass
class Burst:
    episodes: int
    completed: int = 0
    failures: Counter = field(default_factory=Counter)  # (route, status) -> episodes it ended; status 0: no reply
    samples: list[str] = field(default_factory=list)  # a few failed replies, for the assertion's message


async def burst(url: str, episodes: int) -> Burst:
    """`episodes` episodes all at once, each on its own connection, no request sent twice; an episode completes
    when every request gets 200 and its verify the reward 1.0."""
    from finsec.corpus.generate import questions

    tasks = questions()
    result = Burst(episodes)
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(
        base_url=url.rstrip("/") + "/", connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as session:

        async def play(n: int) -> None:
            cookies: dict[str, str] = {}
            for route, body in rollout_steps(tasks[n % len(tasks)], n):
                try:
                    async with session.post(route, json=body, headers=cookie_header(cookies)) as response:
                        status, text = response.status, await response.text()
                        take_cookies(response.headers.getall("Set-Cookie", []), cookies)
                except (aiohttp.ClientError, TimeoutError) as error:
                    status, text = 0, repr(error)
                if status != 200 or (route == "verify" and json.loads(text).get("reward") != 1.0):
                    result.failures[(route, status)] += 1
                    if len(result.samples) < 5:
                        result.samples.append(f"{route} {status} {text[:200]}")
                    return
            result.completed += 1

        await asyncio.gather(*(play(n) for n in range(episodes)))
    return result
