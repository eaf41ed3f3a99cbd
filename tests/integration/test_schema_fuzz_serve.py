"""The bounded schema fuzz of tests/unit/deployments/test_schema_fuzz_quick.py, against the running Serve app under a route
prefix (/finsec) behind HAProxy: every route from the OpenAPI schema, with a cache the app cannot use and every
upstream misbehaving. Every answer below 500, JSON, with the session cookie, within the fuzz's HANG seconds."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.unit.deployments.test_schema_fuzz_quick import (  # noqa: F401 (the fixture and the tests, run on this app)
    ADMIN,
    fixture_upstream,
    test_every_operation_answers_fuzzed_requests_below_500,
    test_sequences_on_shared_sessions_answer_below_500,
)

from .conftest import deployed_app

PREFIX = "/finsec"


class ServedApp:
    """What the fuzz asks of its app (`run`, `new_client`, `settings`), over real HTTP to the Serve app."""

    def __init__(self, url: str, settings: Any):
        self.url, self.settings = url, settings
        self._loop = asyncio.new_event_loop()

    def run(self, coroutine):
        return self._loop.run_until_complete(coroutine)

    def new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=60)

    def close(self) -> None:
        self._loop.close()


@pytest.fixture(scope="module")
def app(serve_url, upstream, tmp_path_factory):
    unusable = tmp_path_factory.mktemp("caches") / "a-file"
    unusable.write_text("not a folder")
    model = {"base_url": f"{upstream.url}/v1", "model": "m", "timeout_seconds": 2.0}
    for deployed in deployed_app(
        serve_url,
        "it-fuzz",
        replicas=1,
        route_prefix=PREFIX,
        edgar_source="live",
        corpus_dir=None,
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
    ):
        served = ServedApp(deployed.base_url, deployed.settings)
        try:
            yield served
        finally:
            served.close()
