"""Rules the fast suite held only through the Ray suite, found by the mutation check (tests/test_mutations.py):
a verify row of a session that is not open any more is masked at the route, whatever the answer, with either
grader (contract §C.5, §D.5). The core's decision alone is not enough: a route that scored the trajectory
anyway would turn every lost session into a training signal (a right answer, as here, into a reward of 1)."""

from __future__ import annotations

import pytest

from finsec.corpus.generate import questions
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess
from harness.llm_stub import responses_reply

FILING = questions()[0]["url"]
GRADERS = ("deterministic", "judge")


@pytest.fixture(params=GRADERS)
def app(request, stub):
    judge = (
        {
            "judge_model": {"base_url": stub.base_url, "model": "judge"},
            "judge_call_timeout": 1.0,
            "judge_retry_delays": [0.01, 0.01],
        }
        if request.param == "judge"
        else {}
    )
    # Without durable sessions, so a restart loses what the shards held (with them, test_durable_sessions.py).
    with InProcess(edgar_search_mode=None, durable_sessions=False, **judge) as running:
        running.stub = stub
        yield running


def assert_masked_lost(app, row: dict) -> None:
    assert (row["reward"], row["mask_sample"], row["failure_kind"]) == (0.0, True, "session_lost"), row
    assert row["judge_rating"] is None and row["judge_text"] is None and row["failure_reason"]
    assert app.stub.requests == []  # a masked row never asks the judge


def test_a_verify_after_close_is_masked_session_lost_whatever_the_answer(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    app.post("/close_session", json=close_body(sid))
    app.stub.reply(responses_reply("The rating is: [[2]]"))  # a judge that would pass it, if it were asked
    assert_masked_lost(app, app.post("/verify", json=verify_body("42")).json())


@pytest.mark.parametrize("kind", ["episode", "agent_run"])
def test_the_verify_itself_sees_that_its_shard_restarted(app, kind):
    """No tool call between the restart and the verify (the kill landed after the last one): the verify's cookie
    names a shard life that is gone, and that alone must mask it; the tools then say so too."""
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid) if kind == "episode" else {})
    assert app.post("/parse_html_page", json={"url": FILING, "key": "doc"}).json()["results"].startswith("SUCCESS")
    app.restart_shards()
    app.stub.reply(responses_reply("The rating is: [[2]]"))
    assert_masked_lost(app, app.post("/verify", json=verify_body("42")).json())
    tool = app.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
    assert tool.status_code == 404 and tool.json()["failure_kind"] == "session_lost"
    assert "restarted" in tool.json()["detail"]
