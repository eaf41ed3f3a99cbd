"""One local Ray cluster and Serve proxy per test session; each module deploys the app it needs."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import httpx
import pytest

from deployments.corpus.generate import embedded_corpus_dir
from deployments.ingress import actors_spec
from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve, undeploy
from deployments.settings import Settings
from session_store.ray_store import RaySessionStore


@pytest.fixture(scope="session")
def serve_url() -> Iterator[str]:
    base_url = start_ray_and_serve()
    yield base_url
    stop_ray_and_serve()


@dataclass
class App:
    """A deployed app, plus a view of its session store for assertions about state, not only status codes."""

    base_url: str
    settings: Settings
    store: RaySessionStore

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=60, **kwargs)

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=64)
        return httpx.AsyncClient(base_url=self.base_url, timeout=120, limits=limits, **kwargs)

    def describe(self, sid: str) -> dict[str, Any]:
        return asyncio.run(self.store.describe(sid))

    def stats(self) -> dict[str, Any]:
        return asyncio.run(self.store.stats())


def deployed_app(serve_url: str, name: str, replicas: int = 2, **settings: Any) -> Iterator[App]:
    options = dict(app_name=name, num_shards=4, corpus_dir=embedded_corpus_dir(), reaper_interval_seconds=1.0)
    app_settings = Settings(**{**options, **settings})
    deploy(app_settings, serve_url, replicas=replicas)
    try:
        yield App(serve_url, app_settings, RaySessionStore(actors_spec(app_settings)))
    finally:
        undeploy(app_settings)


# ----- helpers the tests share -----


def new_session_id() -> str:
    return f"resources-session-{uuid.uuid4().hex}"


def episode_seed(sid: str, rollout: str = "r1", task: str = "t1", **task_data: Any) -> dict[str, Any]:
    return {
        "resources_session_id": sid,
        "episode_id": {"rollout_id": rollout, "attempt": 0},
        "task_id": {"taskset": "finance", "task_id": task},
        "task_data": {"question": "q", "expected_answer": "42", **task_data},
    }


def close_body(sid: str, rollout: str = "r1") -> dict[str, Any]:
    return {"resources_session_id": sid, "episode_id": {"rollout_id": rollout, "attempt": 0}}


def verify_body(answer: str | None = "42", expected: str = "42") -> dict[str, Any]:
    output = []
    if answer is not None:
        output.append({"type": "function_call", "name": "submit_final_result", "call_id": "c",
                       "arguments": json.dumps({"final_result": answer})})
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "What is it?"}]},
        "response": {"output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}},
        "question": "What is it?",
        "expected_answer": expected,
    }


def cookie_claims(response: httpx.Response, name: str) -> dict[str, Any]:
    """The claims of the session cookie a response sets (Starlette format: base64(json).timestamp.signature)."""
    for header in response.headers.get_list("set-cookie"):
        cookie_name, _, rest = header.partition("=")
        if cookie_name == name:
            payload = rest.split(";")[0].split(".")[0]
            return json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    raise AssertionError(f"response {response.status_code} set no {name} cookie")
