"""A held place by construction: the one place of an app is held by a parse_html_page waiting on a stalling
EDGAR (harness/stalling_edgar.py) while the scenario sends more (tests/unit/deployments/test_serve_in_process.py and
tests/integration/test_admission_http.py share it)."""

from __future__ import annotations

import asyncio

import httpx

from harness.bodies import episode_seed, new_session_id
from harness.stalling_edgar import FILING, StallingEdgar, settings_for


def admission_settings(edgar: StallingEdgar) -> dict:
    """An app that works on one request at a time and lets the others wait 5 s for the place, its filings from
    `edgar`."""
    return {
        **settings_for(edgar),
        "admission_running": 1,
        "admission_wait_seconds": 5,
        "admission_retry_after_seconds": 3,
    }


async def hold_the_place(client: httpx.AsyncClient, edgar: StallingEdgar) -> asyncio.Task[httpx.Response]:
    """Seed a session on `client` (which keeps its cookie) and start a parse that holds a place until `edgar` is
    released; returns once the parse waits on EDGAR."""
    seeded = await client.post("seed_session", json=episode_seed(new_session_id()))
    assert seeded.status_code == 200, seeded.text
    client.cookies = seeded.cookies
    held = asyncio.create_task(client.post("parse_html_page", json={"url": FILING, "key": "filing"}))
    while edgar.waiting < 1:
        await asyncio.sleep(0.02)
    return held


def assert_waits_then_refuses(app_url: str, edgar: StallingEdgar) -> httpx.Response:
    """The promises of admission by waiting time, on an app of `admission_settings`: with its one place held by a
    parse waiting on EDGAR, requests wait for it; past the 5 s bound they get 503 with Retry-After, unstarted;
    requests that wait less are all served once the place comes free, and the app serves on. Returns a health check
    asked while the place was held."""

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(base_url=app_url + "/", timeout=120) as client:
            held = await hold_the_place(client, edgar)  # the one place is taken: its request waits on EDGAR
            parse = {"url": FILING, "key": "filing"}
            search = {"ticker": "EXM"}
            probed = await client.get("healthz")
            # Past the bound: turned away, unstarted, with the config's Retry-After.
            late = await asyncio.gather(*(client.post("sec_filing_search", json=search) for _ in range(3)))
            assert [r.status_code for r in late] == [503] * 3, [r.text for r in late]
            assert all(
                r.headers.get("retry-after") == "3" and "admission_wait_seconds" in r.json()["detail"] for r in late
            )
            # Within it: they wait, however many, and are served once the place is free (on a server that
            # refused by count, all but one or two would be 503 now).
            waiting = [asyncio.create_task(client.post("parse_html_page", json=parse))]
            waiting += [asyncio.create_task(client.post("sec_filing_search", json=search)) for _ in range(6)]
            await asyncio.sleep(1)  # for them to reach the server: well within the bound
            edgar.released.set()
            admitted = await held
            assert admitted.status_code == 200 and "SUCCESS" in admitted.text, admitted.text
            answered = await asyncio.gather(*waiting)
            assert [r.status_code for r in answered] == [200] * 7, [r.text[:200] for r in answered]
            after = await client.post("sec_filing_search", json=search)
            assert after.status_code == 200, after.text
            return probed

    return asyncio.run(scenario())
