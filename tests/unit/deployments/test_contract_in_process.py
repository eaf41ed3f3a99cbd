"""The HTTP contract in one process: the real routes, middleware, core, batching and document store, over ASGI,
with a clock the tests move. Each rule here would otherwise be checked only by the slow Ray suite.

Sections cite docs/contract.md; the mutations named in a test's docstring are the ones it exists to catch.
"""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.routing import APIRoute
from starlette.routing import Route

from deployments.asgi import ROLLOUT_ROUTES
from finsec.corpus.generate import questions
from harness.bodies import close_body, cookie_claims, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess

Q = questions()[0]
BUDGET = 60.0
ADMIN = "operator-secret-of-at-least-32-chars"


@pytest.fixture
def app():
    with InProcess(
        max_rollout_time_seconds=BUDGET,
        fence_ttl_seconds=100.0,
        session_ttl_seconds=1_000.0,
        document_grace_seconds=10.0,
        admin_token=ADMIN,
    ) as running:
        yield running


def parse(app, key="doc", url=Q["url"], client=None):
    return app.post("/parse_html_page", client=client, json={"url": url, "key": key})


def results(response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["results"]


# ----- the time budget (§A.15) -----


def test_the_time_budget_stops_every_budgeted_tool_and_only_those(app):
    """Mutation: a budget 10x looser (or one that ignores the search tools) fails this."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    app.clock.advance(BUDGET - 1)
    assert results(parse(app)).startswith("SUCCESS")
    app.clock.advance(2)  # 61 s into a 60 s budget
    for path, body in (
        ("/parse_html_page", {"url": Q["url"], "key": "k2"}),
        ("/retrieve_information", {"prompt": "revenue {{doc}}"}),
        ("/sec_filing_search", {"ticker": Q["ticker"]}),
        ("/edgar_search", {"search_query": "revenue"}),
    ):
        message = json.loads(results(app.post(path, json=body)))["error"]
        assert message.startswith("Time budget exhausted (61s / 60s)"), path
    assert "success" in results(app.post("/submit_final_result", json={"final_result": "42"}))


def test_a_retried_seed_keeps_the_budget_and_an_agent_run_seed_restarts_it(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    app.clock.advance(BUDGET + 1)
    app.post("/seed_session", json=episode_seed(sid))  # a retry: the budget keeps running
    assert "Time budget exhausted" in results(app.post("/sec_filing_search", json={"ticker": Q["ticker"]}))
    other = app.new_client()
    app.post("/seed_session", client=other, json={})
    app.clock.advance(BUDGET + 1)
    app.post("/seed_session", client=other, json={})  # an agent-run seed restarts it
    assert "error" not in results(app.post("/sec_filing_search", client=other, json={"ticker": Q["ticker"]}))[:20]


def test_a_session_that_is_no_longer_open_has_no_budget(app):
    """§A.15: no recorded start, no limit; the stateful tools then answer 404 session_lost (§C.6)."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    app.clock.advance(1_001)  # past the session TTL (and the budget)
    assert "Time budget" not in results(app.post("/sec_filing_search", json={"ticker": Q["ticker"]}))
    assert parse(app).status_code == 404


# ----- transport rules (§A.0) -----


def test_the_rollout_prefix_is_the_same_route(app):
    """Mutation: turning off the /ng-rollout prefix fails this."""
    sid = new_session_id()
    assert app.post("/ng-rollout/r-1.a_b/seed_session", json=episode_seed(sid)).status_code == 200
    assert app.describe(sid)["open"]
    assert results(app.post("/ng-rollout/r-1/parse_html_page", json={"url": Q["url"], "key": "k"})).startswith(
        "SUCCESS"
    )
    row = app.post("/ng-rollout/r-1/verify", json=verify_body()).json()
    assert row["reward"] == 1.0 and "question" not in row


def test_every_response_carries_the_cookie_even_errors(app):
    json_headers = {"content-type": "application/json"}
    huge = b'{"final_result": "' + b"x" * (app.settings.max_request_bytes + 1) + b'"}'
    for expected, response in (
        (422, app.post("/seed_session", json={"resources_session_id": ""})),
        (422, app.post("/close_session", json=close_body("x", rollout="bad id"))),
        (404, app.post("/retrieve_information", json={"prompt": "{{k}}"})),
        (422, app.post("/verify", content=b'{"reward": NaN}', headers=json_headers)),  # strict JSON
        (413, app.post("/submit_final_result", content=huge, headers=json_headers)),
    ):
        assert response.status_code == expected, (expected, response.text[:200])
        assert cookie_claims(response, app.settings.cookie_name)["session_id"], response.status_code


ACCESSION_FOLDER = Q["url"].rsplit("/", 1)[0] + "/"  # names no document


@pytest.mark.parametrize(
    "url, key, says",
    [
        ("", "k", "ERROR: url is required."),
        ("https://www.sec.gov/x", "", "ERROR: key is required."),
        ("https://www.sec.gov/x", "{{k}}", "ERROR: key must not contain '{' or '}'"),
        ("https://www.sec.gov/Archives/edgar/data/12x/000032019324000008/a.htm", "k", "Invalid SEC URL format: "),
        (ACCESSION_FOLDER, "k", f"Invalid SEC URL format: {ACCESSION_FOLDER}"),
    ],
)
def test_parse_html_page_checks_its_arguments_before_the_session(app, url, key, says):
    """Decision 13: time budget, then argument checks, then the session-open check (404). Mutation: checking
    that a filing URL names a document only once the filing is fetched (after the 404) fails this."""
    never_seeded = app.new_client()
    response = app.post("/parse_html_page", client=never_seeded, json={"url": url, "key": key})
    assert response.status_code == 200 and response.json()["results"].startswith(says), response.text
    response = app.post("/parse_html_page", client=never_seeded, json={"url": Q["url"], "key": "k"})
    assert response.status_code == 404  # valid arguments: now the session check


@pytest.mark.parametrize(
    "body, says",
    [
        ({"prompt": "what were revenues?"}, "ERROR: Your prompt must include at least one key"),
        (
            {"prompt": "{{doc}}", "input_character_ranges": [{"key": "doc", "start": "0", "end": 10}]},
            "ERROR: input_character_ranges for key 'doc' needs integer start and end",
        ),
    ],
)
def test_retrieve_information_checks_its_arguments_before_the_session(app, body, says):
    """Decision 13 over §E.1's order (which checks the session before the placeholders). Mutation: reading
    the session's documents before checking the prompt and the ranges fails this."""
    closed = new_session_id()
    app.post("/seed_session", json=episode_seed(closed))
    app.post("/close_session", json=close_body(closed))
    for client in (app.new_client(), app.client):  # never seeded; closed
        response = app.post("/retrieve_information", client=client, json=body)
        assert response.status_code == 200 and response.json()["results"].startswith(says), response.text
        response = app.post("/retrieve_information", client=client, json={"prompt": "revenue {{doc}}"})
        assert response.status_code == 404 and response.json()["failure_kind"] == "session_lost"


class FailsLikeABug:
    """Stands in for a tool's work (the search backend, the parser, the retriever) and fails as a bug would."""

    def __init__(self, error: Exception):
        self.error = error

    def argument_error(self, url, key):
        return None

    async def search(self, request):
        raise self.error

    async def parse(self, sid, claims, url, key):
        raise self.error

    async def retrieve(self, sid, claims, prompt, ranges):
        raise self.error


def test_an_unforeseen_failure_in_a_tool_is_its_error_result_and_logged(app, caplog):
    """§A.0 soft tool errors, §A.7 step 5, §A.8 step 6: no tool answers 500, whatever fails inside it; the
    search tools answer a JSON error, the stateful ones an "ERROR:" text. Mutation: letting the exception
    through (a 500 without a cookie) or answering it silently (no traceback in the log) fails this."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    svc = app.app.api.state.services
    svc.full_text = svc.parser = svc.retriever = FailsLikeABug(TypeError("'int' object is not subscriptable"))
    caplog.set_level(logging.ERROR, logger="deployments.routes.tools")
    reply = json.loads(results(app.post("/edgar_search", json={"search_query": "revenue"})))
    assert reply["error"].startswith("edgar_search failed because of a fault in this server (TypeError)")
    for path, body in (
        ("/parse_html_page", {"url": Q["url"], "key": "doc"}),
        ("/retrieve_information", {"prompt": "revenue {{doc}}"}),
    ):
        assert results(app.post(path, json=body)).startswith(
            f"ERROR: {path[1:]} failed because of a fault in this server (TypeError)"
        )
    assert [r.exc_info[0] for r in caplog.records] == [TypeError] * 3


def test_session_errors_inside_a_tool_stay_http_statuses(app):
    """The catch-all of tool failures leaves the session's own answers alone: 404 session_lost, 503."""
    from session_store import SessionLost, StoreUnavailable

    svc = app.app.api.state.services
    svc.parser = FailsLikeABug(SessionLost("s1"))
    assert parse(app).status_code == 404 and parse(app).json()["failure_kind"] == "session_lost"
    svc.parser = FailsLikeABug(StoreUnavailable("shard restarting"))
    assert parse(app).status_code == 503


# ----- fences (§C.4, Decisions 2, 3) -----


def test_a_repeated_close_keeps_the_first_fence(app):
    """Mutation: extending the fence on a repeated close fails this."""
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    app.post("/close_session", json=close_body(sid))
    app.clock.advance(75)
    assert app.post("/close_session", json=close_body(sid)).status_code == 200
    assert app.post("/seed_session", json=episode_seed(sid)).status_code == 409
    app.clock.advance(26)  # 101 s after the first close: its 100 s fence lapsed
    assert app.post("/seed_session", json=episode_seed(sid)).status_code == 200


def test_a_409_close_names_the_episode_and_what_to_do(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid, rollout="r1"))
    refused = app.post("/close_session", json=close_body(sid, rollout="r2"))
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert '"rollout_id": "r1"' in detail and "new resources_session_id" in detail


def test_fences_and_expired_marks_survive_a_shard_restart(app):
    """§C.4 and §G.1 across a crash: the marks are durable, the sessions are not."""
    closed, evicted = new_session_id(), new_session_id()
    app.post("/seed_session", json=episode_seed(closed))
    app.post("/close_session", json=close_body(closed))
    app.restart_shards()
    late = app.new_client()  # the late cookie-less seed single_agent_turn sends
    assert app.post("/seed_session", client=late, json=episode_seed(closed)).status_code == 409
    app.post("/seed_session", client=(cookie := app.new_client()), json=episode_seed(evicted))
    app.clock.advance(1_001)
    app.reaper_tick()
    app.restart_shards()
    assert app.post("/seed_session", client=app.new_client(), json=episode_seed(evicted)).status_code == 409
    assert app.post("/verify", client=cookie, json=verify_body()).json()["failure_kind"] == "session_expired"


# ----- hostile input -----


@pytest.mark.parametrize(
    "raw, says",
    [
        (b'{"ticker": NaN}', "non-finite"),
        (b'{"ticker": 1e999}', "too large"),
        (b'{"ticker": -Infinity}', "non-finite"),
        (b'{"ticker": "\\ud83d"}', "surrogate"),
        (b'{"\\udc00": "AAPL"}', "surrogate"),
        (b'{"ticker": ' + b"1" * 5_000 + b"}", "digits"),
        (b"[" * 100 + b"]" * 100, "deeper"),
        (b'{"ticker": "AAPL"', "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bodies_no_renderer_could_echo_get_a_422_that_says_why(app, raw, says):
    response = app.post("/sec_filing_search", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422 and says in response.json()["detail"][0]["msg"]


def test_a_verify_with_a_broken_emoji_in_model_output_is_graded(app):
    body = verify_body()
    body["response"]["output"].insert(
        0, {"type": "message", "content": [{"type": "output_text", "text": "Here \ud83d it is"}]}
    )
    row = app.post("/verify", content=json.dumps(body).encode(), headers={"content-type": "application/json"})
    assert row.status_code == 200 and row.json()["reward"] == 1.0
    assert "Here \ufffd it is" in row.text.encode().decode("unicode_escape")


def test_an_oversized_body_is_refused_before_it_is_read(app):
    huge = b'{"final_result": "' + b"x" * (app.settings.max_request_bytes + 1) + b'"}'
    response = app.post("/submit_final_result", content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "max_request_bytes" in response.json()["detail"]


def test_a_422_echoes_only_a_short_excerpt(app):
    response = app.post("/sec_filing_search", json={"ticker": ["x"] * 50_000})
    assert response.status_code == 422 and len(response.content) < 2_000


def test_long_ids_keys_and_urls_are_refused_with_what_to_fix(app):
    assert app.post("/seed_session", json=episode_seed("s" * 257)).status_code == 422
    assert app.post("/close_session", json=close_body("s" * 257)).status_code == 422
    app.post("/seed_session", json=episode_seed(new_session_id()))
    assert "at most 256" in results(parse(app, key="k" * 257))
    assert "must not contain '{'" in results(parse(app, key="{{doc}}"))
    assert "at most 2048" in results(parse(app, url="https://www.sec.gov/" + "a" * 3_000))
    assert "limit is" in results(app.post("/submit_final_result", json={"final_result": "x" * 100_001}))


def test_a_stringified_list_too_long_to_coerce_is_a_422_not_a_stall(app):
    app.post("/seed_session", json=episode_seed(new_session_id()))
    ranges = "[" + ",".join(["{'key': 'doc', 'start': 0, 'end': 10}"] * 2_000) + "]"  # > 16 KB
    assert (
        app.post("/retrieve_information", json={"prompt": "{{doc}}", "input_character_ranges": ranges}).status_code
        == 422
    )


def test_aggregate_metrics_takes_any_rows(app):
    rows = [
        {"reward": 1e308, "_ng_task_index": "seven"},
        {"reward": 1e308, "_ng_task_index": [1]},
        {"reward": 0.5, "_ng_task_index": 10**30, "mask_sample": False},
    ]
    response = app.post("/aggregate_metrics", json={"verify_responses": rows})
    metrics = response.json()
    # the mean of rewards near the float limit, computed without overflowing to inf
    assert response.status_code == 200 and metrics["agent_metrics"]["mean/reward"] == pytest.approx(1e308 / 3 * 2)


def test_the_unknown_tool_route_takes_any_body(app):
    response = app.post("/hallucinated_tool", content=b'{"x": NaN', headers={"content-type": "application/json"})
    assert "does not exist" in results(response)


def test_a_named_route_wins_over_the_catch_all_in_one_flat_route_list(app):
    """§A.12, with the routes laid out flat (deployments/asgi.py): FastAPI and Serve's replica match every request
    against this list, so a rollout's routes come first and nothing nests (bench/results/routing.md)."""
    routes = app.app.api.router.routes
    assert [route.path for route in routes[: len(ROLLOUT_ROUTES)]] == list(ROLLOUT_ROUTES)
    assert routes[-1].path == "/{tool_name}" and all(isinstance(route, Route) for route in routes)
    schema_paths = set(app.get("/openapi.json").json()["paths"])
    assert {route.path for route in routes if isinstance(route, APIRoute)} == schema_paths
    assert "does not exist" not in results(app.post("/submit_final_result", json={"final_result": "42"}))


@pytest.mark.parametrize("path", ["/verify/", "/sec_filing_search/", "/hallucinated_tool/", "/healthz/"])
def test_a_trailing_slash_is_a_json_404_with_the_cookie_never_a_bodiless_redirect(app, path):
    """§A.0: every reply is JSON and carries the session cookie; Starlette's slash redirect was a 307 with neither."""
    response = app.post(path, json={"ticker": "HLXR1"})
    assert response.status_code == 404 and response.headers["content-type"].startswith("application/json")
    assert response.json()["detail"] and cookie_claims(response, app.settings.cookie_name)["session_id"]


# ----- bounded sessions -----


def test_a_session_holds_at_most_max_documents_per_session():
    with InProcess(max_documents_per_session=2) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        assert results(parse(app, key="a")).startswith("SUCCESS")
        assert results(parse(app, key="b")).startswith("SUCCESS")
        assert "max_documents_per_session" in results(parse(app, key="c"))
        assert results(parse(app, key="a")).startswith("WARNING")  # overwriting stays possible


# ----- documents by content -----


def test_a_group_sharing_a_filing_stores_one_copy_and_releases_every_reference(app):
    sids = [new_session_id() for _ in range(16)]
    clients = [app.new_client() for _ in sids]
    for sid, client in zip(sids, clients, strict=False):
        app.post("/seed_session", client=client, json=episode_seed(sid))
        assert results(parse(app, client=client)).startswith("SUCCESS")
    assert app.app.documents.stats()["texts"] == 1  # one copy for the whole group
    stats = app.stats()
    assert stats["documents"] == 16 and all(row["digests"] == 1 for row in stats["shards"])  # refs, not copies
    for sid in sids[:8]:
        app.post("/close_session", json=close_body(sid))
    for sid in sids[8:12]:
        app.post("/admin/retire_session_state", json={"session_id": sid}, headers={"Authorization": f"Bearer {ADMIN}"})
    app.clock.advance(1_001)  # the rest outlive their TTL and are evicted
    app.clock.advance(11)
    app.reaper_tick()
    assert (app.stats()["sessions"], app.stats()["documents"], app.stats()["digests"]) == (0, 0, 0)
    assert app.app.documents.stats()["referenced"] == 0  # a filing may stay as cache, held by no session


def test_retrieve_reads_texts_by_digest_and_ranges_select_passages(app):
    app.post("/seed_session", json=episode_seed(new_session_id()))
    parse(app)
    reply = results(
        app.post(
            "/retrieve_information",
            json={
                "prompt": "total net revenues {{doc}}",
                "input_character_ranges": [{"key": "doc", "start": 0, "end": 3_000}],
            },
        )
    )
    spans = [tuple(map(int, part.split("]")[0].split("-"))) for part in reply.split("[doc characters ")[1:]]
    assert spans and all(0 <= a < b <= 3_000 for a, b in spans)


# ----- retire (§C.8, Decision 8) and the operator's routes -----


def test_retire_needs_the_admin_token(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    assert app.post("/admin/retire_session_state", json={"session_id": sid}).status_code == 401
    assert (
        app.post(
            "/admin/retire_session_state", json={"session_id": sid}, headers={"Authorization": "Bearer wrong"}
        ).status_code
        == 401
    )
    assert app.describe(sid)["open"]
    assert (
        app.post(
            "/admin/retire_session_state", json={"session_id": sid}, headers={"Authorization": f"Bearer {ADMIN}"}
        ).status_code
        == 200
    )
    assert app.describe(sid) == {
        "open": False,
        "episode": False,
        "documents": [],
        "fenced": False,
        "fence_cause": None,
        "expired": False,
    }  # released, not fenced


def test_without_an_admin_token_the_retire_route_does_not_exist():
    with InProcess() as app:
        assert (
            app.post(
                "/admin/retire_session_state", json={"session_id": "x"}, headers={"Authorization": "Bearer "}
            ).status_code
            == 404
        )
        # not even its body's rules show through: a bad body is a 404 too, not a 422 naming the fields
        assert app.post("/admin/retire_session_state", json={"wrong": 1}).status_code == 404


def test_the_retire_route_refuses_a_caller_without_the_token_before_reading_its_body(app):
    assert app.post("/admin/retire_session_state", json={"wrong": 1}).status_code == 401
    response = app.post("/admin/retire_session_state", json={"wrong": 1}, headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code == 422 and "session_id" in response.text


def test_session_counters_count_what_happened(app):
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    app.post("/seed_session", json=episode_seed(sid))
    app.post("/seed_session", json=episode_seed(sid, rollout="other"))
    app.post("/verify", json=verify_body())
    app.post("/close_session", json=close_body(sid))
    app.post("/verify", json=verify_body())
    counters = app.get("/session_counters").json()["counters"]
    assert counters == {
        "seeds.episode.created": 1,
        "seeds.episode.retried": 1,
        "conflicts.seed_mismatch": 1,
        "verifies.scored": 1,
        "closes": 1,
        "verifies.masked.session_lost": 1,
    }


def test_without_an_admin_token_no_body_shows_the_retire_route():
    """Not a 422 for bad JSON, nor a 413 for a big body: the route is simply not there."""
    with InProcess() as app:
        for body in (b"{", b'{"session_id": NaN}', b'{"session_id": "\\ud800"}'):
            response = app.post(
                "/admin/retire_session_state", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 404, body


# ----- grounding: are the answer's figures in the session's documents (issue 15) -----


def parsed_then_answered(answer: str, *keys: str) -> dict:
    """A verify body whose trajectory parsed the filing under `keys` before submitting `answer`."""
    body = verify_body(answer, expected=Q["expected_answer"])
    calls = [
        {
            "type": "function_call",
            "name": "parse_html_page",
            "call_id": f"p{i}",
            "arguments": json.dumps({"url": Q["url"], "key": k}),
        }
        for i, k in enumerate(keys)
    ]
    body["response"]["output"][:0] = calls
    return body


def test_a_verify_row_says_whether_the_answers_figures_are_in_the_parsed_filing(app):
    """Seed, parse a corpus filing, retrieve, verify: a figure read from the filing (at its own scale or another)
    is grounded, a guessed one is not and is listed, an answer with no figures is not checked."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    assert results(parse(app)).startswith("SUCCESS")
    assert Q["evidence"] in results(app.post("/retrieve_information", json={"prompt": Q["question"] + " {{doc}}"}))
    in_thousands = float(Q["evidence"].replace(",", "")) / 1_000
    for answer in (Q["expected_answer"], f"${in_thousands:,.1f} million"):  # the table's figure, rescaled
        row = app.post("/verify", json=parsed_then_answered(answer, "doc")).json()
        assert (row["reward"], row["grounded"], row["ungrounded_figures"]) == (1.0, True, []), answer
    row = app.post("/verify", json=parsed_then_answered("$4,321.7 million", "doc")).json()
    assert (row["reward"], row["grounded"], row["ungrounded_figures"]) == (0.0, False, ["$4,321.7 million"])
    row = app.post("/verify", json=parsed_then_answered("Delaware", "doc")).json()
    assert (row["grounded"], row["ungrounded_figures"]) == (None, [])


def test_an_answer_no_document_of_the_session_states_is_ungrounded_even_when_right(app):
    """The expected figure, submitted by a session that never parsed the filing: the grader passes it (default
    settings), and the row says it is not grounded."""
    app.post("/seed_session", json=episode_seed(new_session_id()))
    row = app.post("/verify", json=verify_body(Q["expected_answer"], expected=Q["expected_answer"])).json()
    assert (row["reward"], row["grounded"], row["ungrounded_figures"]) == (1.0, False, [Q["expected_answer"]])


def test_require_grounded_answer_gives_a_guess_zero_with_reason_ungrounded():
    """A right answer that no document of the session states earns 0, again on an identical re-send (the kept
    verdict is the gated one); once the session parsed the filing, it earns 1. Mutation: no gate, a gate on
    grounded answers too, or one that ignores the setting, fails this."""
    with InProcess(require_grounded_answer=True) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        guessed = verify_body(Q["expected_answer"], expected=Q["expected_answer"])  # right, but read from nothing
        for _ in range(2):  # and the same for an identical re-send
            row = app.post("/verify", json=guessed).json()
            assert (row["reward"], row["failure_kind"], row["grounded"]) == (
                0.0,
                "finance_sec_search:ungrounded",
                False,
            )
            assert row["judge_text"].startswith("ungrounded: no document this session stored states")
        parse(app)
        row = app.post("/verify", json=parsed_then_answered(Q["expected_answer"], "doc")).json()
        assert (row["reward"], row["failure_kind"], row["grounded"]) == (1.0, None, True)


def test_an_agent_run_sessions_documents_are_read_before_its_verify_releases_them(app):
    """Mutation: reading the documents after finish_verify (which releases an agent-run session) gives null."""
    app.post("/seed_session", json={})
    parse(app)
    row = app.post("/verify", json=parsed_then_answered(Q["expected_answer"], "doc")).json()
    assert (row["reward"], row["grounded"]) == (1.0, True)
    assert app.stats()["sessions"] == 0  # released by the verify, as before


def test_aggregate_metrics_report_the_grounded_share_of_checked_rows(app):
    """Rows with grounded true and false count; a row with nothing to check (null) and a masked row do not."""
    sid = new_session_id()
    app.post("/seed_session", json=episode_seed(sid))
    parse(app)
    rows = [
        app.post("/verify", json=parsed_then_answered(answer, "doc")).json()
        for answer in (Q["expected_answer"], "$4,321.7 million", "Delaware")
    ]
    app.post("/close_session", json=close_body(sid))  # a verify after close is masked and carries no grounding
    masked = app.post("/verify", json=parsed_then_answered(Q["expected_answer"], "doc")).json()
    assert masked["mask_sample"] and masked["grounded"] is None
    metrics = app.post("/aggregate_metrics", json={"verify_responses": rows + [masked]}).json()
    for block in ("agent_metrics", "key_metrics"):
        assert metrics[block]["grounding/checked_rollouts"] == 2
        assert metrics[block]["grounding/grounded_rate"] == 0.5


def test_a_client_that_drops_its_cookie_cannot_crowd_out_episodes():
    """Every agent-run seed without a cookie makes a session; past max_agent_run_sessions_per_shard they are 503
    store_full (retry later, or send the cookie back), while episode seeds go on."""
    with InProcess(num_shards=1, max_agent_run_sessions_per_shard=3) as app:
        keeper = app.new_client()  # keeps its cookie
        assert app.post("/seed_session", json={}, client=keeper).status_code == 200
        for _ in range(2):
            assert app.post("/seed_session", json={}, client=app.new_client()).status_code == 200
        refused = app.post("/seed_session", json={}, client=app.new_client())
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert "max_agent_run_sessions_per_shard" in refused.json()["detail"]
        assert app.post("/seed_session", json=episode_seed(new_session_id())).status_code == 200
        assert app.post("/seed_session", json={}, client=keeper).status_code == 200  # a reset of its own
