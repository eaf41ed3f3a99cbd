"""The one owner of an application's named actors: their namespace and names, their options, the Ray errors
their calls can raise and what those mean, creation, retirement and cleanup.

- **Names carry versions.** An actor is named `<kind>.<version>`, the version a digest of its constructor
  arguments and of the code it runs. A redeploy with a new TTL, rate limit or shard count, or with new
  session-store code, therefore creates new actors instead of reusing old ones (`get_if_exists` hands the
  first creator's arguments to everybody). The old ones are retired once no replica uses them
  (`retire_stale`); sessions they held are reported lost by the new shards, whose incarnations their
  cookies do not carry.
- **Cleanup.** Every actor is registered with Serve's controller, which kills registered actors on
  `serve shutdown` (as Ray Serve's own per-app actors are); `destroy` is the explicit path for everything else.
  Neither touches the durable records (fences, seeds, the cookie secret): only a purge does (`marks/`).
- **Placement.** Actors go to the nodes that offer the app's resources, spread. Told how many such nodes the
  cluster has (`state_nodes`), the shards wait for all of them and take an equal share each, whatever order the
  nodes joined in; a shard whose node is gone restarts on another.
- **Errors.** Any Ray failure of a call, and a call that does not answer within its timeout, is
  `StoreUnavailable`: the ingress answers 503 with Retry-After, never a 500.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import pickle
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .errors import DocumentRefused, SessionConflict, SessionLost, StoreUnavailable
from .gcs_kv import gcs_kv
from .marks.base import app_namespace

__all__ = ["ACTOR_OPTIONS", "AppActors", "call", "on_node", "RAY_ERRORS"]

log = logging.getLogger(__name__)

RAY_ERRORS = (RayError, TimeoutError)  # every way an actor call can fail that is not the actor's own answer
# What an actor may raise on purpose (a full store, say): the caller gets it as if the call were local.
_OWN_ERRORS = (SessionConflict, SessionLost, DocumentRefused, StoreUnavailable)

# Detached: an actor owned by a replica dies when the replica is replaced. Restarted forever, with no task
# retries: a retry could apply a session write twice. No CPU: they only hold state and answer quickly. Spread
# (best effort) over the nodes that may hold them, so losing one node loses only a share of the sessions. No task
# events, as Serve does for its own actors: every shard call would otherwise report itself to the GCS.
ACTOR_OPTIONS: dict[str, Any] = {
    "lifetime": "detached",
    "get_if_exists": True,
    "max_restarts": -1,
    "max_task_retries": 0,
    "num_cpus": 0,
    "scheduling_strategy": "SPREAD",
    "enable_task_events": False,
}
_ACTIVE_KEY = b"active-actors"


async def call(ref: Awaitable[Any], *, timeout: float, what: str) -> Any:
    """Await an actor call; the actor's own errors pass through, every Ray failure and a timeout become
    StoreUnavailable (503)."""
    try:
        return await asyncio.wait_for(ref, timeout)
    except RayTaskError as error:
        if isinstance(error.cause, _OWN_ERRORS):
            raise error.cause from None
        raise _unavailable(what, error) from error
    except RAY_ERRORS as error:
        raise _unavailable(what, error) from error


def _unavailable(what: str, error: BaseException) -> StoreUnavailable:
    return StoreUnavailable(
        f"{what} did not answer ({type(error).__name__}); it may be restarting. Retry the request shortly.",
        "actor_unreachable",
    )


@dataclass(frozen=True)
class AppActors:
    app_name: str
    resources: dict[str, float] = field(default_factory=dict)  # e.g. {"finsec_state": 0.001}: keep off the head

    @property
    def namespace(self) -> str:
        return app_namespace(self.app_name)

    @property
    def kv_namespace(self) -> bytes:
        return self.namespace.encode()

    def name(self, kind: str, args: tuple, code: str) -> str:
        version = hashlib.blake2b(pickle.dumps(args) + code.encode(), digest_size=5).hexdigest()
        return f"{kind}.{version}"

    def create(self, kind: str, actor_class: Any, args: tuple, *, code: str, **options: Any) -> Any:
        """Get or create the actor of this kind for these arguments and this code; race-safe across replicas."""
        handle = actor_class.options(
            name=self.name(kind, args, code),
            namespace=self.namespace,
            **{**ACTOR_OPTIONS, **({"resources": self.resources} if self.resources else {}), **options},
        ).remote(*args)
        _register_for_shutdown(handle)
        return handle

    # ----- placement -----

    def all_exist(self, names: list[str]) -> bool:
        """Whether every one of these named actors of the app exists (alive or restarting)."""
        try:
            for name in names:
                ray.get_actor(name, namespace=self.namespace)
        except ValueError:
            return False
        return True

    def wait_for_nodes(self, count: int, *, poll_seconds: float = 2.0, say_every: float = 60.0) -> list[str]:
        """The IDs of `count` live nodes offering this app's resources, in a stable order; blocks until that many
        have joined (a cluster still starting), saying so now and then."""
        began = said = time.monotonic()
        while len(nodes := self._offering()) < count:
            if time.monotonic() - said >= say_every:
                said = time.monotonic()
                log.warning(
                    "%s: %d of the %d nodes offering %s have joined after %.0f s; its shards wait for all",
                    self.app_name,
                    len(nodes),
                    count,
                    self.resources,
                    said - began,
                )
            time.sleep(poll_seconds)
        return nodes[:count]

    def _offering(self) -> list[str]:
        return sorted(
            node["NodeID"]
            for node in ray.nodes()
            if node["Alive"]
            and all(node["Resources"].get(name, 0) >= amount for name, amount in self.resources.items())
        )

    # ----- retirement and cleanup -----

    async def declare_active(self, names: list[str]) -> None:
        """Called by each new ingress replica: the actors the deployment now uses (the newest replica wins)."""
        client = gcs_kv()
        await client.async_internal_kv_put(
            _ACTIVE_KEY, "\n".join(sorted(names)).encode(), True, self.kv_namespace, timeout=5
        )

    async def retire_stale(self, names: list[str], serve_app: str | None) -> int | None:
        """Kill the namespace's actors that are not `names`, once `names` are the active set and the Serve app
        runs only replicas that use them. Returns how many were killed, or None while `names` are not (yet)
        the only deployment of the app."""
        active = await gcs_kv().async_internal_kv_get(_ACTIVE_KEY, self.kv_namespace, timeout=5)
        if active is None or set(active.decode().split("\n")) != set(names):
            return None
        if serve_app is not None and not await asyncio.to_thread(_serve_app_running, serve_app):
            return None
        stale = [
            a["name"]
            for a in await asyncio.to_thread(ray.util.list_named_actors, True)
            if a["namespace"] == self.namespace and a["name"] not in names
        ]
        for name in stale:
            _kill(name, self.namespace)
        if stale:
            log.warning("retired %d actors of an earlier deployment of %s: %s", len(stale), self.app_name, stale)
        return len(stale)

    def destroy(self) -> int:
        """The explicit cleanup path (detached actors outlive `serve delete`): kill every named actor of the
        app; its durable records stay. Returns how many actors were killed."""
        return sum(
            _kill(a["name"], self.namespace)
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == self.namespace
        )


def _kill(name: str, namespace: str) -> bool:
    try:
        ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
        return True
    except ValueError:  # gone meanwhile
        return False


def _register_for_shutdown(handle: Any) -> None:
    """Serve's controller kills registered actors on `serve shutdown` (its own per-app actors use this)."""
    try:
        from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

        controller = ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
        controller._register_shutdown_cleanup_actor.remote(handle)
    except Exception:  # no Serve here (a plain Ray test), or a Serve without the hook: destroy() remains
        log.debug("could not register an actor for cleanup at serve shutdown", exc_info=True)


def _serve_app_running(app: str) -> bool:
    from ray import serve
    from ray.serve.schema import ApplicationStatus

    status = serve.status().applications.get(app)
    return status is not None and status.status == ApplicationStatus.RUNNING


def on_node(node_id: str) -> dict[str, Any]:
    """Actor options that place it on this node while the node lives, and anywhere it may go once it is gone."""
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=True)}
