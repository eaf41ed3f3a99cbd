"""The recipes' tests: each trainer integration driven by that trainer's own client library against a real
finsec-serve (the one-process app under uvicorn on loopback), with the agent model of agent_model.py where a model
is needed. A library that cannot share this environment (verifiers pins another mcp; nemo-gym wants Python 3.13)
runs from its own virtualenv, `.venv-<name>` at the project root, which `make test` builds; without it the test
skips, saying how to build it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from deployments.inprocess import InProcessApp, in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec_client.threaded_server import ThreadedServer
from harness.bodies import ROOT
from harness.llm_stub import LlmStub, running_stub


@dataclass
class Finsec:
    url: str
    app: InProcessApp | None  # None: the Serve app

    def counters(self) -> dict:
        return httpx.get(self.url + "/session_counters", timeout=10).json()

    def held(self) -> int:
        return httpx.get(self.url + "/status", timeout=10).json()["held"]["sessions"]


@pytest.fixture(scope="module")
def finsec_in_process() -> Iterator[Finsec]:
    app = in_process_app(Settings(app_name="recipe", num_shards=2, corpus_dir=embedded_corpus_dir()))
    with ThreadedServer(app.api, lifespan="on") as server:
        yield Finsec(server.url, app)


@pytest.fixture(scope="module")
def model() -> Iterator[LlmStub]:
    """The loopback model server; a test sets its replies with `model.respond_with(AgentModel(...))`."""
    with running_stub() as stub:
        yield stub


def recipe_python(name: str) -> Path:
    """The Python of the `.venv-<name>` virtualenv, or a skip naming the make target that builds it."""
    python = ROOT / f".venv-{name}" / "bin" / "python"
    if not (ROOT / f".venv-{name}" / ".installed").exists():
        pytest.skip(f"no {name} environment: `make .venv-{name}/.installed` builds it (make test does)")
    return python


@pytest.fixture(scope="module")
def finsec(finsec_in_process: Finsec) -> Finsec:
    """The finsec-serve a recipe's client plays against (a module may serve it other ways too)."""
    return finsec_in_process
