"""What a graded verify row says for a later re-grade (contract §A.3): the digests of the texts the session held, in
the order stored; the grader's identity and version; the task's canonical answer. The real app in one process
(harness/inprocess.py), the judge a real loopback model (harness/llm_stub.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from finsec import grading
from finsec.corpus.generate import questions
from finsec.grading.identity import GRADING_VERSION, digest_of, source_digest
from finsec.grading.judge import STOCK_TEMPLATE
from finsec.llm.templates import load_prompt
from harness.bodies import close_body, cookie_claims, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess
from harness.llm_stub import responses_reply
from session_store import code_version

QUESTIONS = questions()
Q = QUESTIONS[0]
OTHER = next(q for q in QUESTIONS if q["url"] != Q["url"])  # another filing: another text
DETERMINISTIC = {
    "name": "deterministic",
    "version": GRADING_VERSION,
    "max_answer_chars": 4000,
    "require_grounded_answer": False,
}


def parse(app, url: str, key: str, client=None) -> None:
    reply = app.post("/parse_html_page", client=client, json={"url": url, "key": key})
    assert reply.status_code == 200 and reply.json()["results"].startswith("SUCCESS"), reply.text


def held(app, sid: str) -> list[str]:
    """The digests the session's refs name, in the store's order, read from the store itself."""
    refs = app.run(app.app.store.document_refs(sid))
    return [ref.digest for ref in refs.values()]


def answered(answer: str, **extra) -> dict:
    return {**verify_body(answer, expected=Q["expected_answer"]), **extra}


@pytest.fixture
def app():
    with InProcess() as running:
        yield running


def test_a_graded_row_names_the_sessions_texts_in_order_its_grader_and_the_canonical_answer(app):
    """Two filings parsed under two keys, in both orders (one of which is not the digests' sorted order): the row
    lists the digests in the order stored, the grader's identity, and the body's canonical answer. Mutation:
    digests from another session, sorted ones, or a canonical answer that ignores the body's, fails this."""
    orders = []
    for first, second in ((OTHER, Q), (Q, OTHER)):
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid))
        parse(app, first["url"], "first")
        parse(app, second["url"], "second")
        stored = held(app, sid)
        row = app.post("/verify", json=answered(Q["expected_answer"], canonical_answer="4,321.7")).json()
        assert (row["reward"], row["mask_sample"]) == (1.0, False)
        assert row["session_documents"] == stored and len(set(stored)) == 2
        assert row["grader"] == DETERMINISTIC
        assert row["canonical_answer"] == "4,321.7"
        orders.append(stored)
    assert orders[0] == orders[1][::-1]  # the same two texts, each time in the order stored


def test_without_a_canonical_answer_the_expected_answer_stands_for_it(app):
    app.post("/seed_session", json=episode_seed(new_session_id()))
    row = app.post("/verify", json=answered("not the figure")).json()
    assert (row["reward"], row["canonical_answer"], row["session_documents"]) == (0.0, Q["expected_answer"], [])


def test_a_re_send_gets_the_same_row_and_the_canonical_answer_leaves_the_verdict_key_alone(app):
    """An identical re-send is the kept verdict and the same row, byte for byte; a body that differs only in its
    canonical answer shares the verdict (grading never reads it) and echoes its own."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    parse(app, Q["url"], "doc")
    body = answered(Q["expected_answer"], canonical_answer="X")
    first = app.post("/verify", json=body).json()
    again = app.post("/verify", json=body).json()
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert app.stats()["counters"]["verifies.cached"] == 1
    other = app.post("/verify", json=answered(Q["expected_answer"], canonical_answer="Y")).json()
    assert app.stats()["counters"]["verifies.cached"] == 2
    assert {k: v for k, v in other.items() if k != "canonical_answer"} == {
        k: v for k, v in first.items() if k != "canonical_answer"
    } and other["canonical_answer"] == "Y"


def test_a_canonical_answer_of_any_json_type_is_echoed_not_refused(app):
    """Before the field was read it was ignored, so a task row's number or object must not become a 422."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    for value in (4321.7, {"value": 4321.7, "unit": "million"}):
        reply = app.post("/verify", json=answered("x", canonical_answer=value))
        assert reply.status_code == 200 and reply.json()["canonical_answer"] == value


def test_an_agent_run_sessions_texts_are_named_before_its_verify_releases_them(app):
    seeded = app.post("/seed_session", json={})
    sid = cookie_claims(seeded, app.settings.cookie_name)["session_id"]
    parse(app, Q["url"], "doc")
    stored = held(app, sid)
    row = app.post("/verify", json=answered(Q["expected_answer"])).json()
    assert (row["reward"], row["session_documents"]) == (1.0, stored) and len(stored) == 1
    assert app.stats()["sessions"] == 0


def test_a_session_the_server_never_had_is_graded_with_no_documents_named(app):
    """Decision 6: scored; there is no open session whose texts could be named (null, not an empty list)."""
    row = app.post("/verify", json=answered(Q["expected_answer"])).json()
    assert (row["reward"], row["session_documents"], row["grader"]) == (1.0, None, DETERMINISTIC)


def test_a_masked_row_carries_no_provenance(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    app.post("/close_session", json=close_body(sid))
    row = app.post("/verify", json=answered(Q["expected_answer"], canonical_answer="X")).json()
    assert row["mask_sample"] and (row["session_documents"], row["grader"], row["canonical_answer"]) == (
        None,
        None,
        None,
    )


def test_the_grader_identity_names_its_settings():
    with InProcess(max_answer_chars=500, require_grounded_answer=True) as app:
        row = app.post("/verify", json=answered("x")).json()
    assert row["grader"] == {**DETERMINISTIC, "max_answer_chars": 500, "require_grounded_answer": True}


def test_a_judged_row_names_the_judge_its_prompt_and_reward_mode_and_the_sessions_texts(stub):
    """The judge path reads the refs first, once; a re-send is the kept verdict and the same row."""
    with InProcess(
        judge_model={"base_url": stub.base_url, "model": "judge-m"},
        reward_mode="scaled",
        edgar_search_mode=None,
        judge_call_timeout=5.0,
        judge_retry_delays=[0.01],
    ) as app:
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid))
        parse(app, Q["url"], "doc")
        stub.reply(responses_reply("The rating is: [[1]]"))
        body = answered(Q["expected_answer"])
        row = app.post("/verify", json=body).json()
        again = app.post("/verify", json=body).json()
        assert len(stub.requests) == 1 and again == row
        assert (row["reward"], row["session_documents"]) == (0.5, held(app, sid))
    template = load_prompt(None, STOCK_TEMPLATE, "judge_prompt_template")
    assert row["grader"] == {
        "name": "llm_judge",
        "version": GRADING_VERSION,
        "model": "judge-m",
        "prompt": digest_of(template),
        "params": digest_of({"input": []}),
        "reward_mode": "scaled",
        "require_grounded_answer": False,
    }


def test_the_grading_version_is_the_verdict_keys_code_digest_and_follows_every_edit(tmp_path):
    """One digest: the code part of the verdict key (deployments/services.py:grading_key) is the row's version.
    A changed line anywhere in the grading package changes it."""
    assert code_version(grading) == GRADING_VERSION
    copy = tmp_path / "grading"
    shutil.copytree(grading.__path__[0], copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_digest(copy) == GRADING_VERSION
    rivals = copy / "rivals.py"
    rivals.write_text(rivals.read_text().replace("NEAR_FACTOR", "NEAR_FACTOR_", 1))
    assert source_digest(copy) != GRADING_VERSION
