"""The upstream misbehaves, and every tool still answers a clear error within a bounded time, leaves the session
unharmed, and remembers nothing of the fault (contract §A.0, §A.6, §A.8, §D.4, §E.3, §F.2; Decision 11).

SEC is a loopback server (harness/sec_server.py) scripted to answer 429, 503 (with and without Retry-After), 500,
to hang past `request_timeout`, to drop the connection mid-body, or to send garbage, the wrong content type or
a body over `fetch_max_bytes`. The judge and the retrieval model are the loopback OpenAI-compatible stub
(harness/llm_stub.py), scripted to time out, fail, or answer what cannot be read.

Time bounds are hang guards (pytest-timeout), never timing asserts.
"""

from __future__ import annotations

import json
import os

import pytest

from finsec.corpus.generate import filings
from finsec.llm.endpoint import ModelEndpoint
from finsec.retrieval.llm_retrieval import LlmRetrieval
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess
from harness.llm_stub import closed_port_url, responses_reply
from harness.sec_server import SecServer

FIRST = next(f for f in filings() if f.form == "10-K")
SUBMISSIONS = f"submissions/CIK{FIRST.issuer.cik:010d}.json"
CAP = 100_000  # fetch_max_bytes here: every corpus file is a few KB
ATTEMPTS = 3  # max_retries, and the judge's attempts (two retry delays)
GARBAGE = os.urandom(4096) + bytes(range(32)) * 8


def live(sec: SecServer, **overrides) -> InProcess:
    return InProcess(
        **{
            "edgar_source": "live",
            "sec_www_base_url": sec.url,
            "sec_data_base_url": sec.url,
            "fetch_trusted_networks": ["127.0.0.1/32"],
            "edgar_search_mode": None,
            "retry_backoff_seconds": 0.01,
            "request_timeout": 1.0,
            "max_retries": ATTEMPTS,
            "requests_per_second": 10_000,
            "fetch_max_bytes": CAP,
            **overrides,
        }
    )


@pytest.fixture
def app(sec):
    with live(sec) as running:
        running.sid = new_session_id()
        running.post("/seed_session", json=episode_seed(running.sid))
        yield running


def results(response) -> str:
    assert response.status_code == 200, response.text[:500]
    return response.json()["results"]


# ----- SEC faults (§F.2: retry 403/429/503 and transport errors; any other status is "no data") -----

FAULTS = {
    "429": (lambda sec, path: sec.script(path, [429] * ATTEMPTS), ATTEMPTS),
    "503 with Retry-After: 3600": (
        lambda sec, path: sec.script(path, [503] * ATTEMPTS, {"Retry-After": "3600"}),
        ATTEMPTS,
    ),
    "503": (lambda sec, path: sec.script(path, [503] * ATTEMPTS), ATTEMPTS),
    "500": (lambda sec, path: sec.script(path, [500]), 1),
    "404": (lambda sec, path: sec.script(path, [404]), 1),
    "hangs past request_timeout": (lambda sec, path: sec.hang(path, 4.0), ATTEMPTS),
    "closes mid-body": (lambda sec, path: sec.cut(path, 100), ATTEMPTS),
    "an image content type": (lambda sec, path: sec.serve_as(path, "image/png"), 1),
    "octet-stream": (lambda sec, path: sec.serve_as(path, "application/octet-stream"), 1),
    "a body over fetch_max_bytes": (lambda sec, path: sec.serve_bytes(path, b"<p>" + b"x" * CAP, "text/html"), 1),
}
FILING_ONLY = {
    "garbage bytes as text/html": (lambda sec, path: sec.serve_bytes(path, GARBAGE, "text/html"), 1),
}
SUBMISSIONS_ONLY = {
    "truncated JSON": (
        lambda sec, path: sec.serve_bytes(
            path, b'{"cik": "990000001", "filings": {"recent": {"acc', "application/json"
        ),
        1,
    ),
    "garbage bytes as JSON": (lambda sec, path: sec.serve_bytes(path, GARBAGE, "application/json"), 1),
    "HTML instead of JSON": (lambda sec, path: sec.serve_bytes(path, b"<html>maintenance</html>", "text/html"), 1),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fault", [*FAULTS, *FILING_ONLY])
def test_parse_html_page_answers_a_filing_fault_with_a_tool_error_and_recovers(app, sec, fault):
    """§A.8 step 6. Mutation: caching the failed read (or the garbage) by URL, retrying a 500, or waiting out
    a Retry-After of an hour fails this."""
    setup, requests = {**FAULTS, **FILING_ONLY}[fault]
    setup(sec, FIRST.url_path)
    reply = results(app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"}))
    assert reply.startswith(
        ("Failed to download filing from", "HTML could not be parsed", "The document could not be read")
    ), reply
    assert len(sec.requests_for(FIRST.url_path)) == requests
    assert app.describe(app.sid)["documents"] == []
    assert app.metrics.count("finsec_retries", target="sec") == requests - 1  # each retry counted
    if fault[:3].isdigit():  # the status SEC answered, counted per attempt
        assert app.metrics.count("finsec_sec_fetches", source="live", status=fault[:3]) == requests

    sec.reset()  # SEC recovers: the same call now works, in the same session
    assert results(app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})).startswith("SUCCESS")
    assert "Total net revenues" in results(
        app.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"})
    )
    assert app.post("/close_session", json=close_body(app.sid)).status_code == 200


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fault", [*FAULTS, *SUBMISSIONS_ONLY])
def test_sec_filing_search_says_sec_is_unavailable_and_never_remembers_it(app, sec, fault):
    """§A.6 step 3 would answer an outage with "No filings found" and 0.7.0 kept that answer for the life of
    the process; here it is an error that says it is temporary, and the next search asks SEC again. Mutation:
    caching an empty filing set after a failed load fails this."""
    setup, _ = {**FAULTS, **SUBMISSIONS_ONLY}[fault]
    setup(sec, SUBMISSIONS)
    answer = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert isinstance(answer, dict) and answer["error"].startswith("Could not load the filings of")
    assert "temporary" in answer["suggestion"] and "No filings found" not in answer["error"]

    sec.reset()
    found = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert FIRST.accession in {row["accession_number"] for row in found}


NOT_AN_OBJECT = {
    "an array": b"[]",
    "a string": b'"maintenance"',
    "a number": b"503",
    "a boolean": b"true",
    "null": b"null",
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("shape", list(NOT_AN_OBJECT))
def test_submissions_json_that_is_not_an_object_is_unavailable_not_no_filings(app, sec, shape):
    """A 200 whose JSON is not a submissions object says nothing about the company: the same temporary error
    as an outage, nothing kept. Mutation: answering "No filings found" (and keeping that) fails this."""
    sec.serve_bytes(SUBMISSIONS, NOT_AN_OBJECT[shape], "application/json")
    answer = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert answer["error"].startswith("Could not load the filings of"), answer

    sec.reset()
    found = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert FIRST.accession in {row["accession_number"] for row in found}


PAGE_FAULTS = {
    "503 after every attempt": lambda sec, path: sec.script(path, [503] * ATTEMPTS),
    "a JSON array": lambda sec, path: sec.serve_bytes(path, b"[]", "application/json"),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fault", list(PAGE_FAULTS))
def test_a_submissions_page_that_fails_gives_a_partial_answer_that_is_not_kept(app, sec, corpus, fault):
    """§F.1: older filings live on further pages. One that SEC does not serve (or serves as JSON of another
    shape) leaves the answer partial for now; the next search reads it again and completes it. Mutation:
    caching the partial set fails this."""
    main = json.loads((corpus / SUBMISSIONS).read_text())
    recent = main["filings"]["recent"]
    oldest = recent["accessionNumber"].index(
        min(recent["accessionNumber"], key=lambda a: recent["filingDate"][recent["accessionNumber"].index(a)])
    )
    page_name = f"CIK{FIRST.issuer.cik:010d}-submissions-001.json"
    main["filings"]["recent"] = {k: v[:oldest] + v[oldest + 1 :] for k, v in recent.items()}
    main["filings"]["files"] = [{"name": page_name}]
    older = {k: [v[oldest]] for k, v in recent.items()}
    sec.serve_bytes(SUBMISSIONS, json.dumps(main).encode(), "application/json")
    PAGE_FAULTS[fault](sec, f"submissions/{page_name}")
    everything = set(recent["accessionNumber"])

    partial = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert {row["accession_number"] for row in partial} == everything - {recent["accessionNumber"][oldest]}
    sec.serve_bytes(f"submissions/{page_name}", json.dumps(older).encode(), "application/json")
    complete = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
    assert {row["accession_number"] for row in complete} == everything


@pytest.mark.timeout(30)
def test_concurrent_searches_share_one_load_and_its_failure(app, sec):
    """§F.3: one fetch per company at a time. Under an outage, waiting searches share the failed load instead
    of each retrying it in turn behind a lock (which would make the last one wait for all of them)."""
    sec.script(SUBMISSIONS, [503] * ATTEMPTS)
    sec.hang(SUBMISSIONS, 0.2)  # each attempt takes a while, so all eight searches arrive during the one load

    async def burst():
        import asyncio

        return await asyncio.gather(
            *(app.client.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker}) for _ in range(8))
        )

    replies = app.run(burst())
    assert all("Could not load the filings" in results(r) for r in replies), [results(r)[:120] for r in replies]
    assert len(sec.requests_for(SUBMISSIONS)) == ATTEMPTS  # one load, its retries, shared by all eight


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fault", ["503", "a JSON array", "rows that are not objects"])
def test_a_server_that_cannot_load_the_ticker_registry_never_starts(sec, fault):
    """§F.2: the server does not start without company_tickers.json (and says so), however SEC fails."""
    {
        "503": lambda: sec.script("files/company_tickers.json", [503] * 20),
        "a JSON array": lambda: sec.serve_bytes("files/company_tickers.json", b"[]", "application/json"),
        "rows that are not objects": lambda: sec.serve_bytes(
            "files/company_tickers.json", b'{"0": 7}', "application/json"
        ),
    }[fault]()
    with pytest.raises(RuntimeError, match="Failed to load SEC ticker data"), live(sec, max_retries=1):
        pass


# ----- the judge (§D.4; A.3's judge_failsafe; Decision 11) -----

JUDGE = {"judge_call_timeout": 1.0, "judge_retry_delays": [0.01, 0.01]}


@pytest.fixture
def judged(stub):
    with InProcess(
        judge_model={"base_url": stub.base_url, "model": "judge"}, edgar_search_mode=None, **JUDGE
    ) as running:
        running.sid = new_session_id()
        running.post("/seed_session", json=episode_seed(running.sid))
        running.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})
        yield running


UNREACHABLE = {  # no reply to read after every attempt: a masked judge_failed row
    "times out": lambda stub: [stub.reply(responses_reply("[[2]]"), delay=3.0) for _ in range(ATTEMPTS)],
    "HTTP 500": lambda stub: [stub.reply({"error": {"message": "overloaded"}}, status=500) for _ in range(ATTEMPTS)],
    "HTTP 429": lambda stub: [stub.reply("slow down", status=429) for _ in range(ATTEMPTS)],
    "garbage JSON": lambda stub: [stub.reply('{"output": [{"type": "mess', status=200) for _ in range(ATTEMPTS)],
    "a JSON array": lambda stub: [stub.reply("[[2]]", status=200) for _ in range(ATTEMPTS)],
}
UNPARSEABLE = {  # the judge answered, never with a verdict: a real 0, flagged judge_unparseable
    "no [[N]]": lambda stub: [stub.reply(responses_reply("The candidate looks right.")) for _ in range(ATTEMPTS)],
    "no message": lambda stub: [stub.reply(responses_reply(None)) for _ in range(ATTEMPTS)],
    "cut short": lambda stub: [
        stub.reply(responses_reply("[[2]", incomplete="max_output_tokens")) for _ in range(ATTEMPTS)
    ],
    "not a Responses object": lambda stub: [stub.reply({"choices": []}) for _ in range(ATTEMPTS)],
}


@pytest.mark.timeout(30)  # judge_call_timeout x attempts is 3 s: a hang would be far past this
@pytest.mark.parametrize("fault", list(UNREACHABLE))
def test_a_judge_that_cannot_be_read_gives_a_masked_judge_failed_row(judged, stub, fault):
    """§A.3, Decision 11. Mutation: scoring an unreachable judge as 0 (unmasked), or retrying without bound."""
    UNREACHABLE[fault](stub)
    row = judged.post("/verify", json=verify_body()).json()
    assert (row["reward"], row["mask_sample"], row["failure_kind"]) == (0.0, True, "judge_failed")
    assert row["failure_reason"] and row["_ng_failure_class"] == "judge_failed"
    assert len(stub.requests) == ATTEMPTS
    # an operator sees a judge outage as masked judge_failed verifies, never as scored ones (counted after grading)
    metrics = judged.metrics
    assert metrics.count("finsec_verifies", outcome="masked", failure_kind="judge_failed") == 1
    assert metrics.count("finsec_verifies", outcome="scored") == 0
    assert metrics.count("finsec_model_call_seconds", model="judge", outcome="error") == ATTEMPTS
    assert metrics.count("finsec_retries", target="judge") == ATTEMPTS - 1

    stub.reply(responses_reply("The rating is: [[2]]"))  # the judge is back: a re-send is judged afresh
    again = judged.post("/verify", json=verify_body()).json()
    assert (again["reward"], again["mask_sample"], again["failure_kind"]) == (1.0, False, None)
    assert metrics.count("finsec_verifies", outcome="scored") == 1
    assert metrics.count("finsec_model_call_seconds", model="judge", outcome="ok") == 1
    assert judged.describe(judged.sid)["documents"] == ["doc"]  # the session is unharmed
    assert judged.post("/close_session", json=close_body(judged.sid)).status_code == 200


@pytest.mark.timeout(20)
@pytest.mark.parametrize("fault", list(UNPARSEABLE))
def test_a_judge_that_answers_without_a_verdict_gives_a_real_zero_flagged_unparseable(judged, stub, fault):
    """Decision 11: reachable but unparseable is a measurement (0, not masked), with a diagnostic kind."""
    UNPARSEABLE[fault](stub)
    row = judged.post("/verify", json=verify_body()).json()
    assert (row["reward"], row["mask_sample"], row["failure_kind"]) == (0.0, False, "judge_unparseable")
    assert row["judge_rating"] is None and len(stub.requests) == ATTEMPTS
    assert judged.metrics.count("finsec_verifies", outcome="scored", failure_kind="judge_unparseable") == 1
    assert judged.metrics.count("finsec_retries", target="judge", reason="unparseable") == ATTEMPTS - 1


@pytest.mark.timeout(20)
def test_a_judge_that_recovers_within_its_attempts_grades(judged, stub):
    stub.reply("busy", status=503)
    stub.reply(responses_reply("[[2]]"), delay=3.0)  # times out
    stub.reply(responses_reply("The rating is: [[2]]"))
    row = judged.post("/verify", json=verify_body()).json()
    assert (row["reward"], row["mask_sample"], row["judge_rating"]) == (1.0, False, 2)


@pytest.mark.timeout(20)
def test_a_judge_nobody_listens_on_gives_judge_failed(stub):
    with InProcess(
        judge_model={"base_url": closed_port_url(), "model": "judge"}, edgar_search_mode=None, **JUDGE
    ) as app:
        row = app.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["failure_kind"]) == (True, "judge_failed")
        assert app.get("/health").json() == {"status": "ok"}


# ----- the retrieval model (§E.3: one call, no retry, every failure an "ERROR: Retrieval LLM ..." result) -----


@pytest.fixture
def retrieving(stub):
    model = {"base_url": stub.base_url, "model": "policy", "timeout_seconds": 1.0}
    with InProcess(retrieval_model=model, edgar_search_mode=None) as running:
        running.sid = new_session_id()
        running.post("/seed_session", json=episode_seed(running.sid))
        assert results(running.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})).startswith("SUCCESS")
        yield running


RETRIEVAL_FAULTS = {
    "HTTP 500": (lambda stub: stub.reply("upstream exploded", status=500), "ERROR: Retrieval LLM HTTP 500: upstream"),
    "times out": (lambda stub: stub.reply(responses_reply("late"), delay=3.0), "ERROR: Retrieval LLM call failed"),
    "garbage JSON": (lambda stub: stub.reply('{"output": [', status=200), "ERROR: Retrieval LLM call failed"),
    "a JSON array": (lambda stub: stub.reply("[1, 2]", status=200), "ERROR: Retrieval LLM call failed"),
    "no output": (
        lambda stub: stub.reply(responses_reply(None, incomplete="max_output_tokens")),
        "ERROR: Retrieval LLM returned no output. (incomplete_details.reason=max_output_tokens",
    ),
    "not a Responses object": (lambda stub: stub.reply({"choices": [1]}), "ERROR: Retrieval LLM returned no output."),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("fault", list(RETRIEVAL_FAULTS))
def test_a_retrieval_model_that_misbehaves_gives_a_retrieval_llm_error(retrieving, stub, fault):
    """§E.3. Mutation: letting the model client's exception escape (a 500) or retrying it fails this."""
    script, says = RETRIEVAL_FAULTS[fault]
    script(stub)
    reply = results(retrieving.post("/retrieve_information", json={"prompt": "revenues {{doc}}"}))
    assert reply.startswith(says), reply[:300]
    assert len(stub.requests) == 1
    stub.reply(responses_reply("Total net revenues were 979,207."))  # the session is unharmed
    assert results(retrieving.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})).startswith("Total")


@pytest.mark.timeout(20)
def test_a_retrieval_model_that_never_answers_is_bounded_even_without_an_http_timeout(stub):
    """An endpoint with no HTTP timeout (the default) must still not hang the tool: the call has its own bound."""
    stub.reply(responses_reply("late"), delay=5.0)
    retrieval = LlmRetrieval(ModelEndpoint(base_url=stub.base_url), system_prompt="s", call_timeout=0.3)

    async def ask():
        try:
            return await retrieval.answer("q")
        finally:
            await retrieval.aclose()

    import asyncio

    assert asyncio.run(ask()).startswith("ERROR: Retrieval LLM call failed: no reply within 0.3 seconds")
