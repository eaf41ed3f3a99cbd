"""Fixtures shared by the unit and integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.redis_server import RedisServer, running_redis
from tests.llm_stub import LlmStub, running_stub


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
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server on a free loopback port for the whole test session (never fakeredis)."""
    try:
        with running_redis() as server:
            yield server
    except RuntimeError as error:
        pytest.fail(str(error))
