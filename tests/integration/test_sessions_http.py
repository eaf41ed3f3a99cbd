"""The resources-sessions contract over real HTTP against the Serve app (2 ingress replicas, 4 shards).

Covers docs/contract.md §G.1-G.3 (Decision 16) and the §C.10 rows that show at the routes. State is checked through
the session store, not only through status codes.
"""

from __future__ import annotations

import asyncio

import pytest

from finsec.contract import CloseSessionResponse, EpisodeSeedResponse
from finsec.corpus.generate import questions

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

FILING_URL = questions()[0]["url"]


@pytest.fixture(scope="module", params=["/", "/finsec"], ids=["at /", "under /finsec, ray hop"])
def app(serve_url, request):
    """The whole contract suite at the root, and again under a route prefix (Serve keeps it in the path) with
    batches sent to the shards as actor calls (`shard_transport: ray`) rather than over the direct transport."""
    if request.param == "/":
        yield from deployed_app(serve_url, "it-sessions")
    else:
        yield from deployed_app(serve_url, "it-sessions-prefixed", route_prefix="/finsec", shard_transport="ray")


def parse(client, key: str = "doc"):
    return client.post("/parse_html_page", json={"url": FILING_URL, "key": key})


def test_batches_take_the_configured_hop(app):
    with app.client() as client:
        assert client.post("/seed_session", json=episode_seed(new_session_id())).status_code == 200
    connected = app.stats()["direct_connections"]  # the replicas' connections (and this test's own store's)
    assert connected == 0 if app.settings.shard_transport == "ray" else connected >= 1


# ----- §G.1: the 0.7.0 conformance check, keeps_state=True -----


def test_conformance_check(app):
    sid = new_session_id()
    with app.client() as client:  # one client that keeps cookies, as the check does
        for _ in range(2):  # seed, then the repeated seed
            r = client.post("/seed_session", json=episode_seed(sid))
            assert r.status_code == 200
            assert EpisodeSeedResponse.model_validate(r.json()).resources_session_id == sid
        for _ in range(2):  # close, then the repeated close
            r = client.post("/close_session", json=close_body(sid))
            assert r.status_code == 200
            assert CloseSessionResponse.model_validate(r.json()).resources_session_id == sid
        never = f"{sid}-never-seeded"
        assert client.post("/close_session", json=close_body(never)).status_code == 200
        # late seeds, carrying the cookie bound by the first seed
        assert cookie_claims(client.post("/healthz"), app.settings.cookie_name)["session_id"] == sid
        assert client.post("/seed_session", json=episode_seed(sid)).status_code == 409
        assert client.post("/seed_session", json=episode_seed(never)).status_code == 409
    assert app.describe(sid)["fenced"] and not app.describe(sid)["open"]
    assert app.describe(never)["fenced"]


# ----- §G.2 -----


@pytest.mark.parametrize(
    "conflicting",
    [
        lambda sid: episode_seed(sid, rollout="r2"),
        lambda sid: episode_seed(sid, task="t2"),
        lambda sid: episode_seed(sid, question="another question"),
        lambda sid: {**episode_seed(sid), "episode_id": {"rollout_id": "r1", "attempt": 1}},
    ],
    ids=["episode", "task", "task_data", "attempt"],
)
def test_conflicting_seed_is_refused_and_leaves_the_session_alone(app, conflicting):
    sid = new_session_id()
    with app.client() as owner, app.client() as other:
        assert owner.post("/seed_session", json=episode_seed(sid)).status_code == 200
        assert parse(owner).status_code == 200
        r = other.post("/seed_session", json=conflicting(sid))
        assert r.status_code == 409 and "differs" in r.json()["detail"]
        # Decision 4 / §C.2: the refused seed's reply does not carry the live session's cookie
        assert cookie_claims(r, app.settings.cookie_name)["session_id"] != sid
        assert other.post("/retrieve_information", json={"prompt": "{{doc}}"}).status_code == 404
    assert app.describe(sid)["documents"] == ["doc"]


def test_typed_seed_for_another_episode_is_refused_without_its_cookie(app):
    """§G.3, the PR's named test: a 409 reply must not hand out the live session."""
    sid = new_session_id()
    with app.client() as owner, app.client() as intruder:
        owner.post("/seed_session", json=episode_seed(sid))
        r = intruder.post("/seed_session", json=episode_seed(sid, rollout="intruder"))
        assert r.status_code == 409
        claims = cookie_claims(r, app.settings.cookie_name)
        assert claims["session_id"] != sid and "shard_incarnation" not in claims


def test_conflicting_close_is_refused_and_keeps_the_session(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        parse(client)
        r = client.post("/close_session", json=close_body(sid, rollout="r2"))
        assert r.status_code == 409 and "r1" in r.json()["detail"]
    assert app.describe(sid)["open"] and app.describe(sid)["documents"] == ["doc"]


def test_cookieless_close_after_lost_seed_reply_releases_state(app):
    sid = new_session_id()
    with app.client() as rollout:
        rollout.post("/seed_session", json=episode_seed(sid))  # imagine this reply never arrived...
        assert parse(rollout).status_code == 200
    assert app.describe(sid)["documents"] == ["doc"]
    with app.client() as cleanup:  # ...so cleanup closes with no cookie at all
        assert cleanup.post("/close_session", json=close_body(sid)).status_code == 200
    assert app.describe(sid) == {
        "open": False,
        "episode": False,
        "documents": [],
        "fenced": True,
        "fence_cause": "closed",
        "expired": False,
    }


def test_verify_before_close_is_scored_and_close_still_checks_the_episode(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        r = client.post("/verify", json=verify_body("The answer is 42"))
        assert r.status_code == 200 and r.json()["reward"] == 1.0 and r.json()["mask_sample"] is False
        assert app.describe(sid)["open"]  # verify keeps an episode session until close (§C.5)
        assert client.post("/close_session", json=close_body(sid, rollout="r2")).status_code == 409
        assert client.post("/close_session", json=close_body(sid)).status_code == 200


# ----- §G.3 -----


def test_episode_seed_cookie_reaches_the_tools(app):
    sid = new_session_id()
    with app.client() as client:
        r = client.post("/seed_session", json=episode_seed(sid))
        assert cookie_claims(r, app.settings.cookie_name)["session_id"] == sid  # the explicit bind (§C.2)
        assert "SUCCESS" in parse(client, "filing").json()["results"]
        r = client.post("/retrieve_information", json={"prompt": "What were total net revenues? {{filing}}"})
        assert r.status_code == 200 and "Total net revenues" in r.json()["results"]
    assert app.describe(sid)["documents"] == ["filing"]


def test_retried_seed_without_cookie_gets_the_cookie_and_keeps_documents(app):
    sid = new_session_id()
    with app.client() as first:
        first.post("/seed_session", json=episode_seed(sid))
        parse(first)
    with app.client() as retry:
        r = retry.post("/seed_session", json=episode_seed(sid))
        assert r.status_code == 200 and cookie_claims(r, app.settings.cookie_name)["session_id"] == sid
        r = retry.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
        assert r.status_code == 200 and "passages" in r.json()["results"]


def test_retired_attempt_releases_its_session(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        parse(client)
        for _ in range(2):  # idempotent
            asyncio.run(app.store.retire(sid))
            assert app.describe(sid) == {
                "open": False,
                "episode": False,
                "documents": [],
                "fenced": False,
                "fence_cause": None,
                "expired": False,
            }
        assert parse(client).status_code == 404


def test_resent_verify_before_close_gets_the_same_row(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        first = client.post("/verify", json=verify_body("42"))
        again = client.post("/verify", json=verify_body("42"))
        assert first.json() == again.json() and first.json()["reward"] == 1.0
        other = client.post("/verify", json=verify_body("41"))
        assert other.json()["reward"] == 0.0  # a different body is judged afresh


def test_agent_run_seed_on_an_episode_session_is_refused_and_documents_survive(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        parse(client)
        r = client.post("/seed_session", json={})
        assert r.status_code == 409
        # the cookie still names the episode session, so the agent can go on using it
        assert cookie_claims(r, app.settings.cookie_name)["session_id"] == sid
        assert client.post("/retrieve_information", json={"prompt": "{{doc}}"}).status_code == 200
    assert app.describe(sid)["documents"] == ["doc"]


def test_stateful_tools_on_sessions_that_are_not_open_get_404(app):
    def assert_lost(client):
        for r in (parse(client), client.post("/retrieve_information", json={"prompt": "{{doc}}"})):
            assert r.status_code == 404 and r.json()["failure_kind"] == "session_lost", r.text
            assert "not open" in r.json()["detail"]
        # the search tools and submit do not touch session state (§C.6)
        assert client.post("/submit_final_result", json={"final_result": "x"}).status_code == 200
        assert client.post("/sec_filing_search", json={"ticker": "HLXR1"}).status_code == 200

    with app.client() as never_seeded:
        assert_lost(never_seeded)
    with app.client() as verified:
        verified.post("/seed_session", json={})
        verified.post("/verify", json=verify_body())
        assert_lost(verified)
    sid = new_session_id()
    with app.client() as closed:
        closed.post("/seed_session", json=episode_seed(sid))
        closed.post("/close_session", json=close_body(sid))
        assert_lost(closed)


def test_close_after_verify_with_another_episode_is_refused(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        client.post("/verify", json=verify_body())
        assert client.post("/close_session", json=close_body(sid, rollout="other")).status_code == 409


def test_verify_after_close_is_masked_session_lost(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        client.post("/close_session", json=close_body(sid))
        row = client.post("/verify", json=verify_body("42")).json()
    assert (row["reward"], row["mask_sample"], row["failure_kind"]) == (0.0, True, "session_lost")
    assert row["judge_rating"] is None and row["judge_text"] is None and row["failure_reason"]
    assert "question" not in row  # §A.3: the response model does not echo it


def test_agent_run_verify_releases_the_session(app):
    with app.client() as client:
        assert client.post("/seed_session", json={"question": "legacy run body", "extra": [1, 2]}).json() == {}
        sid = cookie_claims(client.post("/healthz"), app.settings.cookie_name)["session_id"]
        assert parse(client).status_code == 200
        assert app.describe(sid)["documents"] == ["doc"]
        assert client.post("/verify", json=verify_body()).json()["reward"] == 1.0
        assert app.describe(sid)["open"] is False
        assert parse(client).status_code == 404
        # Decision 6: a verify for an already released agent-run session is scored, not masked
        assert client.post("/verify", json=verify_body()).json()["mask_sample"] is False


def test_agent_run_seed_resets_documents(app):
    with app.client() as client:
        client.post("/seed_session", json={})
        parse(client)
        client.post("/seed_session", json={})
        r = client.post("/retrieve_information", json={"prompt": "{{doc}}"})
        assert r.status_code == 200 and "'doc' was not found" in r.json()["results"]


# ----- transport rules (§A.0) -----


def test_requests_of_one_session_spread_over_both_replicas_see_one_session(app):
    sid = new_session_id()

    async def run():
        async with app.async_client() as client:
            await client.post("/seed_session", json=episode_seed(sid))
            replies = []
            for _ in range(10):  # three at a time, so the ingress spreads them over both replicas
                replies += await asyncio.gather(
                    *(client.post("/parse_html_page", json={"url": FILING_URL, "key": f"k{i}"}) for i in range(3))
                )
            return replies, await client.post("/retrieve_information", json={"prompt": "{{k0}} {{k1}} {{k2}}"})

    parses, retrieve = asyncio.run(run())
    assert all(r.status_code == 200 for r in parses) and retrieve.status_code == 200
    assert len({r.headers["x-finsec-replica"] for r in parses}) == 2
    assert app.describe(sid)["documents"] == ["k0", "k1", "k2"]


def test_every_response_carries_the_cookie(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        replies = [
            client.post("/seed_session", json=episode_seed(sid, rollout="x")),  # 409
            client.post("/close_session", json={"resources_session_id": ""}),  # 422
            client.get("/healthz"),
        ]
    with app.client() as fresh:
        replies.append(parse(fresh))  # 404
    for r in replies:
        assert cookie_claims(r, app.settings.cookie_name)["session_id"], r.status_code


def test_rollout_prefix_is_the_same_route(app):
    sid = new_session_id()
    with app.client() as client:
        r = client.post("/ng-rollout/r1.x-2/seed_session", json=episode_seed(sid))
        assert r.status_code == 200 and r.json()["resources_session_id"] == sid
        assert client.post("/ng-rollout/r1/parse_html_page", json={"url": FILING_URL, "key": "d"}).status_code == 200
        assert client.post("/ng-rollout/r1/verify", json=verify_body()).json()["reward"] == 1.0
        assert client.post("/ng-rollout/r1/close_session", json=close_body(sid)).status_code == 200
    assert app.describe(sid)["fenced"]


# ----- validation: 422 with a message that says what to fix, never a fallback (Decisions 5, 15) -----


@pytest.mark.parametrize(
    "body, where",
    [
        ({**episode_seed("x"), "stray": 1}, "stray"),
        ({**episode_seed("x"), "episode_id": {"rollout_id": "r1-a2"}}, "rollout_id"),
        ({**episode_seed("x"), "resources_session_id": ""}, "resources_session_id"),
        ({"resources_session_id": "x"}, "episode_id"),
    ],
    ids=["extra-key", "capture-suffix", "empty-id", "missing-fields"],
)
def test_malformed_episode_seed_is_422_and_never_an_agent_run_seed(app, body, where):
    with app.client() as client:
        r = client.post("/seed_session", json=body)
        assert r.status_code == 422
        assert any(where in map(str, e["loc"]) for e in r.json()["detail"]), r.json()
        assert all(e["msg"] for e in r.json()["detail"])
    assert app.describe("x")["open"] is False


@pytest.mark.parametrize(
    "route, body",
    [
        ("/seed_session", None),
        ("/seed_session", [1, 2]),
        ("/close_session", {"resources_session_id": "", "episode_id": {"rollout_id": "r"}}),
        ("/close_session", {"resources_session_id": "x", "episode_id": {"rollout_id": "r"}, "extra": 1}),
        ("/verify", {"question": "q"}),
        ("/parse_html_page", {"url": "u"}),
    ],
)
def test_bad_bodies_are_422(app, route, body):
    with app.client() as client:
        r = client.post(route, json=body) if body is not None else client.post(route)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][0] == "body"


# ----- verify rows, metrics, small routes -----


def test_verify_hard_gate(app):
    with app.client() as client:
        row = client.post("/verify", json=verify_body(answer=None)).json()
    assert (row["reward"], row["judge_rating"], row["mask_sample"]) == (0.0, 0, False)
    assert "submit_final_result" in row["judge_text"]


def test_aggregate_metrics_excludes_masked_rows(app):
    rows = [
        {**verify_body(), "reward": 1.0, "mask_sample": False, "_ng_task_index": 0, "_ng_rollout_index": 0},
        {**verify_body(), "reward": 0.0, "mask_sample": False, "_ng_task_index": 0, "_ng_rollout_index": 1},
        {**verify_body(), "reward": 0.0, "mask_sample": True, "_ng_task_index": 1, "_ng_rollout_index": 0},
    ]
    with app.client() as client:
        metrics = client.post("/aggregate_metrics", json={"verify_responses": rows}).json()
        empty = client.post("/aggregate_metrics", json={"verify_responses": []}).json()
    assert metrics["agent_metrics"]["mean/reward"] == 0.5
    assert metrics["agent_metrics"]["mean/total_tokens"] == 15
    assert metrics["key_metrics"]["coverage/masked_rollouts"] == 1
    assert metrics["key_metrics"]["coverage/fully_masked_tasks"] == 1
    assert [g["_ng_task_index"] for g in metrics["group_level_metrics"]] == [0]
    assert metrics["agent_metrics"]["num_repeats"] == 2
    assert empty == {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
        "perf_summary": None,
        "repeat_level_metrics": [],
    }


def test_health_reverify_and_unknown_tool_routes(app):
    with app.client() as client:
        for path in ("/", "/health", "/healthz", "/livez", "/readyz"):
            assert client.get(path).json() == {"status": "ok"}
        assert client.get("/reverify_mode").json() == "unknown"
        r = client.post("/no_such_tool", content=b"not json")
        assert r.status_code == 200 and "Tool 'no_such_tool' does not exist" in r.json()["results"]
        assert client.get("/no_such_tool").status_code == 405
