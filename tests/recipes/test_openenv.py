"""The OpenEnv recipe (finsec_client/openenv.py), driven by openenv-core's own client over its WebSocket against
the environment's OpenEnv server, in front of a real finsec-serve (the one-process app under uvicorn) on
loopback: an episode's reward is /verify's, its session is closed after, and a session the client abandons is
closed too. Skips without the `openenv` extra."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from harness.extras import needs

needs("openenv", "openenv")

from deployments.inprocess import in_process_app  # noqa: E402
from deployments.settings import Settings  # noqa: E402
from finsec.corpus.generate import embedded_corpus_dir  # noqa: E402
from finsec_client.openenv import FinsecAction, FinsecEnv, make_app  # noqa: E402
from finsec_client.tasks import embedded_tasks  # noqa: E402
from finsec_client.threaded_server import ThreadedServer  # noqa: E402

TASK = next(t for t in embedded_tasks() if t.hint("ticker") and t.hint("form") == "10-K")


@pytest.fixture(scope="module")
def servers():
    app = in_process_app(Settings(app_name="openenv", num_shards=2, corpus_dir=embedded_corpus_dir()))
    with (
        ThreadedServer(app.api, lifespan="on") as finsec,
        ThreadedServer(make_app(finsec.url), lifespan="on") as openenv,
    ):
        yield finsec.url, openenv.url


def held_sessions(finsec_url: str) -> int:
    return httpx.get(finsec_url + "/status", timeout=10).json()["held"]["sessions"]


def play(env, answer: str):
    """An episode as an agent plays it: find the filing, store it, ask it, submit `answer`."""
    reset = env.reset(task=TASK.data)
    assert reset.observation.question == TASK.question and not reset.done
    found = env.step(
        FinsecAction(tool="sec_filing_search", arguments={"ticker": TASK.hint("ticker"), "form_types": ["10-K"]})
    )
    assert found.observation.status_code == 200 and found.reward is None and not found.done
    url = json.loads(found.observation.result)[0]["filing_url"]
    parsed = env.step(FinsecAction(tool="parse_html_page", arguments={"url": url, "key": "filing"}))
    assert "SUCCESS" in parsed.observation.result, parsed.observation.result
    asked = env.step(FinsecAction(tool="retrieve_information", arguments={"prompt": TASK.question + " {{filing}}"}))
    assert asked.observation.status_code == 200
    return env.step(FinsecAction(tool="submit_final_result", arguments={"final_result": answer}))


def test_an_episode_is_rewarded_by_verify_and_its_session_closed(servers):
    finsec_url, openenv_url = servers
    with FinsecEnv(base_url=openenv_url).sync() as env:
        right = play(env, TASK.expected_answer)
        assert (right.reward, right.done, right.observation.mask_sample) == (1.0, True, False), right.observation
        assert right.observation.closed is True
        wrong = play(env, "$1 thousand")
        assert (wrong.reward, wrong.done) == (0.0, True)
        after = env.step(FinsecAction(tool="submit_final_result", arguments={"final_result": "again"}))
        assert after.done and after.reward is None  # the episode is over: no second reward
    assert held_sessions(finsec_url) == 0


def test_a_session_the_client_abandons_is_closed(servers):
    finsec_url, openenv_url = servers
    with FinsecEnv(base_url=openenv_url).sync() as env:
        env.reset(task=TASK.data)
        assert held_sessions(finsec_url) == 1
    deadline = time.monotonic() + 10  # the OpenEnv server closes the environment once the WebSocket has ended
    while held_sessions(finsec_url) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held_sessions(finsec_url) == 0
