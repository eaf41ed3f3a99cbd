"""Admission by waiting time (deployments/http/admission.py): the places' own rules, then the middleware in the
one-process app under uvicorn on loopback, over real HTTP. tests/unit/deployments/test_serve_in_process.py runs the held-place
scenario and a burst of non-retrying episodes through `finsec serve --in-process`;
tests/integration/test_admission_http.py runs them on Serve."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import yaml

from deployments.http.admission import REQUEST_OVERHEAD_BYTES, Admission, Places
from deployments.http.bodies import declared_over
from deployments.inprocess import InProcessApp, in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec_client.threaded_server import ThreadedServer
from harness import places
from harness.bodies import ROOT
from harness.extras import needs
from harness.held_place import hold_the_place
from harness.stalling_edgar import settings_for, stalling_edgar


def run(coroutine):
    return asyncio.run(coroutine)


async def one_place_held() -> tuple[Places, asyncio.AbstractEventLoop]:
    places = Places(1)
    loop = asyncio.get_running_loop()
    assert await places.take(loop.time() + 10)
    return places, loop


def test_places_are_taken_first_come_first_served():
    async def scenario() -> list[int]:
        places_, loop = await one_place_held()
        order: list[int] = []

        async def wait(n: int) -> None:
            assert await places_.take(loop.time() + 10)
            order.append(n)
            places_.give_back()

        waiters = [asyncio.create_task(wait(n)) for n in range(5)]
        await asyncio.sleep(0)
        assert (places_.running, places_.waiting) == (1, 5)
        places_.give_back()
        await asyncio.gather(*waiters)
        assert (places_.running, places_.waiting) == (0, 0)
        return order

    assert run(scenario()) == [0, 1, 2, 3, 4]


def test_a_waiter_past_its_deadline_gives_up_its_turn_and_the_next_one_gets_the_place():
    async def scenario() -> None:
        places_, loop = await one_place_held()
        late = asyncio.create_task(places_.take(loop.time() + 0.05))
        patient = asyncio.create_task(places_.take(loop.time() + 10))
        assert await late is False
        assert places_.waiting == 1
        places_.give_back()
        assert await patient is True
        assert (places_.running, places_.waiting) == (1, 0)

    run(scenario())


def test_a_cancelled_waiter_that_was_just_given_the_place_passes_it_on():
    async def scenario() -> None:
        places_, loop = await one_place_held()
        cancelled = asyncio.create_task(places_.take(loop.time() + 10))
        nxt = asyncio.create_task(places_.take(loop.time() + 10))
        await asyncio.sleep(0)
        places_.give_back()  # handed to `cancelled`, which is cancelled before it runs
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert await nxt is True
        assert (places_.running, places_.waiting) == (1, 0)
        places_.give_back()
        assert places_.running == 0

    run(scenario())


def test_a_waiter_that_expired_and_was_cancelled_before_it_ran_is_forgotten_once():
    """The deadline's timer and a cancellation can both reach one waiter before it runs: the queue's count of
    live waiters stays right, so no newcomer takes a place ahead of them."""

    async def scenario() -> None:
        places_, loop = await one_place_held()
        doomed = asyncio.create_task(places_.take(loop.time() + 10))
        live = [asyncio.create_task(places_.take(loop.time() + 10)) for _ in range(3)]
        await asyncio.sleep(0)
        places_._expire(places_._waiters[0])  # its deadline passes...
        doomed.cancel()  # ...and its request is cancelled, before it runs again
        with pytest.raises(asyncio.CancelledError):
            await doomed
        assert places_.waiting == 3 and not places_.free()
        for _ in live:
            places_.give_back()
        assert all(await asyncio.gather(*live))

    run(scenario())


def test_waiters_that_left_are_forgotten_so_the_queue_does_not_grow_with_them():
    async def scenario() -> None:
        places_, loop = await one_place_held()
        for _ in range(10):  # each expires while the place stays held
            assert await places_.take(loop.time() + 0.001) is False
        assert places_.waiting == 0 and len(places_._waiters) <= 1

    run(scenario())


@pytest.mark.parametrize(
    "declared, over",
    [
        (b"1000001", True),
        (b"1000000", False),
        (b"0001000000", False),
        (b"9" * 5000, True),
        (b"12ab", False),
        (b"", False),
    ],
)
def test_a_declared_length_is_compared_without_converting_it(declared, over):
    """A Content-Length of thousands of digits is past Python's int conversion limit: compared as digits, it is
    simply too large, never an exception (a 500)."""
    scope = {"headers": [(b"content-length", declared)]}
    assert declared_over(scope, 1_000_000) is over


def test_serve_is_told_to_hand_a_replica_all_that_its_admission_may_hold():
    admission = Admission(
        running=32,
        wait_seconds=60,
        waiting_bytes=REQUEST_OVERHEAD_BYTES * 1000,
        retry_after_seconds=5,
        max_body_bytes=1_000_000,
    )
    assert admission.most_held() == 32 + 1000


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("configs/serve.yaml", ("applications", 0, "args")),
        ("configs/serve-cluster.yaml", ("applications", 0, "args")),
        ("cluster/base/rayservice.yaml", ("spec", "serveConfigV2", "applications", 0, "args")),
    ],
)
def test_the_shipped_configs_and_the_contract_state_the_settings_admission(path, keys):
    """A default moved in one place and not the others would ship a replica with other places than documented."""
    default = Settings.model_fields["admission_running"].default
    document = yaml.safe_load((ROOT / path).read_text())
    for key in keys:
        document = yaml.safe_load(document) if isinstance(document, str) else document
        document = document[key]
    assert document["admission_running"] == default
    contract = (ROOT / "docs/contract.md").read_text()
    assert f"the `admission_running` ({default}) places" in contract
    assert f"| {default}, 60, 256 MB, 5 |" in contract


@contextmanager
def serving(**settings: Any) -> Iterator[tuple[InProcessApp, str]]:
    defaults = {"app_name": "admission", "num_shards": 1, "corpus_dir": embedded_corpus_dir()}
    app = in_process_app(Settings(**{**defaults, **settings}))
    with ThreadedServer(app.api, lifespan="on") as running:
        yield app, running.url


def test_past_the_memory_bound_a_request_is_turned_away_at_once():
    """Waiting requests hold their bodies: one that would take the waiting ones past admission_waiting_bytes gets
    503 with Retry-After at once, while those within it wait and are served."""
    with (
        stalling_edgar() as edgar,
        serving(**settings_for(edgar), admission_running=1, admission_waiting_bytes=1_000_000) as (app, url),
    ):

        async def scenario() -> tuple[httpx.Response, list[httpx.Response]]:
            async with httpx.AsyncClient(base_url=url + "/", timeout=60) as client:
                held = await hold_the_place(client, edgar)
                big = {"ticker": "EXM", "padding": "x" * 600_000}  # waits, holding its 600 KB
                waiting = asyncio.create_task(client.post("/sec_filing_search", json=big))
                while app.api.state.admission.places.waiting < 1:
                    await asyncio.sleep(0.02)
                refused = await client.post("/sec_filing_search", json=big)
                edgar.released.set()
                return refused, [await held, await waiting]

        refused, served = run(scenario())
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5", refused.text
    assert "admission_waiting_bytes" in refused.json()["detail"]
    assert [r.status_code for r in served] == [200, 200], [r.text[:200] for r in served]
    assert app.api.state.admission.report()["refused"]["memory"] == 1
    assert app.api.state.services.metrics.count("finsec_unavailable", cause="admission_memory") == 1


def test_an_mcp_tool_call_is_served_in_its_own_place():
    """The MCP endpoint's calls to the app's routes are inside the /mcp request's place: with one place, a tool call
    still runs (taking a second place would wait for itself until the bound)."""
    needs("mcp", "mcp", "httpx2")
    from mcp import Client

    with serving(admission_running=1, admission_wait_seconds=2) as (_, url):

        async def call() -> Any:
            async with Client(url + "/mcp") as client:
                return await client.call_tool("sec_filing_search", {"ticker": "AAPL"})

        result = run(call())
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text)


def test_open_mcp_streams_hold_no_place():
    needs("mcp", "mcp", "httpx2")
    with serving(**places.SETTINGS) as (app, url):
        places.assert_streams_hold_no_place(url)
        assert app.api.state.admission.report()["refused"] == {"waited": 0, "memory": 0, "slow_body": 0}


def test_a_slow_body_holds_no_place_and_times_out_on_its_own():
    with serving(**places.SETTINGS) as (app, url):
        places.assert_slow_body_holds_no_place(url)
        assert app.api.state.admission.report()["refused"]["slow_body"] == places.RUNNING


def test_health_checks_are_never_made_to_wait():
    with (
        stalling_edgar() as edgar,
        serving(**settings_for(edgar), admission_running=1, admission_wait_seconds=1) as (app, url),
    ):

        async def scenario() -> httpx.Response:
            async with httpx.AsyncClient(base_url=url + "/", timeout=60) as client:
                held = await hold_the_place(client, edgar)
                waiting = asyncio.create_task(client.get("/status"))  # not a health check: it waits
                while app.api.state.admission.places.waiting < 1:
                    await asyncio.sleep(0.02)
                health = await client.get("/healthz")
                status = await waiting  # waited past the bound
                edgar.released.set()
                await held
                assert status.status_code == 503, status.text
                return health

        assert run(scenario()).status_code == 200
        metrics = app.api.state.services.metrics
        assert metrics.count("finsec_unavailable", cause="admission_waited") == 1
        assert metrics.count("finsec_admission_wait_seconds", outcome="refused") == 1
