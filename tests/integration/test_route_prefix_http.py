"""The contract under a non-root route prefix, over real HTTP through Serve (the app at route_prefix /finsec).

Serve keeps the prefix in the ASGI path and names it in root_path (tests/unit/deployments/test_route_prefix.py has the
in-process cases and the evidence); strict JSON, the body cap, the `/ng-rollout/<id>/` prefix and the cookie
must behave as they do at "/". The whole session contract suite runs under /finsec too
(test_sessions_http.py); here, what is the prefix's own: seed, retried seed, close and fence 409 with and
without the cookie; NaN 422; oversize 413; the rollout prefix; the cookie set on every reply, scoped to the
mount and honoured.
"""

from __future__ import annotations

import pytest

from deployments.local import QUIET_LOGS, deploy_application, undeploy_application
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir, questions

from .conftest import App, close_body, cookie_claims, episode_seed, new_session_id, store_of, verify_body

PREFIX = "/finsec"
CAP = 1_000_000
JSON = {"content-type": "application/json"}
Q = questions()[0]


@pytest.fixture(scope="module")
def app(serve_url):
    settings = Settings(
        app_name="it-route-prefix",
        num_shards=2,
        corpus_dir=embedded_corpus_dir(),
        reaper_interval_seconds=1.0,
        max_request_bytes=CAP,
    )
    url = deploy_application(
        settings,
        serve_url,
        name=settings.app_name,
        route_prefix=PREFIX,
        options={"num_replicas": 1, "ray_actor_options": {"num_cpus": 0}, "logging_config": QUIET_LOGS},
    )
    assert url == serve_url.rstrip("/") + PREFIX
    try:
        yield App(url, settings, *store_of(settings))  # its clients' relative URLs go under /finsec
    finally:
        undeploy_application(settings, settings.app_name, purge=True)


def parse(client, key: str = "doc"):
    return client.post("/parse_html_page", json={"url": Q["url"], "key": key})


def test_seed_close_and_the_fence_under_the_prefix(app):
    sid = new_session_id()
    with app.client() as client:
        for _ in range(2):  # the seed, then its retry
            r = client.post("/seed_session", json=episode_seed(sid))
            assert r.status_code == 200 and r.json()["resources_session_id"] == sid
        assert cookie_claims(r, app.settings.cookie_name)["session_id"] == sid
        assert parse(client).status_code == 200
        assert app.describe(sid)["documents"] == ["doc"]
        for _ in range(2):  # the close, then its repeat
            assert client.post("/close_session", json=close_body(sid)).json() == {"resources_session_id": sid}
        late = client.post("/seed_session", json=episode_seed(sid))
        assert late.status_code == 409 and late.json()["detail"]
    with app.client() as fresh:  # a late seed without the cookie, as single_agent_turn sends it
        assert fresh.post("/seed_session", json=episode_seed(sid)).status_code == 409
    assert app.describe(sid)["fenced"] and not app.describe(sid)["open"]


def test_strict_json_and_the_body_cap_hold_under_the_prefix(app):
    """Under the prefix these used to reach FastAPI: NaN and 1e999 answered 500, an oversize body was read."""
    with app.client() as client:
        for route in ("/verify", "/seed_session", "/ng-rollout/r1/verify"):
            for raw in (b'{"reward": NaN}', b'{"x": 1e999}', b'{"a":' * 300 + b"1" + b"}" * 300):
                r = client.post(route, content=raw, headers=JSON)
                assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid", (route, r.text)
        oversize = b'{"x": "' + b"a" * CAP + b'"}'

        def chunks():
            for start in range(0, len(oversize), 65_536):
                yield oversize[start : start + 65_536]

        for body in (oversize, chunks()):  # declared, then streamed without a length
            r = client.post("/submit_final_result", content=body, headers=JSON)
            assert r.status_code == 413 and "max_request_bytes" in r.json()["detail"], r.text[:200]
    with app.client() as client:  # and the app still serves
        assert client.get("/healthz").json() == {"status": "ok"}


def test_the_rollout_prefix_under_the_route_prefix(app):
    sid = new_session_id()
    with app.client() as client:
        r = client.post("/ng-rollout/r1/seed_session", json=episode_seed(sid))
        assert r.status_code == 200 and r.json()["resources_session_id"] == sid
        assert client.post("/ng-rollout/r1/parse_html_page", json={"url": Q["url"], "key": "d"}).status_code == 200
        found = client.post("/ng-rollout/r1/retrieve_information", json={"prompt": f"{Q['question']} {{{{d}}}}"})
        assert found.status_code == 200 and Q["evidence"] in found.json()["results"]
        assert client.post("/ng-rollout/r1/verify", json=verify_body()).json()["reward"] == 1.0
        assert client.post("/ng-rollout/r1/close_session", json=close_body(sid)).status_code == 200
    assert app.describe(sid)["fenced"]


def test_the_cookie_is_set_for_the_mount_and_honoured(app):
    """`path=/finsec` also shows what Serve put in the scope: the app derives it from root_path, so a Serve
    that stripped the prefix from the path (or left root_path empty) would make it `path=/`."""
    sid = new_session_id()
    with app.client() as client, app.client() as stranger:
        replies = [
            client.post("/seed_session", json=episode_seed(sid)),
            client.post("/verify", content=b'{"x": NaN}', headers=JSON),  # 422
            client.get("/healthz"),
        ]
        for r in replies:
            assert cookie_claims(r, app.settings.cookie_name)["session_id"] == sid, r.status_code
            (header,) = [h for h in r.headers.get_list("set-cookie") if h.startswith(app.settings.cookie_name + "=")]
            assert f"path={PREFIX};" in header, header
        assert parse(client).status_code == 200  # the cookie comes back: the session's documents are there
        assert parse(stranger).status_code == 404  # no cookie, no session (§C.6)
        assert stranger.post("/retrieve_information", json={"prompt": "{{doc}}"}).json()["failure_kind"] == (
            "session_lost"
        )


@pytest.mark.parametrize("path", ["", "/verify/"])
def test_the_mount_itself_and_a_trailing_slash_answer_json_under_the_prefix(app, path):
    """§A.0 under /finsec: POST /finsec (the mount, no slash) and /finsec/verify/ were bodiless 307s (found by the
    schema fuzz); each is now a JSON 4xx with the cookie."""
    with app.client() as client:
        response = client.post(app.base_url + path, content=b"{}", headers=JSON)
    assert 400 <= response.status_code < 500 and response.headers["content-type"].startswith("application/json")
    assert cookie_claims(response, app.settings.cookie_name)["session_id"]
