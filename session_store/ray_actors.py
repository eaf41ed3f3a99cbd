"""The Ray shells of the session store: each actor is a thin wrapper over a pure class of this package.

- `SessionShardActor`: a `ShardService` whose marks live in the durable store the settings name (`marks/`): Ray's
  GCS key-value store by default (it outlives any actor process), or Redis (it outlives the cluster). It also
  serves its batches on a port of its node (`direct/`), which replicas use instead of actor calls.
- `DocumentStoreActor`: the app's one `DocumentStore`.
- `ReaperActor`: runs `Reaper.tick` on a timer, publishes session counters as Ray metrics, and retires the actors
  of earlier deployments.
Names, options and creation are `app_actors.py`'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray
from ray.util.metrics import Counter, Gauge

from .app_actors import AppActors, call
from .direct import DirectServer, Endpoint
from .documents import DocumentStore, DocumentStoreService
from .marks import open_mark_store
from .reaper import Reaper, run_every
from .shard import ShardConfig, ShardService
from .timings import PHASES

log = logging.getLogger(__name__)


class ActorProcess:
    """Where an actor runs, for operators and fault-injection tests (they SIGKILL it, or remove its node)."""

    async def pid(self) -> int:
        return os.getpid()

    async def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()


@ray.remote
class SessionShardActor(ShardService, ActorProcess):
    def __init__(self, config: ShardConfig, namespace: str, place: tuple[int, int], mark_store_url: str | None):
        super().__init__(config, open_mark_store(mark_store_url, namespace), place=place)
        self._direct = DirectServer(self.run, ray.util.get_node_ip_address())

    async def endpoint(self) -> Endpoint:
        """Where this process serves batches directly (listening from the first call on)."""
        return await self._direct.start()

    async def stats(self) -> dict[str, Any]:
        return {**await super().stats(), "direct_connections": self._direct.connections}


@ray.remote
class DocumentStoreActor(DocumentStoreService, ActorProcess):
    def __init__(self, max_bytes: int, grace_seconds: float):
        super().__init__(DocumentStore(max_bytes=max_bytes, grace_seconds=grace_seconds))


class ActorClient:
    """An actor handle seen through `call`: its methods are awaited under one timeout and one error mapping."""

    def __init__(self, handle: Any, what: str, timeout: float):
        self._handle, self._what, self._timeout = handle, what, timeout

    def __getattr__(self, method: str):
        async def invoke(*args: Any) -> Any:
            return await call(getattr(self._handle, method).remote(*args), timeout=self._timeout, what=self._what)

        return invoke


@ray.remote
class ReaperActor(ActorProcess):
    """Ticks every `interval_seconds`. A restarted reaper (max_restarts=-1) starts its loop again the same way."""

    def __init__(
        self,
        app: AppActors,
        shard_names: list[str],
        document_store: str,
        interval_seconds: float,
        other_actors: list[str],
        serve_app: str | None,
        mark_store_url: str | None,
        check_durability: bool = True,
        stalled_after_seconds: float | None = None,
        timeout_seconds: float = 30.0,
    ):
        shards = [
            ActorClient(ray.get_actor(n, namespace=app.namespace), f"shard {n}", timeout_seconds) for n in shard_names
        ]
        documents = ActorClient(
            ray.get_actor(document_store, namespace=app.namespace), "document store", timeout_seconds
        )
        # The hourly sweep of lapsed marks runs here, never on a serving shard.
        self._reaper = Reaper(
            shards,
            documents,
            marks=open_mark_store(mark_store_url, app.namespace),
            sweep_marks_every=max(1, int(3600 / interval_seconds)),
            check_durability=check_durability,
            stalled_after_seconds=stalled_after_seconds,
        )
        self._app = app
        self._serve_app = serve_app
        me = ray.get_runtime_context().get_actor_name()
        assert me is not None  # AppActors.create names every actor of the app
        self._active = [*shard_names, document_store, *other_actors, me]
        self._interval = interval_seconds
        tags = {"app": app.app_name}
        self._metrics = _SessionMetrics(tags)
        # An async actor's constructor runs on its event loop, so the loop can start here.
        self._task = asyncio.get_running_loop().create_task(run_every(interval_seconds, self.tick))

    async def tick(self) -> dict[str, Any]:
        evicted, increments, timings = await self._reaper.tick()
        self._metrics.publish(self._reaper.status, increments, timings)
        retired = await self._app.retire_stale(self._active, self._serve_app)
        if retired == 0:  # the only deployment of the app, with nothing older left to write marks: settle
            await self._reaper.settle()
        return {"evicted": evicted, "retired": retired}

    async def status(self) -> dict[str, Any]:
        status = self._reaper.status
        return {
            "ticks": status.ticks,
            "evicted": status.evicted,
            "held": status.held,
            "counters": dict(status.counters),
            "documents": status.documents,
            "shards_unreachable": status.shards_unreachable,
            "durable_marks_swept": status.durable_marks_swept,
            "store": status.store,
            "clock_step": status.clock_step,
            "stalled": status.stalled,
            "interval_seconds": self._interval,
        }


class _SessionMetrics:
    """The operator's session counters, cluster-wide (Ray metrics, exported with a `ray_` prefix)."""

    def __init__(self, tags: dict[str, str]):
        self._tags = tags
        keys = ("app", "event")
        self._events = Counter(
            "finsec_session_events",
            "Session events decided by the shards: seeds by kind, "
            "retried seeds, 409s by reason, closes, verifies scored or masked by failure_kind, "
            "404 session_lost, evictions",
            tag_keys=keys,
        )
        self._held = {
            name: Gauge(f"finsec_{name}_held", f"{name} held by all shards", tag_keys=("app",))
            for name in ("sessions", "marks", "digests")
        }
        self._documents = Gauge("finsec_document_store_bytes", "Bytes of text in the document store", tag_keys=("app",))
        self._clock_step = Gauge(
            "finsec_clock_step_seconds",
            "The largest gap between a node's wall clock and the "
            "session clock of its shard (a step being absorbed at 1%); over 1 s is alarmed",
            tag_keys=("app",),
        )
        self._stalled = Gauge(
            "finsec_stalled_sessions",
            "Open sessions no stateful call named for stalled_after_seconds, counted by the reaper's last tick",
            tag_keys=("app",),
        )
        self._unreachable = Gauge(
            "finsec_shards_unreachable", "Session shards that did not answer the reaper's last tick", tag_keys=("app",)
        )
        self._store_ok = Gauge(
            "finsec_mark_store_ok",
            "1 while the durable mark store holds its marker and cannot "
            "forget (noeviction, append-only file); 0 while new sessions are refused for it",
            tag_keys=("app",),
        )
        # The shards' own time (session_store/timings.py): a rate of the seconds over a rate of the count is the
        # mean latency of a shard batch, or of a durable mark read or write (the mark store's health).
        self._shard_seconds = Counter(
            "finsec_shard_seconds",
            "Seconds the shards spent, by phase: batch, mark_read, mark_write",
            tag_keys=("app", "phase"),
        )
        self._shard_calls = Counter(
            "finsec_shard_calls", "Shard batches and durable mark reads and writes, by phase", tag_keys=("app", "phase")
        )

    def publish(self, status, increments, timings) -> None:
        for event, n in increments.items():
            if n > 0:
                self._events.inc(n, tags={**self._tags, "event": event})
        for phase, count, spent in PHASES:
            tags = {**self._tags, "phase": phase}
            if timings.get(count, 0) > 0:
                self._shard_calls.inc(timings[count], tags=tags)
            if timings.get(spent, 0) > 0:
                self._shard_seconds.inc(timings[spent] / 1e6, tags=tags)
        for name, gauge in self._held.items():
            gauge.set(status.held.get(name, 0), tags=self._tags)
        if status.documents is not None:
            self._documents.set(status.documents.bytes, tags=self._tags)
        self._clock_step.set(status.clock_step, tags=self._tags)
        self._unreachable.set(status.shards_unreachable, tags=self._tags)
        if status.stalled is not None:
            self._stalled.set(status.stalled, tags=self._tags)
        if status.store is not None:
            healthy = not status.store.forgot and status.store.durability_problem is None
            self._store_ok.set(int(healthy), tags=self._tags)


__all__ = ["ActorClient", "ActorProcess", "SessionShardActor", "DocumentStoreActor", "ReaperActor"]
