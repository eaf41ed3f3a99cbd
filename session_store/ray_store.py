"""`RaySessionStore`: the `SessionStore` whose shards are named shard actors, and `SessionActors`, which gets
or creates the shards, the document store and the reaper of an application."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any

import session_store

from .app_actors import AppActors, call, on_node
from .direct import ShardChannel
from .ray_actors import DocumentStoreActor, ReaperActor, SessionShardActor
from .shard import Op, Outcome, ShardConfig
from .store import SessionStore
from .versions import code_version

__all__ = ["RaySessionStore", "SessionActors", "SessionActorsSpec"]


@dataclass(frozen=True)
class SessionActorsSpec:
    num_shards: int
    shard: ShardConfig
    reaper_interval_seconds: float = 30.0
    document_store_bytes: int = 4_000_000_000
    document_grace_seconds: float = 60.0
    call_timeout_seconds: float = 10.0
    mark_store_url: str | None = None  # None: the cluster's GCS
    check_durability: bool = True  # the reaper reads the store's eviction policy and persistence every tick
    state_nodes: int = 0  # set: the shards wait for this many state nodes and take an equal share each
    stalled_after_seconds: float | None = None  # the reaper counts open sessions idle this long (a gauge)


class SessionActors:
    """The session-store actors of one application, created under versioned names (`app_actors.py`): the
    shards and the document store at once, the reaper by `start_reaper` (only the deployment runs one)."""

    def __init__(self, app: AppActors, spec: SessionActorsSpec):
        self._app, self._spec = app, spec
        self._code = code = code_version(session_store)
        shard_args = [
            (spec.shard, app.namespace, (k, spec.num_shards), spec.mark_store_url) for k in range(spec.num_shards)
        ]
        kinds = [f"shard-{k}-of-{spec.num_shards}" for k in range(spec.num_shards)]
        self.shard_names = [app.name(kind, args, code) for kind, args in zip(kinds, shard_args, strict=False)]
        # Only the first replica places the shards: one added later (autoscaling, a restart) finds them and must
        # not wait for a state node that is down meanwhile.
        placing = spec.state_nodes and not app.all_exist(self.shard_names)
        nodes = app.wait_for_nodes(spec.state_nodes) if placing else []
        self.shards = [
            app.create(kind, SessionShardActor, args, code=code, **(on_node(nodes[k % len(nodes)]) if nodes else {}))
            for k, (kind, args) in enumerate(zip(kinds, shard_args, strict=False))
        ]
        doc_args = (spec.document_store_bytes, spec.document_grace_seconds)
        self.document_store_name = app.name("documents", doc_args, code)
        self.document_store = app.create("documents", DocumentStoreActor, doc_args, code=code)
        self.timeout = spec.call_timeout_seconds

    def start_reaper(self, other_actors: list[str], serve_app: str | None) -> list[str]:
        """Get or create the reaper; returns the names of every actor the deployment uses (the active set)."""
        args = (
            self._app,
            self.shard_names,
            self.document_store_name,
            self._spec.reaper_interval_seconds,
            sorted(other_actors),
            serve_app,
            self._spec.mark_store_url,
            self._spec.check_durability,
            self._spec.stalled_after_seconds,
        )
        self.reaper = self._app.create("reaper", ReaperActor, args, code=self._code)
        return [*self.shard_names, self.document_store_name, self._app.name("reaper", args, self._code), *other_actors]


class RaySessionStore(SessionStore):
    """Batches go to the shards over the direct transport (`direct/`), or, with `transport="ray"`, as actor
    calls (far more CPU per batch, docs/benchmarks.md; for networks that allow Ray's ports only). Stats and
    ticks are actor calls."""

    def __init__(self, actors: SessionActors, transport: str = "direct"):
        self._shards = actors.shards
        self._timeout = actors.timeout
        super().__init__(len(actors.shards))
        self._channels = (
            [
                ShardChannel(partial(self._endpoint, k), timeout=self._timeout, what=self._what(k))
                for k in range(len(actors.shards))
            ]
            if transport == "direct"
            else None
        )

    @staticmethod
    def _what(shard: int) -> str:
        return f"Session-store shard {shard}"

    async def _endpoint(self, shard: int):
        return await call(self._shards[shard].endpoint.remote(), timeout=self._timeout, what=self._what(shard))

    async def _send(self, shard: int, ops: list[Op]) -> list[Outcome]:
        if self._channels is not None:
            return await self._channels[shard].send(ops)
        return await call(self._shards[shard].run.remote(ops), timeout=self._timeout, what=self._what(shard))

    async def _each_shard(self, method: str, *args: Any) -> list[Any]:
        return await asyncio.gather(
            *(
                call(getattr(s, method).remote(*args), timeout=self._timeout, what=self._what(k))
                for k, s in enumerate(self._shards)
            )
        )
