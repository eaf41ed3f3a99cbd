"""A replica of no CPU on every state node, so that Serve runs its HTTP proxy there.

Serve starts a proxy only on the head and on the nodes that hold a replica of some deployment; the shards are
plain actors. KubeRay's readiness probe of a RayService worker pod asks that proxy (`/-/healthz` on the serve
port), so without a replica the state pods would never be Ready and a disruption budget counting them would
protect nothing. The proxy also answers the serve port's traffic that KubeRay's serve Service sends to every
Ready worker pod: it routes it to the ingress replicas as every other node's proxy does.
"""

from __future__ import annotations

from ray import serve
from ray.serve import Application

from deployments.settings import Settings

__all__ = ["StateNodeProxy", "state_node_proxies"]


@serve.deployment(name="StateNodeProxy", max_replicas_per_node=1, max_ongoing_requests=1)
class StateNodeProxy:
    """Holds nothing and is never called: its replicas are where Serve must keep a proxy."""


def state_node_proxies(settings: Settings) -> Application | None:
    """One replica a state node (`state_nodes` of them, each asking for `state_actor_resources` and one node's
    place), or None when the app is not told its state nodes."""
    if not settings.state_nodes:
        return None
    return StateNodeProxy.options(num_replicas=settings.state_nodes, ray_actor_options={
        "num_cpus": 0, "resources": dict(settings.state_actor_resources)}).bind()
