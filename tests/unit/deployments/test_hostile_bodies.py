"""Hostile bodies on every POST route, and CPU-heavy input, in one process (harness/inprocess.py).

- Every route answers NaN, 1e999, unpaired surrogates (in values and keys), 300-deep nesting, a body over
  `max_request_bytes`, wrong types in every field, an empty body and a non-object body with a 4xx that says
  what is wrong, or a 200 tool error; never a 5xx, and the server answers /health afterwards (contract §A.0).
  All of it at route prefix "/" and at "/finsec", mounted as Serve mounts it (tests/unit/deployments/test_route_prefix.py).
- An unpaired surrogate in what a verify grades is repaired and graded, whoever grades it (§A.3, §D.2).
- CPU-heavy input never stalls the event loop: while a heavy request is in flight, /health requests in the same
  loop keep completing, and a thread sampling the loop thread's stack never finds it doing work whose cost grows
  with the request body (parsing it, digesting it, grading or rendering it). The sampler is what makes this
  catch a stall: a request that stalls the loop still lets a /health through at each of its awaits.
  pytest-timeout is the hang guard; nothing here asserts a duration.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.hostile import filing_url
from harness.inprocess import InProcess
from harness.llm_stub import closed_port_url, responses_reply
from tests.unit.deployments.test_route_prefix import MOUNTS, ServedAt

JSON = {"content-type": "application/json"}
CAP = 1_000_000  # max_request_bytes of the hostile-body app
URL = filing_url("HLXR1")


def valid_bodies(sid: str) -> dict[str, dict[str, Any]]:
    """One well-formed body per POST route: the shapes the hostile variants below are made from."""
    return {
        "/seed_session": episode_seed(sid),
        "/close_session": close_body(sid),
        "/verify": verify_body(),
        "/aggregate_metrics": {"verify_responses": [{"reward": 1.0, "_ng_task_index": 0, "_ng_rollout_index": 0}]},
        "/sec_filing_search": {
            "ticker": "HLXR1",
            "form_types": ["10-K"],
            "start_date": "2023-01-01",
            "end_date": "2025-12-31",
        },
        "/edgar_search": {
            "search_query": "revenue",
            "form_types": ["10-K"],
            "ciks": ["990000001"],
            "start_date": "2020-01-01",
            "end_date": "2025-12-31",
            "page": 1,
            "top_n_results": 5,
        },
        "/parse_html_page": {"url": URL, "key": "doc"},
        "/retrieve_information": {
            "prompt": "revenue {{doc}}",
            "input_character_ranges": [{"key": "doc", "start": 0, "end": 100}],
        },
        "/submit_final_result": {"final_result": "42"},
        "/web_search": {
            "search_query": "revenue",
            "start_date": "2024-01-01",
            "end_date": "2024-12-31",
            "number_of_results": 5,
        },
    }


ROUTES = list(valid_bodies("x"))
WRONG_VALUES = [
    None,
    0,
    -1,
    10**300,
    1.5,
    -0.0,
    True,
    "",
    " ",
    "x",
    "null",
    "[]",
    "{}",
    "{{doc}}",
    "\u0000",
    "a" * 20_000,
    [],
    [None],
    [1, "a", {}],
    [[[]]],
    {},
    {"a": {"b": [1]}},
]
RAW_BODIES = {
    "NaN": b'{"x": NaN}',
    "NaN in a field": b'{"ticker": NaN, "url": NaN, "prompt": NaN, "final_result": NaN, "search_query": NaN}',
    "Infinity": b'{"x": -Infinity}',
    "1e999": b'{"reward": 1e999, "verify_responses": [{"reward": 1e999}]}',
    "a 5,000-digit integer": b'{"page": ' + b"9" * 5_000 + b"}",
    "an unpaired surrogate in a value": b'{"ticker": "\\ud800", "url": "\\udfff", "prompt": "\\ud83d {{doc}}"}',
    "an unpaired surrogate in a key": b'{"\\udc00": "x", "ticker": "HLXR1"}',
    "nesting 300 deep (objects)": b'{"a":' * 300 + b"1" + b"}" * 300,
    "nesting 300 deep (lists)": b'{"verify_responses": ' + b"[" * 300 + b"]" * 300 + b"}",
    "truncated": b'{"ticker": "HLXR1"',
    "not UTF-8": b'{"ticker": "\xff\xfe"}',
    "a BOM": b'\xef\xbb\xbf{"ticker": "HLXR1"}',
    "empty": b"",
    "whitespace": b"   ",
    "a JSON array": b"[]",
    "a JSON array of objects": b'[{"ticker": "HLXR1"}]',
    "a JSON string": b'"HLXR1"',
    "a number": b"42",
    "null": b"null",
    "true": b"true",
    "duplicate keys": b'{"ticker": "HLXR1", "ticker": {"x": 1}}',
    "a NUL byte": b'{"ticker": "HL\x00XR1"}',
}


@pytest.fixture(params=MOUNTS)
def app(request):
    # web_search configured against a port nobody listens on: its failure path runs too (no network)
    with ServedAt(
        request.param,
        edgar_search_mode=None,
        max_request_bytes=CAP,
        max_body_depth=64,
        tavily_api_key="tvly-test",
        tavily_base_url=closed_port_url(),
        retry_backoff_seconds=0.0,
    ) as running:
        yield running


def assert_answered(response, what: str) -> None:
    """Never a 5xx; a 4xx carries a message (`detail`); a 200 is a readable JSON object."""
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body, dict), (what, response.text[:300])
    if response.status_code >= 400:
        assert body.get("detail"), (what, response.text[:300])
    assert len(response.content) < 50_000 or what.startswith("/verify"), (what, len(response.content))


def seeded(app) -> str:
    sid = new_session_id()
    assert app.post("/seed_session", json=episode_seed(sid)).status_code == 200
    assert app.post("/parse_html_page", json={"url": URL, "key": "doc"}).json()["results"].startswith("SUCCESS")
    return sid


def still_works(app) -> None:
    assert app.get("/health").json() == {"status": "ok"}
    client, sid = app.new_client(), new_session_id()
    assert app.post("/seed_session", client=client, json=episode_seed(sid)).status_code == 200
    assert (
        app.post("/parse_html_page", client=client, json={"url": URL, "key": "doc"})
        .json()["results"]
        .startswith("SUCCESS")
    )
    assert (
        "Total net revenues"
        in app.post("/retrieve_information", client=client, json={"prompt": "total net revenues {{doc}}"}).json()[
            "results"
        ]
    )
    assert app.post("/verify", client=client, json=verify_body()).json()["reward"] == 1.0
    assert app.post("/close_session", client=client, json=close_body(sid)).status_code == 200


# ----- hostile bodies (§A.0) -----


@pytest.mark.timeout(60)
@pytest.mark.parametrize("route", ROUTES)
def test_malformed_json_on_every_route_is_a_4xx_that_says_why(app, route):
    """Mutation: letting FastAPI's 422 handler echo a NaN or a surrogate (its render then fails: a 500), or
    parsing a deep body recursively, fails this."""
    seeded(app)
    for label, raw in RAW_BODIES.items():
        response = app.post(route, content=raw, headers=JSON)
        assert_answered(response, f"{route} {label}")
    no_type = app.post(route, content=b'{"ticker": "HLXR1"}')  # no Content-Type at all
    assert_answered(no_type, f"{route} without a content type")
    still_works(app)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("route", ROUTES)
def test_wrong_types_in_every_field_are_a_4xx_or_a_tool_error(app, route):
    """Each field of a valid body replaced by each wrong value, each field dropped, and an unknown field added.
    Mutation: a tool that trusts a field's type past validation (a 500 on `input_character_ranges` holding
    strings, say) fails this."""
    sid = seeded(app)
    valid = valid_bodies(sid)[route]
    variants: list[tuple[str, Any]] = [("unknown field", {**valid, "zzz": [1]})]
    for field in valid:
        variants.append((f"without {field}", {k: v for k, v in valid.items() if k != field}))
        variants.extend((f"{field}={value!r:.40}", {**valid, field: value}) for value in WRONG_VALUES)
    for label, body in variants:
        assert_answered(app.post(route, json=body), f"{route} {label}")
    still_works(app)


def test_a_body_of_more_tiny_containers_than_a_parse_can_afford_is_a_422_that_says_so(roomy):
    """A 16 MB body of "[[[1]]]" opens eight million arrays: seconds of CPU, and one parse call holding the GIL.
    Mutation: dropping the count (strict_json.MAX_CONTAINERS) lets it through to json.loads."""
    from deployments.http.strict_json import MAX_CONTAINERS

    def body(containers: int) -> bytes:
        return (
            json.dumps({**verify_body(), "padding": "PAD"})
            .replace('"PAD"', "[" + ",".join(["[1]"] * (containers - 10)) + "]")
            .encode()
        )

    refused = roomy.post("/verify", content=body(MAX_CONTAINERS + 20), headers=JSON)
    assert refused.status_code == 422 and f"at most {MAX_CONTAINERS:,} are accepted" in refused.text
    assert roomy.post("/verify", content=body(MAX_CONTAINERS - 20), headers=JSON).status_code == 200
    brackets_in_text = json.dumps(verify_body("[1] " * (MAX_CONTAINERS + 20))).encode()  # strings hold no containers
    assert roomy.post("/verify", content=brackets_in_text, headers=JSON).status_code == 200


def test_a_content_length_of_thousands_of_digits_is_a_413_not_a_500(app):
    """Past Python's int conversion limit (4,300 digits) a declared length must be compared, not converted."""
    response = app.post("/seed_session", content=b"{}", headers={**JSON, "content-length": "9" * 5_000})
    assert response.status_code == 413 and "max_request_bytes" in response.json()["detail"]
    still_works(app)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("route", ROUTES)
def test_a_body_over_max_request_bytes_is_a_413_before_it_is_read(app, route):
    """With a Content-Length, and streamed without one (chunked): both are refused once over the cap."""
    oversize = b'{"x": "' + b"a" * CAP + b'"}'
    declared = app.post(route, content=oversize, headers=JSON)
    assert declared.status_code == 413 and "max_request_bytes" in declared.json()["detail"]

    async def chunks():
        for start in range(0, len(oversize), 65_536):
            yield oversize[start : start + 65_536]

    streamed = app.post(route, content=chunks(), headers=JSON)
    assert streamed.status_code == 413 and "max_request_bytes" in streamed.json()["detail"]
    still_works(app)


VERIFY_VARIANTS = {
    "input a string": {"responses_create_params": {"input": "What is it?"}},
    "input of junk": {"responses_create_params": {"input": [5, None, "x", {"role": 5, "content": {"a": 1}}]}},
    "output not a list": {"response": {"output": "x"}},
    "output of junk": {"response": {"output": [5, None, [], {"type": 5}, {"type": "function_call", "name": 5}]}},
    "arguments not a string": {
        "response": {
            "output": [{"type": "function_call", "name": "submit_final_result", "arguments": {"final_result": "42"}}]
        }
    },
    "arguments not JSON": {
        "response": {
            "output": [{"type": "function_call", "name": "submit_final_result", "arguments": "{final_result: 42"}]
        }
    },
    "arguments a list": {
        "response": {"output": [{"type": "function_call", "name": "submit_final_result", "arguments": "[42]"}]}
    },
    "final_result an object": {
        "response": {
            "output": [
                {"type": "function_call", "name": "submit_final_result", "arguments": '{"final_result": {"value": 42}}'}
            ]
        }
    },
    "final_result NaN": {
        "response": {
            "output": [{"type": "function_call", "name": "submit_final_result", "arguments": '{"final_result": NaN}'}]
        }
    },
    "final_result deep": {
        "response": {
            "output": [
                {
                    "type": "function_call",
                    "name": "submit_final_result",
                    "arguments": '{"final_result": ' + "[" * 2_000 + "]" * 2_000 + "}",
                }
            ]
        }
    },
    "usage of junk": {"response": {"output": [], "usage": {"input_tokens": "many", "total_tokens": [1]}}},
}


# The answer "42" is read only where the trajectory says it as an answer: the question's input may be junk, but
# a final_result that is not a string (NaN, a list) or arguments that are not a JSON object are no answer.
JUNK_REWARD = {
    label: 1.0 if label in ("input a string", "input of junk", "final_result an object") else 0.0
    for label in VERIFY_VARIANTS
}


@pytest.mark.timeout(60)
def test_a_verify_whose_trajectory_is_junk_is_graded_not_a_500(app):
    """§D.2's robustness recommendations: non-object arguments, non-string final_result and the like count as
    an empty answer (or a string), never an exception. Mutation: `arguments["final_result"]` unguarded."""
    for label, patch in VERIFY_VARIANTS.items():
        response = app.post("/verify", json={**verify_body(), **patch})
        assert response.status_code == 200, (label, response.text[:300])
        assert response.json()["reward"] == JUNK_REWARD[label], label
    still_works(app)


# ----- an unpaired surrogate in what a verify grades (§A.3: repaired, see deployments/http/strict_json.py) -----

BROKEN = {
    "in an assistant message": lambda body: body["response"]["output"].insert(
        0, {"type": "message", "content": [{"type": "output_text", "text": "Here \ud83d it is"}]}
    ),
    "in the question": lambda body: body["responses_create_params"]["input"].append(
        {"role": "user", "content": "What is it \udc00?"}
    ),
    "in the submitted answer": lambda body: body["response"]["output"].__setitem__(
        0, {**body["response"]["output"][0], "arguments": json.dumps({"final_result": "42 \ud83d"})}
    ),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", list(BROKEN))
def test_a_broken_emoji_in_a_trajectory_is_graded_by_the_deterministic_grader(app, where):
    body = verify_body()
    BROKEN[where](body)
    response = app.post("/verify", content=json.dumps(body).encode(), headers=JSON)
    assert response.status_code == 200 and response.json()["reward"] == 1.0, response.text[:300]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("mount", MOUNTS)
@pytest.mark.parametrize("where", list(BROKEN))
def test_a_broken_emoji_in_a_trajectory_is_graded_by_the_llm_judge(stub, where, mount):
    """The judge's request is UTF-8 JSON: a surrogate that reached it unrepaired made httpx raise while
    encoding, and the verify answered 500. Mutation: dropping the repair of the submitted answer, or keying
    it on the raw path (at /finsec)."""
    body = verify_body()
    BROKEN[where](body)
    stub.reply(responses_reply("The rating is: [[2]]"))
    with ServedAt(
        mount,
        edgar_search_mode=None,
        judge_model={"base_url": stub.base_url, "model": "judge"},
        judge_retry_delays=[0.0, 0.0],
    ) as app:
        response = app.post("/verify", content=json.dumps(body).encode(), headers=JSON)
        assert response.status_code == 200, response.text[:300]
        row = response.json()
        assert (row["reward"], row["mask_sample"], row["judge_rating"]) == (1.0, False, 2)
    sent = stub.bodies[0]["input"][0]["content"]
    assert "\ufffd" in sent or where == "in an assistant message"


# ----- CPU-heavy input never stalls the event loop -----


ROOT = Path(__file__).resolve().parents[3]
# Work whose cost grows with the request body, by file and function: on the event loop, a big body stalls it.
# (Retrieval over a stored document grows with the document, not the request, and is not listed.)
BODY_SIZED_WORK = {
    "deployments/http/strict_json.py": {"parse_strict", "_check_tree", "_checked_string", "_bounded_int", "_finite"},
    "session_store/core.py": {"canonical_digest"},
    "finsec/verify.py": {"Verifier._grade_now", "verdict_row", "masked_row", "judge_failed_row"},
    "deployments/routes/sessions.py": {"_render", "json_response.<locals>.<lambda>"},
    "finsec/retrieval/prompt.py": {"character_ranges", "character_ranges.<locals>.<genexpr>"},
}
BODY_SIZED_FOLDERS = ("finsec/grading/", "finsec/aggregate_metrics.py")
# Scoring a question: inline for a short prompt (cheaper than a thread hop), body-sized for a long one.
QUESTION_SIZED = ("finsec/retrieval/passages.py", "finsec/retrieval/concepts.py")


def _body_sized(code, also: tuple[str, ...] = ()) -> str | None:
    try:
        where = Path(code.co_filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if where.startswith(BODY_SIZED_FOLDERS + also) or code.co_qualname in BODY_SIZED_WORK.get(where, ()):
        return f"{where}:{code.co_qualname}"
    return None


class LoopWatch:
    """Samples the event loop thread's stack from another thread; counts samples showing body-sized work."""

    def __init__(self, loop_thread: int, also: tuple[str, ...] = (), inline: frozenset[str] = frozenset()):
        self.loop_thread = loop_thread
        self.also = also  # more files whose work counts as body-sized for this request
        self.inline = inline  # work that is small enough for this request to run inline, by design
        self.found: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> LoopWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.0005):
            frame = sys._current_frames().get(self.loop_thread)
            while frame is not None:
                if (found := _body_sized(frame.f_code, self.also)) and found not in self.inline:
                    self.found[found] += 1
                    break
                frame = frame.f_back


async def _health_during(app, heavy) -> tuple[Any, int]:
    """Run `heavy` (a coroutine) and, in the same loop, /health requests one after another until it is done.
    Returns heavy's response and how many /health requests completed while it was still in flight."""
    prober = app.new_client()
    task = asyncio.create_task(heavy)
    completed = 0
    try:
        while not task.done():
            health = await prober.get("/health")
            assert health.status_code == 200
            completed += not task.done()
            # An in-process /health never waits on I/O: pause, or the heavy task starves. A bare yield is not
            # enough: a prober that never sleeps keeps the GIL from the thread doing the heavy work.
            await asyncio.sleep(0.001)
    finally:
        await prober.aclose()
    return task.result(), completed


def health_while(app, send, attempts: int = 3, also: tuple[str, ...] = (), inline: frozenset[str] = frozenset()):
    """`send()` makes the heavy request's coroutine. A loop that the heavy work stalls answers no /health until
    the work is done, in every attempt; a free loop answers at least one (the retry keeps a very quick request
    from failing this only because it finished before the first probe did)."""
    for _ in range(attempts):
        with LoopWatch(threading.get_ident(), also, inline) as watch:  # app.run drives the loop in this thread
            response, completed = app.run(_health_during(app, send()))
        assert not watch.found, f"body-sized work ran on the event loop: {watch.found.most_common(5)}"
        if completed:
            return response
    raise AssertionError(f"no /health request completed while the heavy request was in flight ({attempts} tries)")


def _verify(answer: str) -> bytes:
    return json.dumps(verify_body(answer=answer)).encode()


def _long_trajectory(steps: int) -> bytes:
    body = verify_body(answer="42")
    step = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "step"}]}
    body["response"]["output"] = [step] * steps + body["response"]["output"]
    return json.dumps(body).encode()


# A list of ranges shorter than the tool's inline limit (finsec/tools/retrieve.py) is walked inline, by design: a
# thread hop costs more. The most a stringified list can hold (contract.py MAX_COERCED_CHARS) stays below it.
INLINE = {
    "a 16 KB stringified input_character_ranges": frozenset(
        {
            "finsec/retrieval/prompt.py:character_ranges",
            "finsec/retrieval/prompt.py:character_ranges.<locals>.<genexpr>",
        }
    )
}


def _ranges(count: int) -> str:
    return "[" + ",".join(["{'key': 'doc', 'start': 0, 'end': 10}"] * count) + "]"


HEAVY = {  # name -> (route, body bytes, the status it must get[, more files whose work is body-sized here])
    "a 300 KB answer to /verify": ("/verify", _verify("revenue was 979,207 thousand; " * 10_000), 200),
    "a 1 MB answer to /verify": ("/verify", _verify("1,234.5 and 979,207 " * 50_000), 200),
    "a 16 KB stringified input_character_ranges": (
        "/retrieve_information",
        json.dumps({"prompt": "revenue {{doc}}", "input_character_ranges": _ranges(430)}).encode(),
        200,
    ),
    "a 500 KB URL": (
        "/parse_html_page",
        json.dumps({"url": "https://www.sec.gov/Archives/edgar/data/1/" + "a" * 500_000, "key": "k"}).encode(),
        200,
    ),
    "a huge prompt": ("/retrieve_information", json.dumps({"prompt": "revenue {{doc}} " * 400_000}).encode(), 200),
    # under the cap, over a small document: reading the question is the work (the choice once looked at documents)
    "a 50,000-character repetitive prompt": (
        "/retrieve_information",
        json.dumps({"prompt": ("how many of the " * 3_200)[:49_990] + " {{doc}}"}).encode(),
        200,
        QUESTION_SIZED,
    ),
    "200,000 range objects": (
        "/retrieve_information",
        json.dumps(
            {
                "prompt": "revenue {{doc}}",
                "input_character_ranges": [{"key": "doc", "start": 0, "end": 10}] * 200_000,
            }
        ).encode(),
        200,
    ),
    "a 60,000-step trajectory to /verify (echoed into the row)": ("/verify", _long_trajectory(60_000), 200),
    "a 5 MB task_data in an episode seed": (
        "/seed_session",
        json.dumps(episode_seed(new_session_id(), notes=["a long filing excerpt " * 20] * 10_000)).encode(),
        200,
    ),
    "60,000 rows to /aggregate_metrics": (
        "/aggregate_metrics",
        json.dumps(
            {
                "verify_responses": [
                    {"reward": 1.0, "_ng_task_index": i % 500, "_ng_rollout_index": i // 500} for i in range(60_000)
                ]
            }
        ).encode(),
        200,
    ),
}


@pytest.fixture
def roomy():
    with InProcess(edgar_search_mode=None, max_request_bytes=10_000_000) as running:
        running.sid = seeded(running)
        yield running


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(HEAVY))
def test_heavy_input_never_stalls_the_event_loop(roomy, name):
    """Mutation: parsing, digesting, grading or rendering a big body on the event loop (asyncio.to_thread
    replaced by a direct call) fails this; so did walking 200,000 input_character_ranges there."""
    route, body, status, *more = HEAVY[name]
    also = more[0] if more else ()
    response = health_while(
        roomy,
        lambda: roomy.client.post(route, content=body, headers=JSON),
        also=also,
        inline=INLINE.get(name, frozenset()),
    )
    assert response.status_code == status, response.text[:300]


@pytest.mark.timeout(120)
def test_an_11_mb_stringified_range_list_is_refused_without_stalling(roomy):
    """Over the body cap (here 10 MB) it is a 413, streamed or declared; under it (the default 16 MB cap) it is
    too long to coerce (contract.py MAX_COERCED_CHARS): a 422, never a literal_eval of 11 MB on the loop."""
    body = json.dumps({"prompt": "{{doc}}", "input_character_ranges": _ranges(300_000)}).encode()
    assert len(body) > 11_000_000

    async def streamed():
        for start in range(0, len(body), 65_536):
            yield body[start : start + 65_536]

    assert (
        health_while(
            roomy, lambda: roomy.client.post("/retrieve_information", content=streamed(), headers=JSON)
        ).status_code
        == 413
    )
    assert roomy.post("/retrieve_information", content=body, headers=JSON).status_code == 413
    with InProcess(edgar_search_mode=None) as default_cap:
        default_cap.sid = seeded(default_cap)
        response = health_while(
            default_cap, lambda: default_cap.client.post("/retrieve_information", content=body, headers=JSON)
        )
        assert response.status_code == 422


# ----- a tool error says what to fix without echoing the argument back -----

HUGE = "9" * 1_000_000
ECHOES = {
    "/sec_filing_search start_date": ("/sec_filing_search", {"ticker": "HLXR1", "start_date": HUGE}, "start_date"),
    "/sec_filing_search form_types": (
        "/sec_filing_search",
        {"ticker": "HLXR1", "form_types": ["X" * 100] * 10_000},
        "No filings found",
    ),
    "/edgar_search end_date": ("/edgar_search", {"search_query": "revenue", "end_date": HUGE}, "end_date"),
    "/edgar_search ciks": ("/edgar_search", {"search_query": "revenue", "ciks": [HUGE]}, "ciks"),
    "/edgar_search a 5,000-digit CIK": ("/edgar_search", {"search_query": "revenue", "ciks": ["9" * 5_000]}, "ciks"),
    "/edgar_search 20-digit CIKs": ("/edgar_search", {"search_query": "revenue", "ciks": ["9" * 20] * 50_000}, "ciks"),
    "/web_search start_date": ("/web_search", {"search_query": "revenue", "start_date": HUGE}, "start_date"),
    "/parse_html_page url": (
        "/parse_html_page",
        {"url": "https://www.sec.gov/Archives/edgar/data/" + HUGE, "key": "k"},
        "url",
    ),
    "/parse_html_page key": ("/parse_html_page", {"url": URL, "key": HUGE}, "key"),
    "/retrieve_information prompt": ("/retrieve_information", {"prompt": HUGE}, "prompt"),
}


@pytest.mark.timeout(60)
def test_tool_errors_quote_at_most_a_short_excerpt_of_a_huge_argument(stub):
    """§A.0: a tool error says what to fix. Mutation: quoting the whole argument (a 1 MB date, 50,000 CIKs)
    in the message sends megabytes back into the agent's context."""
    with InProcess(tavily_api_key="tvly-test", tavily_base_url=closed_port_url(), retry_backoff_seconds=0.0) as app:
        seeded(app)
        for label, (route, body, says) in ECHOES.items():
            reply = app.post(route, json=body).json()["results"]
            assert says in reply and len(reply) < 3_000, (label, len(reply), reply[:200])


@pytest.mark.parametrize("route,field,item", [("sec_filing_search", "form_types", 1), ("edgar_search", "ciks", [1])])
def test_a_long_list_of_wrong_items_is_one_error_naming_the_first(app, route, field, item):
    """One error per wrong item, rebuilt on the event loop, stalled it for seconds: the first wrong item is named."""
    body = {"ticker": "AAPL", "search_query": "revenue", field: ["10-K", *([item] * 50_000)]}
    response = app.post(f"/{route}", json=body)
    assert response.status_code == 422
    (error,) = response.json()["detail"]  # one error, not 50,000
    assert "item 1 is a" in error["msg"] and error["loc"][-1] == field


def test_aggregate_metrics_skips_rows_that_are_not_objects(app):
    response = app.post("/aggregate_metrics", json={"verify_responses": [1, "x", None] * 10_000})
    assert response.status_code == 200 and response.json()["agent_metrics"] == {}


def test_a_big_verify_row_and_a_big_seed_are_built_off_the_event_loop(roomy, monkeypatch):
    """pydantic holds the GIL while it echoes a trajectory into the row or validates a seed, so no sampler sees it
    on the loop: this records the thread instead. 60,000 steps took ~150 ms to echo on this machine."""
    import finsec.verify as verify_module
    from finsec.contract import EpisodeSeedRequest

    threads: dict[str, list[int]] = {"row": [], "seed": []}
    build_row, validate_seed = verify_module.verdict_row, EpisodeSeedRequest.model_validate

    def row(*args):
        threads["row"].append(threading.get_ident())
        return build_row(*args)

    def seed(value, *args, **kwargs):
        threads["seed"].append(threading.get_ident())
        return validate_seed(value, *args, **kwargs)

    monkeypatch.setattr(verify_module, "verdict_row", row)
    monkeypatch.setattr(EpisodeSeedRequest, "model_validate", seed)
    assert roomy.post("/verify", content=_long_trajectory(60_000), headers=JSON).status_code == 200
    big_seed = json.dumps(episode_seed(new_session_id(), notes=["a long filing excerpt " * 20] * 10_000)).encode()
    assert roomy.post("/seed_session", content=big_seed, headers=JSON).status_code == 200
    loop = threading.get_ident()  # app.run drives the loop in this thread
    assert threads["row"] and loop not in threads["row"]
    assert threads["seed"] and loop not in threads["seed"]
