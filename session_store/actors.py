"""Named, detached session-store actors in the application's own Ray namespace: create, find, clean up.

Every ingress replica calls `ensure_session_actors` at start with identical arguments; `get_if_exists` makes
that race-safe (ray-notes: the first creator's arguments win). The actors are detached so that they outlive
any one replica, and restart with `max_restarts=-1`; a restarted shard comes back empty under a new
incarnation, which the core uses to report its old sessions as lost. Session-mutating calls are never
retried by Ray (`max_task_retries=0`): a retry could apply a write twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ray

from .reaper import Reaper
from .shard import ShardService

SessionShard = ray.remote(ShardService)


@dataclass(frozen=True)
class SessionActorsSpec:
    app_name: str
    num_shards: int
    session_ttl_seconds: float
    fence_ttl_seconds: float | None
    reaper_interval_seconds: float

    @property
    def namespace(self) -> str:
        return "finsec-serve." + re.sub(r"[^A-Za-z0-9_.-]", "_", self.app_name)

    def shard_name(self, k: int) -> str:
        return f"session-shard-{k}-of-{self.num_shards}"

    reaper_name = "session-reaper"


_ACTOR_OPTIONS = dict(lifetime="detached", get_if_exists=True, max_restarts=-1, num_cpus=0)


def ensure_session_actors(spec: SessionActorsSpec) -> list[ray.actor.ActorHandle]:
    """Get or create the K shards and the reaper; returns the shard handles in shard order."""
    shards = [
        SessionShard.options(
            name=spec.shard_name(k), namespace=spec.namespace, max_task_retries=0, **_ACTOR_OPTIONS
        ).remote(spec.session_ttl_seconds, spec.fence_ttl_seconds)
        for k in range(spec.num_shards)
    ]
    Reaper.options(name=spec.reaper_name, namespace=spec.namespace, **_ACTOR_OPTIONS).remote(
        spec.namespace, [spec.shard_name(k) for k in range(spec.num_shards)], spec.reaper_interval_seconds
    )
    return shards


def destroy_session_actors(spec: SessionActorsSpec) -> int:
    """The explicit cleanup path: detached actors outlive `serve shutdown`. Kills every named actor in the
    app's namespace (shards, reaper, and the app's other shared actors); returns how many."""
    killed = 0
    for actor in ray.util.list_named_actors(all_namespaces=True):
        if actor["namespace"] != spec.namespace:
            continue
        try:
            ray.kill(ray.get_actor(actor["name"], namespace=spec.namespace), no_restart=True)
            killed += 1
        except ValueError:  # gone meanwhile
            pass
    return killed
