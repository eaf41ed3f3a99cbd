"""Property-based fuzzing of every route from the app's own OpenAPI schema: no input may cause a 500.

In-process (LocalSessionStore, embedded corpus), so it needs no Ray. Slow-ish and needs schemathesis
(`pip install -e ".[fuzz]"`): run with `make soak` or `pytest -m soak tests/fuzz`.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from deployments.api import create_api  # noqa: E402
from deployments.edgar.limiter import LocalRateLimiter  # noqa: E402
from deployments.services import build_services  # noqa: E402
from deployments.settings import Settings  # noqa: E402
from session_store.shard import ShardService  # noqa: E402
from session_store.store import LocalSessionStore  # noqa: E402

pytestmark = pytest.mark.soak

_settings = Settings(max_rollout_time_seconds=60)
_store = LocalSessionStore([ShardService(600)])
app = create_api(_settings, lambda: build_services(_settings, _store, LocalRateLimiter(10, 1.0)), "fuzz-secret")
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture(scope="module", autouse=True)
def started_app():
    with TestClient(app):  # runs the lifespan, which builds the services
        yield


@schema.parametrize()
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_causes_a_server_error(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, case.body, response.text[:500])
