"""Property-based fuzzing of every route from the app's own OpenAPI schema (contract §A.0): no input may cause a
5xx, and no input may leave state behind that nothing can release.

The whole app runs in this process (`deployments/inprocess.py:in_process_app`: LocalSessionStore, embedded
corpus), so it needs no Ray. Slow-ish and needs schemathesis (`pip install -e ".[fuzz]"`): run with `make soak`
or `pytest -m soak tests/fuzz`. A recorder in front of the app notes every session a seed opened and every
close that released one; afterwards the store may hold only sessions the fuzz seeded and did not close, and
retiring those (contract §C.8) must leave it empty.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest

from harness.extras import needs

schemathesis = needs("fuzz", "schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from deployments.inprocess import in_process_app  # noqa: E402
from deployments.settings import Settings  # noqa: E402

pytestmark = pytest.mark.soak

EXAMPLES = int(os.environ.get("FINSEC_FUZZ_EXAMPLES", "200"))
_settings = Settings(app_name="fuzz", num_shards=2, max_rollout_time_seconds=60, edgar_search_mode=None)
running = in_process_app(_settings, cookie_secret="fuzz-cookie-secret-of-32-characters")


class Recorder:
    """ASGI middleware: the session IDs that 200 seeds bound, the IDs that 200 closes released, every status."""

    def __init__(self, app):
        self.app = app
        self.seeded: set[str] = set()
        self.closed: set[str] = set()
        self.statuses: dict[int, int] = {}
        self.cases = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body, start = [], {}

        async def receive_recorded():
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

        async def send_recorded(message):
            if message["type"] == "http.response.start":
                start.update(message)
            await send(message)

        await self.app(scope, receive_recorded, send_recorded)
        status = start.get("status", 0)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.cases += scope["path"] != "/openapi.json"
        if status != 200:
            return
        if scope["path"].endswith("/seed_session"):
            sid = _cookie_session_id(start.get("headers", []))
            if sid:
                self.seeded.add(sid)
        elif scope["path"].endswith("/close_session"):
            self.closed.add(json.loads(b"".join(body))["resources_session_id"])


def _cookie_session_id(headers) -> str | None:
    for name, value in headers:
        if name.lower() == b"set-cookie" and value.startswith(_settings.cookie_name.encode() + b"="):
            payload = value.split(b"=", 1)[1].split(b";")[0].split(b".")[0]
            return json.loads(base64.b64decode(payload + b"=" * (-len(payload) % 4))).get("session_id")
    return None


app = Recorder(running.api)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture(scope="module", autouse=True)
def started_app():
    with TestClient(app):  # runs the lifespan, which builds the services
        yield
    held = {sid for shard in running.store.shards for sid in shard._core._sessions}
    leaked = held - (app.seeded - app.closed)
    summary = {
        "cases": app.cases,
        "statuses": dict(sorted(app.statuses.items())),
        "seeded": len(app.seeded),
        "closed": len(app.closed),
        "held_after": len(held),
        "leaked": sorted(leaked)[:10],
    }
    print("\nFUZZ SUMMARY", json.dumps(summary))
    assert not leaked, f"sessions no seed of the fuzz opened, or that its close released: {summary}"

    async def retire_all():
        for sid in held:
            await running.store.retire(sid)
        return await running.store.stats()

    stats = asyncio.run(retire_all())
    assert (stats["sessions"], stats["documents"], stats["digests"]) == (0, 0, 0), stats


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_causes_a_server_error(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, case.body, response.text[:500])
