"""The application builder that serve configs name: `import_path: deployments.builder:build_app`.

The app is the ingress deployment, and, when the settings name the cluster's state nodes, a replica of no CPU on
each of them (`StateNodeProxy`). Serve starts a proxy only on the head and on the nodes that hold a replica of
some deployment; the shards are plain actors. KubeRay's readiness probe of a RayService worker pod asks that proxy
(`/-/healthz` on the serve port), so without a replica the state pods would never be Ready and a disruption
budget counting them would protect nothing. The proxy also answers the serve port's traffic that KubeRay's serve
Service sends every Ready worker pod, routing it to the ingress replicas as every other node's proxy does.
"""

from __future__ import annotations

import logging
from typing import Any

from ray import serve
from ray.serve import Application

from deployments import serve_tuning
from deployments.http.admission import Admission
from deployments.ingress import FinsecIngress
from deployments.mark_store import begin_mark_store, cookie_secret
from deployments.settings import Settings

__all__ = ["StateNodeProxy", "build_app", "ingress_application", "state_node_proxies"]

log = logging.getLogger("ray.serve")


@serve.deployment(name="StateNodeProxy", max_replicas_per_node=1, max_ongoing_requests=1)
class StateNodeProxy:
    """Holds nothing and is never called: its replicas are where Serve must keep a proxy."""


def state_node_proxies(settings: Settings) -> Application | None:
    """One replica a state node (`state_nodes` of them, each asking for `state_actor_resources` and one node's
    place), or None when the app is not told its state nodes."""
    if not settings.state_nodes:
        return None
    # @serve.deployment made the class a Deployment; mypy keeps a decorated class's own type (mypy#3135)
    return StateNodeProxy.options(  # type: ignore[attr-defined]
        num_replicas=settings.state_nodes,
        ray_actor_options={"num_cpus": 0, "resources": dict(settings.state_actor_resources)},
    ).bind()


def ingress_application(settings: Settings, **deployment_options: Any) -> Application:
    """The app, its ingress deployment configured by `deployment_options` (a serve config's FinsecIngress section).
    Every request reaches a replica at once, where admission times its wait: Serve's own bound on the requests a
    replica holds is what admission may hold, unless the options say otherwise (`finsec check` says why not to)."""
    held = Admission.from_settings(settings).most_held()
    # @serve.deployment made the class a Deployment; mypy keeps a decorated class's own type (mypy#3135)
    ingress = FinsecIngress.options(**{"max_ongoing_requests": held, **deployment_options})  # type: ignore[attr-defined]
    begin_mark_store(settings)
    return ingress.bind(settings, cookie_secret(settings), state_node_proxies(settings))


def build_app(args: dict[str, Any]) -> Application:
    if (untuned := serve_tuning.warning()) is not None:  # `serve run` without the environment, say
        log.warning(untuned)
    return ingress_application(Settings(**(args or {})))
