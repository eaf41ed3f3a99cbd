"""The schema fuzz, bounded, in the default run (contract §A.0: no input gives a 5xx). The soak's schemathesis run
(tests/fuzz, `make soak`) goes further; this one takes seconds and needs only hypothesis.

Every operation of the app's own OpenAPI schema gets bodies generated from its schema: mostly valid, with
values of the wrong type at any depth, junk JSON and bytes, and domain values mixed in (a real ticker and
filing, stored keys, session IDs that seeds and closes share) so the requests reach the tools' work, not only
validation. Then random sequences of them on shared session IDs. The app runs in this process
(harness/inprocess.py) with a cache it cannot use (`use_cache` on a `cache_dir` that is a file, and a dump path
that is one too) and every upstream misbehaving: SEC, sec-api.io, Tavily, the judge and the retrieval model
are one loopback server answering JSON of the wrong shape, garbage, truncated bodies and error statuses.
Every answer must be below 500, JSON, carry the session cookie, and come within HANG seconds.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from deployments.inprocess import in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir, questions
from finsec_client.threaded_server import ThreadedServer
from harness.bodies import cookie_claims, episode_seed
from harness.inprocess import InProcess

EXAMPLES = int(os.environ.get("FINSEC_QUICK_FUZZ_EXAMPLES", "60"))  # per operation; sequences get twice that
HANG = 10.0  # seconds: every upstream answers at once and retries are ~instant, so anything slower is stuck
Q = questions()[0]
ADMIN = "fuzz-operator-token-of-32-characters"
JSON = {"content-type": "application/json"}

# ----- the upstream: every service the app calls, answering what it cannot use -----

WRONG_JSON = [
    b"[]",
    b'"maintenance"',
    b"503",
    b"null",
    b"true",
    b"{}",
    b'{"output": 5}',
    b'{"output": [5, null, {"type": "message", "content": "x"}, {"type": "message", "content": [5]}]}',
    b'{"output": [{"type": "message", "content": [{"type": "output_text", "text": 5}]}]}',
    b'{"output": [], "incomplete_details": 7}',
    b'{"choices": "x"}',
    b'{"choices": [{"message": {"content": 5, "tool_calls": "x"}}]}',
    b'{"filings": 5}',
    b'{"filings": {"recent": {"form": 5, "accessionNumber": [1, 2]}, "files": 5}}',
    b'{"filings": {"recent": {"accessionNumber": ["x"], "form": ["10-K", "10-Q"], "filingDate": [5]}}}',
    b'{"filings": {"recent": {}, "files": [{"name": 5}, "x"]}}',
    b'{"filings": [{"formType": 5}, 7]}',
    b'{"results": {"a": 1}}',
    b'{"results": [5, "x", null, {"url": 5}]}',
    b'{"error": {"message": 5}}',
    b'{"cik": [], "name": {"a": 1}}',
    b'{"output": [{"type": "mess',
    b"\xff\xfe\x00garbage",
]
PAGES = [
    b"<html><body>" + b"\x00\xff" * 64 + b"</body></html>",
    b"",
    b'{"not": "html"}',
    b"<html><p>Total",
    b"<ix:nonFraction>" * 500,
]
STATUSES = [200] * 6 + [500, 404, 429, 503]


class Misbehaving:
    """One loopback server for SEC (www and data), sec-api.io, Tavily and the model endpoints. The ticker registry
    is served right (without it the app refuses to start, §F.2), and a filing now and then (so some documents
    are stored and retrieve_information gets to the retrieval model); everything else is wrong."""

    def __init__(self) -> None:
        self.corpus = embedded_corpus_dir()
        self.tickers = (self.corpus / "files" / "company_tickers.json").read_bytes()
        self._turn = itertools.count()
        app = Starlette(routes=[Route("/{path:path}", self._serve, methods=["GET", "POST"])])
        self.server = ThreadedServer(app)
        self.url = self.server.url

    async def _serve(self, request: Request) -> Response:
        path, n = request.path_params["path"], next(self._turn)
        if path == "files/company_tickers.json":
            return Response(self.tickers, media_type="application/json")
        status = STATUSES[n % len(STATUSES)]
        if path.startswith("Archives/") and n % 4 == 0 and (self.corpus / path).is_file():
            return Response((self.corpus / path).read_bytes(), media_type="text/html")
        if path.startswith("Archives/") and n % 4:
            return Response(PAGES[n % len(PAGES)], status_code=status, media_type="text/html")
        return Response(WRONG_JSON[n % len(WRONG_JSON)], status_code=status, media_type="application/json")


@pytest.fixture(scope="module", name="upstream")
def fixture_upstream():  # named apart from the fixture, so a module that imports it can still ask for `upstream`
    misbehaving = Misbehaving()
    with misbehaving.server:
        yield misbehaving


@pytest.fixture(scope="module")
def app(upstream, tmp_path_factory):
    unusable = tmp_path_factory.mktemp("caches") / "a-file"
    unusable.write_text("not a folder")
    model = {"base_url": f"{upstream.url}/v1", "model": "m", "timeout_seconds": 2.0}
    with InProcess(
        edgar_source="live",
        sec_www_base_url=upstream.url,
        sec_data_base_url=upstream.url,
        fetch_trusted_networks=["127.0.0.1/32"],
        edgar_search_mode="live",
        sec_api_key="k",
        sec_api_base_url=upstream.url,
        tavily_api_key="t",
        tavily_base_url=upstream.url,
        judge_model=model,
        retrieval_model=model,
        judge_call_timeout=2.0,
        judge_retry_delays=[0, 0],
        use_cache=True,
        cache_dir=unusable,
        sec_dump_path=unusable,
        request_timeout=2.0,
        max_retries=2,
        retry_backoff_seconds=0.001,
        requests_per_second=10_000,
        max_rollout_time_seconds=600,
        admin_token=ADMIN,
    ) as running:
        yield running


# ----- requests from the schema -----

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SIDS = ["@sid0", "@sid1", "@sid2"]  # replaced by this example's own IDs when sent, so examples do not collide
ANSWERS = [Q["expected_answer"]] * 3 + ["wrong", "", "[[2]]", "x" * 5000]
HINTS: dict[str, st.SearchStrategy] = {  # domain values, so requests get past validation into the tools' work
    "resources_session_id": st.sampled_from(SIDS),
    "session_id": st.sampled_from(SIDS),
    "rollout_id": st.sampled_from(["r1", "r2", "r1.x-2", "r1-a2"]),
    "url": st.sampled_from(
        [Q["url"]] * 4
        + [
            Q["url"].rsplit("/", 1)[0] + "/",
            "https://www.sec.gov/x",
            "http://127.0.0.1:1/",
            "file:///etc/passwd",
            "not a url",
        ]
    ),
    "key": st.sampled_from(["doc", "k", "", "{{doc}}", "../x"]),
    "prompt": st.sampled_from(["revenue {{doc}}"] * 4 + ["{{doc}} {{k}}", "{{missing}}", "no placeholder", "{{" * 40]),
    "ticker": st.sampled_from([Q["ticker"], Q["ticker"].lower(), "", "ZZZZ9"]),
    "form_types": st.sampled_from([["10-K"], '["10-K"]', "['10-K', '8-K']", "10-K"]),
    "input_character_ranges": st.lists(
        st.fixed_dictionaries(
            {
                "key": st.sampled_from(["doc", "k"]),
                "start": st.integers(-(10**6), 10**6),
                "end": st.integers(-(10**6), 10**6),
            }
        ),
        max_size=3,
    )
    | st.just("[{'key': 'doc', 'start': 0, 'end': 9}]"),
    "start_date": st.sampled_from(["2024-01-01", "2024-13-45", "", "yesterday"]),
    "end_date": st.sampled_from(["2023-12-31", "2099-01-01", "", "24-01-01"]),
    "search_query": st.sampled_from(["revenue", "", " ", "*"]),
    "response": st.fixed_dictionaries(
        {
            "output": st.lists(
                st.fixed_dictionaries(
                    {
                        "type": st.just("function_call"),
                        "name": st.sampled_from(["submit_final_result"] * 3 + ["other"]),
                        "arguments": st.sampled_from(ANSWERS).map(lambda a: json.dumps({"final_result": a})) | ANY_JSON,
                    }
                ),
                max_size=2,
            )
        }
    ),
    "expected_answer": st.sampled_from([Q["expected_answer"], ""]),
    "verify_responses": st.lists(
        st.fixed_dictionaries(
            {"reward": st.floats(allow_nan=False, allow_infinity=False), "mask_sample": st.booleans()},
            optional={"_ng_task_index": ANY_JSON},
        ),
        max_size=4,
    ),
}
EPISODE_SEED = {  # §A.1: /seed_session's body is any object in the schema; this is the shape that matters
    "type": "object",
    "additionalProperties": False,
    "required": ["resources_session_id", "episode_id", "task_id", "task_data"],
    "properties": {
        "resources_session_id": {"type": "string"},
        "episode_id": {"$ref": "#/components/schemas/EpisodeId"},
        "task_id": {
            "type": "object",
            "required": ["taskset", "task_id"],
            "properties": {"taskset": {"type": "string"}, "task_id": {"type": "string"}},
        },
        "task_data": {"type": "object"},
    },
}


class FromSchema:
    """Values of a JSON schema; with `wrong_odds`, one node in that many is a JSON value of any type instead."""

    def __init__(self, openapi: dict, wrong_odds: int | None = None):
        self.components = openapi["components"]["schemas"]
        self.wrong_odds = wrong_odds

    def mostly(self, valid: st.SearchStrategy) -> st.SearchStrategy:
        if self.wrong_odds is None:
            return valid
        return st.integers(1, self.wrong_odds).flatmap(lambda n: ANY_JSON if n == 1 else valid)

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            schema = self.components[schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def value(self, schema: dict, name: str | None = None) -> st.SearchStrategy:
        valid = self._valid(self.resolve(schema))
        if name in HINTS:  # mostly the domain value: that is what gets a request past the tool's checks
            valid = st.one_of(HINTS[name], HINTS[name], HINTS[name], valid)
        return self.mostly(valid)

    def _valid(self, schema: dict) -> st.SearchStrategy:
        for union in ("anyOf", "oneOf"):
            if union in schema:
                return st.one_of([self.value(s) for s in schema[union]])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        kind = schema.get("type")
        if kind == "string":
            low, high = schema.get("minLength", 0), min(schema.get("maxLength", 30), 30)
            if "pattern" in schema:
                return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: low <= len(s) <= 300)
            return st.text(min_size=low, max_size=max(low, high))
        if kind == "integer":
            low, high = schema.get("minimum"), schema.get("maximum")
            return st.integers(None if low is None else int(low), None if high is None else int(high))
        if kind == "number":
            return st.floats(allow_nan=False, allow_infinity=False)
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        if kind == "array":
            return st.lists(self.value(schema.get("items", {})), max_size=3)
        if kind == "object" and "properties" in schema:
            properties, required = schema["properties"], set(schema.get("required", ()))
            body = st.fixed_dictionaries(
                {k: self.value(v, k) for k, v in properties.items() if k in required},
                optional={k: self.value(v, k) for k, v in properties.items() if k not in required},
            )
            if schema.get("additionalProperties") is False:  # now and then a stray key (a 422)
                body = st.tuples(body, st.booleans()).map(lambda b: {**b[0], "stray": 1} if b[1] else b[0])
            return body
        return ANY_JSON

    def body(self, template: str, operation: dict) -> st.SearchStrategy:
        if template == "/seed_session":
            return st.one_of(self.value(EPISODE_SEED), st.just({}), st.just({"question": "legacy run body"}))
        schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        return self.value(schema) if schema else ANY_JSON


def operations(openapi: dict) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, ops in openapi["paths"].items() for method in ops]


OPENAPI = in_process_app(
    Settings(app_name="schema", num_shards=1, edgar_search_mode=None, admin_token=ADMIN)
).api.openapi()
VALID, WRONG = FromSchema(OPENAPI), FromSchema(OPENAPI, wrong_odds=4)
OPERATIONS = operations(OPENAPI)


@st.composite
def request(draw, method: str, template: str) -> dict[str, Any]:
    operation, path = OPENAPI["paths"][template][method.lower()], template
    if "{tool_name}" in path:
        path = path.replace(
            "{tool_name}",
            draw(
                st.sampled_from(["no_such_tool", "seed_session", "verify", "x" * 300])
                | st.text("abcdefghijklmnopqrstuvwxyz_-.~%0123456789", min_size=1, max_size=20)
            ),
        )
    if draw(st.integers(0, 5)) == 0:  # the rollout prefix strips to the same route (§A.0); a bad ID does not
        path = draw(st.sampled_from(["/ng-rollout/r1", "/ng-rollout/r1.x-2", "/ng-rollout/-bad"])) + path
    if method == "GET":
        return {"method": method, "path": path, "content": None}
    kind = draw(st.integers(0, 9))
    if kind == 0:
        content = draw(st.binary(max_size=40))
    elif kind == 1:
        content = None
    else:  # a valid body (the work of the route), or one with wrong types somewhere (its validation)
        content = json.dumps(
            draw(st.sampled_from([VALID, WRONG]).flatmap(lambda s: s.body(template, operation)))
        ).encode()
    headers = dict(JSON)
    if path.endswith("retire_session_state") and draw(st.booleans()):
        headers["authorization"] = f"Bearer {ADMIN}"
    return {"method": method, "path": path, "content": content, "headers": headers}


def send(app: InProcess, client, sent: dict[str, Any], sids: dict[str, str]):
    content = sent["content"]
    for placeholder, sid in sids.items():
        content = content.replace(placeholder.encode(), sid.encode()) if content else content

    async def go():
        return await asyncio.wait_for(
            client.request(sent["method"], sent["path"], content=content, headers=sent.get("headers", JSON)), HANG
        )

    try:
        response = app.run(go())
    except TimeoutError:
        raise AssertionError(f"no answer within {HANG} s: {sent}") from None
    what = (sent["method"], sent["path"], (content or b"")[:300], response.status_code, response.text[:300])
    assert response.status_code < 500, what
    assert response.headers["content-type"].startswith("application/json"), what
    response.json()
    assert cookie_claims(response, app.settings.cookie_name)["session_id"], what
    return response


def fresh_ids() -> dict[str, str]:
    example = uuid.uuid4().hex[:12]
    return {placeholder: f"resources-session-{example}-{n}" for n, placeholder in enumerate(SIDS)}


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method, path", OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_fuzzed_requests_below_500(app, method, path):
    @FUZZ
    @given(sent=request(method, path), seeded=st.sampled_from(["episode", "agent_run", None]))
    def one(sent, seeded):
        client, sids = app.new_client(), fresh_ids()
        try:  # an open session first (or none), holding a document if SEC served it, so the stateful routes
            if seeded:  # get to their work
                send(
                    app,
                    client,
                    {
                        "method": "POST",
                        "path": "/seed_session",
                        "content": json.dumps(episode_seed(sids["@sid0"]) if seeded == "episode" else {}).encode(),
                    },
                    sids,
                )
                send(
                    app,
                    client,
                    {
                        "method": "POST",
                        "path": "/parse_html_page",
                        "content": json.dumps({"url": Q["url"], "key": "doc"}).encode(),
                    },
                    sids,
                )
            send(app, client, sent, sids)
        finally:
            app.run(client.aclose())

    one()


@pytest.mark.timeout(120)
def test_sequences_on_shared_sessions_answer_below_500(app):
    """Seeds, closes, tools and verifies of the same few IDs, one cookie-keeping client: the lifecycle's states
    (open, closed, conflicting, released) meet every route's fuzzed bodies."""
    any_request = st.sampled_from(OPERATIONS).flatmap(lambda op: request(*op))

    @settings(FUZZ, max_examples=2 * EXAMPLES)
    @given(sequence=st.lists(any_request, min_size=2, max_size=8))
    def one(sequence):
        client, sids = app.new_client(), fresh_ids()
        try:
            for sent in sequence:
                send(app, client, sent, sids)
        finally:
            app.run(client.aclose())

    one()
