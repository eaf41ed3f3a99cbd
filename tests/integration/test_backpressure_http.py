"""Backpressure on Serve (issue 38): past `max_ongoing_requests` plus `max_queued_requests`, a request is answered
at once with 503 and Retry-After (Serve's own `backpressure_config`), never queued without bound; the requests it
admitted finish, and the app serves again when the load is gone. tests/stalling_edgar.py saturates a replica that
admits one request and queues one; tests/unit/test_serve_in_process.py holds the one-process mode to the same."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deployments.local import QUIET_LOGS, deploy_application, undeploy
from deployments.settings import Settings
from tests.stalling_edgar import StallingEdgar, assert_turned_away_and_recovered, settings_for, stalling_edgar


@pytest.fixture(scope="module")
def edgar() -> Iterator[StallingEdgar]:
    with stalling_edgar() as server:
        yield server


@pytest.fixture(scope="module")
def app_url(serve_url: str, edgar: StallingEdgar) -> Iterator[str]:
    settings = Settings(app_name="backpressure", **settings_for(edgar))
    url = deploy_application(settings, serve_url, name="backpressure", route_prefix="/backpressure", options={
        "num_replicas": 1, "max_ongoing_requests": 1, "max_queued_requests": 1,
        "backpressure_config": {"retry_after_s": 2}, "ray_actor_options": {"num_cpus": 0},
        "logging_config": QUIET_LOGS})
    yield url
    undeploy(settings, purge=True)


def test_a_saturated_app_answers_503_with_retry_after_and_recovers(app_url: str, edgar: StallingEdgar):
    assert_turned_away_and_recovered(app_url, edgar, retry_after="2")
