"""The whole app in the test process (deployments/inprocess.py), driven over real ASGI with httpx, with a
clock the test moves. Synchronous calls, so contract tests read like the Ray suite's; each runs in milliseconds."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from deployments.inprocess import InProcessApp, in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from harness.hostile import IN_PROCESS_SECRET


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class InProcess:
    """`with InProcess(max_rollout_time_seconds=60) as app:` then `app.post(...)` with a cookie-keeping client."""

    def __init__(self, **settings: Any):
        options = dict(
            app_name="in-process", num_shards=2, corpus_dir=embedded_corpus_dir(), cookie_secret=IN_PROCESS_SECRET
        )
        self.settings = Settings(**{**options, **settings})
        self.clock = Clock()
        self.app: InProcessApp = in_process_app(self.settings, clock=self.clock)
        self._loop = asyncio.new_event_loop()
        self._lifespan = self.app.api.router.lifespan_context(self.app.api)

    def __enter__(self) -> InProcess:
        self._loop.run_until_complete(self._lifespan.__aenter__())
        self.client = self.new_client()
        return self

    def __exit__(self, *exc) -> None:
        self.run(self.client.aclose())
        self._loop.run_until_complete(self._lifespan.__aexit__(None, None, None))
        pending = asyncio.all_tasks(self._loop)  # e.g. the edgar_search index still building
        for task in pending:
            task.cancel()
        if pending:  # gather() of nothing would make its future on the thread's current loop, not ours
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    @property
    def metrics(self):
        """The app's operator metrics, counted in memory here (finsec/metrics.py)."""
        return self.app.api.state.services.metrics

    def new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(self.app.api), base_url="http://in-process")

    def run(self, coroutine):
        return self._loop.run_until_complete(coroutine)

    def post(self, path: str, client: httpx.AsyncClient | None = None, **kwargs: Any) -> httpx.Response:
        return self.run((client or self.client).post(path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.run(self.client.get(path, **kwargs))

    def describe(self, sid: str) -> dict:
        return self.run(self.app.store.describe(sid))

    def stats(self) -> dict:
        return self.run(self.app.store.stats())

    def reaper_tick(self):
        return self.run(self.app.reaper.tick())

    def restart_shards(self) -> None:
        restart_shards(self.app, self.clock)


def restart_shards(app: InProcessApp, clock: Clock | None = None) -> None:
    """What a SIGKILL and a restart do to every shard: sessions gone, new incarnations, marks kept."""
    from session_store import ShardService

    for k in range(len(app.store.shards)):
        app.store.shards[k] = ShardService(app.settings.shard_config(), app.marks, clock)
