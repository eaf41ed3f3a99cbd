"""The app behaves the same at any route prefix, in one process (harness/inprocess.py).

Serve 2.60 mounts an application at a non-root `route_prefix` by keeping the prefix in `scope["path"]` and
setting `scope["root_path"]` to it (ray/serve/_private/proxy.py `set_root_path(root_path + route_prefix)`;
behind HAProxy, replica.py `_direct_ingress_asgi` does the same). `ServedAt` drives the app exactly so:
httpx's ASGITransport with that root_path, and a client whose URLs carry the prefix. Strict JSON, the body
cap, the `/ng-rollout/<id>/` prefix and the session cookie must behave as they do at "/" (contract §A.0).
The real Serve mount is tests/integration/test_route_prefix_http.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from deployments.http.prefixes import mount_path, route_path, with_route_path
from deployments.inprocess import in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir, questions
from harness.bodies import close_body, cookie_claims, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess

MOUNTS = ["/", "/finsec"]
JSON = {"content-type": "application/json"}
Q = questions()[-1]  # a question the other in-process suites do not ask
CAP = 1_000_000


class ServedAt(InProcess):
    """InProcess as Serve mounts it at `route_prefix`: every request's path starts with the prefix and its
    scope's root_path names it; `app.post("/verify")` goes to `<prefix>/verify`."""

    def __init__(self, route_prefix: str = "/", **settings: Any):
        self.root_path = "" if route_prefix == "/" else route_prefix  # Serve leaves root_path alone at "/"
        super().__init__(**settings)

    def new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(self.app.api, root_path=self.root_path),
            base_url="http://in-process" + self.root_path,
        )


# ----- the helper, against Starlette's router -----

SCOPES = [
    ("/verify", ""),
    ("/finsec/verify", "/finsec"),
    ("/finsec", "/finsec"),
    ("/finsec/", "/finsec"),
    ("/finsecx/verify", "/finsec"),
    ("/verify", "/finsec"),
    ("/api/finsec/ng-rollout/r1/verify", "/api/finsec"),
    ("/finsec/verify", "/finsec/"),
    ("/", ""),
]


@pytest.mark.parametrize("path, root_path", SCOPES)
def test_the_route_path_is_the_one_starlettes_router_matches(path, root_path):
    """Starlette's own rule (private, so imported only here): a middleware that disagrees with the router
    checks one route and lets FastAPI serve another."""
    get_route_path = pytest.importorskip("starlette._utils").get_route_path
    scope = {"type": "http", "path": path, "root_path": root_path}
    assert route_path(scope) == get_route_path(scope)
    mount = mount_path(scope)
    assert mount.startswith("/") and path.startswith(mount.rstrip("/"))


def test_a_rewritten_route_keeps_the_mount():
    scope = {
        "type": "http",
        "path": "/finsec/ng-rollout/r1/verify",
        "raw_path": b"/finsec/ng-rollout/r1/verify",
        "root_path": "/finsec",
    }
    rewritten = with_route_path(scope, "/verify")
    assert (rewritten["path"], rewritten["raw_path"], rewritten["root_path"]) == (
        "/finsec/verify",
        b"/finsec/verify",
        "/finsec",
    )
    assert route_path(rewritten) == "/verify" and scope["path"] == "/finsec/ng-rollout/r1/verify"
    assert with_route_path({"path": "/ng-rollout/r1/verify", "root_path": ""}, "/verify")["path"] == "/verify"


# ----- the app under each mount -----


@pytest.fixture(params=MOUNTS)
def app(request):
    with ServedAt(request.param, edgar_search_mode=None, max_request_bytes=CAP) as running:
        yield running


def test_strict_json_refuses_what_fastapi_would_echo_into_a_500(app):
    """Mutation: StrictJsonMiddleware matching the raw `scope["path"]`: under /finsec NaN and 1e999 reach
    FastAPI, whose 422 handler cannot render them (a 500), and deep nesting or a surrogate key gets through."""
    for raw in (b'{"reward": NaN}', b'{"x": 1e999}', b'{"a":' * 300 + b"1" + b"}" * 300, b'{"\\udc00": 1}'):
        for route in ("/verify", "/seed_session", "/ng-rollout/r1/verify"):
            response = app.post(route, content=raw, headers=JSON)
            assert response.status_code == 422, (route, raw[:20], response.status_code, response.text[:200])
            assert response.json()["detail"][0]["type"] == "json_invalid"
    # the catch-all tool route never reads its body (§A.12): checked routes are named routes only
    unknown = app.post("/no_such_tool", content=b'{"x": NaN}', headers=JSON)
    assert unknown.status_code == 200 and "no_such_tool" in unknown.json()["results"]


def test_an_oversize_body_is_refused_before_it_is_read(app):
    """Mutation: the body cap keyed on the raw path: under /finsec a 20 MB body was read whole, then parsed."""
    pulled = []

    async def twenty_mb():
        for _ in range(320):
            pulled.append(1)
            yield b" " * 65_536

    declared = app.post("/seed_session", content=b" " * (CAP + 1), headers=JSON)
    assert declared.status_code == 413 and "max_request_bytes" in declared.json()["detail"]
    streamed = app.post("/ng-rollout/r1/verify", content=twenty_mb(), headers=JSON)
    assert streamed.status_code == 413 and "max_request_bytes" in streamed.json()["detail"]
    assert len(pulled) < 40, f"{len(pulled)} chunks of 64 KB read before the 413"


def test_a_broken_emoji_in_a_trajectory_is_repaired_and_graded(app):
    """The repair is keyed on the route too. Mutation: matching `repairs` on the raw path refuses (or 500s)
    a trajectory that /verify at "/" grades."""
    body = verify_body()
    body["response"]["output"].insert(0, {"type": "message", "content": [{"type": "output_text", "text": "\ud83d"}]})
    for route in ("/verify", "/ng-rollout/r1/verify"):
        response = app.post(route, content=json.dumps(body).encode(), headers=JSON)
        assert response.status_code == 200 and response.json()["reward"] == 1.0, (route, response.text[:200])


def test_the_rollout_prefix_is_the_same_route_under_the_mount(app):
    """Mutation: matching `/ng-rollout/<id>/` on the raw path fails this (under /finsec a 404)."""
    sid = new_session_id()
    seeded = app.post("/ng-rollout/r1.x-2/seed_session", json=episode_seed(sid))
    assert seeded.status_code == 200 and seeded.json()["resources_session_id"] == sid
    parsed = app.post("/ng-rollout/r1/parse_html_page", json={"url": Q["url"], "key": "doc"})
    assert parsed.status_code == 200 and parsed.json()["results"].startswith("SUCCESS")
    assert app.describe(sid)["documents"] == ["doc"]
    row = app.post("/ng-rollout/r1/verify", json=verify_body()).json()
    assert row["reward"] == 1.0 and "question" not in row
    assert app.post("/ng-rollout/r1/close_session", json=close_body(sid)).status_code == 200
    assert app.describe(sid)["fenced"]
    assert app.post("/ng-rollout/bad id/verify", json=verify_body()).status_code == 404  # not a rollout id


def test_the_cookie_is_scoped_to_the_mount_and_honoured(app):
    """Every response sets the cookie for the app's own path (under "/" that is "/"), errors included, and
    the client's next request under the mount carries it. Mutation: a fixed `path=/` under /finsec (two apps
    on one host would overwrite each other's cookie), a path the client never sends back, or a rollout prefix
    rewritten out of the mount (the app then sees `/verify`, not `/finsec/verify`)."""
    sid = new_session_id()
    for response in (
        app.post("/seed_session", json=episode_seed(sid)),
        app.post("/verify", content=b'{"x": NaN}', headers=JSON),
        app.post("/ng-rollout/r1/submit_final_result", json={"final_result": "42"}),
        app.get("/health"),
    ):
        claims = cookie_claims(response, app.settings.cookie_name)
        assert claims["session_id"] == sid, response.status_code
        (header,) = [h for h in response.headers.get_list("set-cookie") if h.startswith(app.settings.cookie_name)]
        assert f"path={app.root_path or '/'};" in header, header
    # the seeded client's cookie is sent back under the mount (and its /ng-rollout/ prefix); a fresh one has none
    assert app.post("/parse_html_page", json={"url": Q["url"], "key": "doc"}).status_code == 200
    stored = app.post("/ng-rollout/r1/retrieve_information", json={"prompt": f"{Q['question']} {{{{doc}}}}"})
    assert stored.status_code == 200 and Q["evidence"] in stored.json()["results"]
    fresh = app.new_client()
    assert app.post("/retrieve_information", client=fresh, json={"prompt": "{{doc}}"}).status_code == 404
    app.run(fresh.aclose())


def test_the_router_and_the_middlewares_agree_on_a_path_outside_the_mount():
    """A scope whose path does not start with its root_path (no Serve proxy sends one) is routed as it is, by
    Starlette and by our middlewares alike: strict JSON still applies."""
    with InProcess(edgar_search_mode=None) as app:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app.app.api, root_path="/finsec"), base_url="http://in-process"
        )
        response = app.post("/verify", client=client, content=b'{"x": NaN}', headers=JSON)
        assert response.status_code == 422
        app.run(client.aclose())


def test_the_lifespan_runs_through_every_middleware():
    """Serve's replica (like uvicorn) starts the app by sending the lifespan protocol through the whole
    middleware stack, and a lifespan scope has no path (InProcess enters the lifespan directly, so it would not
    notice). Mutation: a middleware reading `scope["path"]` before checking the scope's type fails this."""
    app = in_process_app(
        Settings(app_name="lifespan", num_shards=1, corpus_dir=embedded_corpus_dir(), edgar_search_mode=None)
    ).api
    incoming, sent = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}], []

    async def receive():
        return incoming.pop(0)

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"], sent
