"""Fixtures shared by the unit and integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from finsec.net.ports import free_port
from harness.llm_stub import LlmStub, running_stub
from harness.redis_server import RedisServer, running_redis


@pytest.fixture(scope="session")
def llm_server() -> Iterator[LlmStub]:
    """One loopback OpenAI-compatible stub server for the whole test session."""
    with running_stub() as stub:
        yield stub


@pytest.fixture
def stub(llm_server: LlmStub) -> LlmStub:
    """The stub with no scripted replies and no recorded requests."""
    llm_server.reset()
    return llm_server


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where the browser tests save what the page looked like (ignored by git): test-screenshots/ at the root."""
    folder = Path(__file__).resolve().parents[1] / "test-screenshots"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server on a free loopback port for the whole test session (never fakeredis)."""
    try:
        with running_redis() as server:
            yield server
    except RuntimeError as error:
        pytest.fail(str(error))


METRICS_PORT = free_port()  # the node's metrics-export port, scraped by tests/integration/test_metrics_scrape.py


@pytest.fixture(scope="session")
def serve_url() -> Iterator[str]:
    """One local Ray cluster and Serve proxy for the whole test session (the recipes' and the integration tests')."""
    from deployments.local import start_ray_and_serve, stop_ray_and_serve  # Ray only for the tests that use it

    # Metrics reach the export port every second (Ray's default: 10 s), so a scrape test need not wait long.
    base_url = start_ray_and_serve(
        _metrics_export_port=METRICS_PORT, _system_config={"metrics_report_interval_ms": 1000}
    )
    yield base_url
    stop_ray_and_serve()
