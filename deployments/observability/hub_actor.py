"""The telemetry hub as the application's named actor (created by session_store.app_actors like every actor of
the app); a restart (max_restarts) starts it empty."""

from __future__ import annotations

import ray

from deployments.observability.hub import TelemetryHub
from session_store.ray_actors import ActorProcess

__all__ = ["TelemetryHubActor"]


@ray.remote
class TelemetryHubActor(TelemetryHub, ActorProcess):
    pass
