"""Admission by waiting time on Serve: a replica hands every request to the app at once, which times its wait for a
place (deployments/http/admission.py). Requests wait for a held place and are served, past the bound they get 503
with Retry-After; open MCP streams and slow bodies hold no place; and a burst of 1,024 episodes from a client that
never retries completes against the shipped config's deployment. tests/unit/deployments/test_serve_in_process.py and
tests/unit/deployments/test_admission.py hold the one process to the same."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from deployments.cli.serve_config import load_serve_config
from deployments.local import QUIET_LOGS, deploy_application, undeploy
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from harness import places
from harness.bodies import ROOT
from harness.episodes import burst
from harness.extras import needs
from harness.held_place import admission_settings, assert_waits_then_refuses
from harness.stalling_edgar import StallingEdgar, stalling_edgar

ONE_REPLICA = {"num_replicas": 1, "ray_actor_options": {"num_cpus": 0}, "logging_config": QUIET_LOGS}


@pytest.fixture(scope="module")
def edgar() -> Iterator[StallingEdgar]:
    with stalling_edgar() as server:
        yield server


def deployed(serve_url: str, name: str, options: dict, **settings) -> Iterator[str]:
    app_settings = Settings(**{**settings, "app_name": name})
    yield deploy_application(app_settings, serve_url, name=name, route_prefix=f"/{name}", options=options)
    undeploy(app_settings, purge=True)


@pytest.fixture(scope="module")
def held_place_app(serve_url: str, edgar: StallingEdgar) -> Iterator[str]:
    yield from deployed(serve_url, "admission", ONE_REPLICA, **admission_settings(edgar))


def test_requests_wait_for_a_held_place_and_only_past_the_bound_are_turned_away(held_place_app, edgar):
    health = assert_waits_then_refuses(held_place_app, edgar)
    assert health.status_code == 200, health.text


@pytest.fixture(scope="module")
def few_places_app(serve_url: str) -> Iterator[str]:
    # One replica: an MCP session's event stream is offered only by the replica that holds the session.
    yield from deployed(
        serve_url, "places", ONE_REPLICA, num_shards=1, corpus_dir=embedded_corpus_dir(), **places.SETTINGS
    )


def test_open_mcp_streams_hold_no_place(few_places_app):
    needs("mcp", "mcp", "httpx2")
    places.assert_streams_hold_no_place(few_places_app)


def test_a_slow_body_holds_no_place_and_times_out_on_its_own(few_places_app):
    places.assert_slow_body_holds_no_place(few_places_app)


@pytest.fixture(scope="module")
def shipped_app(serve_url: str) -> Iterator[str]:
    """configs/serve.yaml's settings and FinsecIngress deployment (replicas, admission), on this test's cores."""
    target = load_serve_config(ROOT / "configs/serve.yaml")
    options = {**target.deployment_options, "ray_actor_options": {"num_cpus": 0}}
    settings = target.settings.model_dump(exclude_unset=True)
    yield from deployed(serve_url, "shipped", options, **settings)


def test_a_burst_of_episodes_from_a_client_that_never_retries_all_complete(shipped_app):
    played = asyncio.run(burst(shipped_app, 1024))
    assert played.completed == 1024, (dict(played.failures), played.samples)
