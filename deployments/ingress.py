"""The Serve ingress deployment: a stateless FastAPI replica over the application's named actors."""

from __future__ import annotations

from ray import serve

from deployments import rate_limiter
from deployments.asgi import create_api
from deployments.observability import hub as telemetry_hub
from deployments.observability import telemetry
from deployments.observability.hub_actor import TelemetryHubActor
from deployments.observability.logs import into_serve_logs
from deployments.rate_limiter import ClusterRateLimiter, RateLimiterActor
from deployments.services import build_services
from deployments.settings import Settings
from finsec.edgar import limiter as schedule
from session_store import code_version
from session_store.app_actors import AppActors
from session_store.ray_actors import ActorClient
from session_store.ray_store import RaySessionStore, SessionActors, SessionActorsSpec

__all__ = ["app_actors", "destroy_app_actors", "FinsecIngress", "session_actors_spec"]


def app_actors(settings: Settings) -> AppActors:
    return AppActors(settings.app_name, resources=dict(settings.state_actor_resources))


def session_actors_spec(settings: Settings) -> SessionActorsSpec:
    return SessionActorsSpec(
        num_shards=settings.num_shards,
        shard=settings.shard_config(),
        reaper_interval_seconds=settings.reaper_interval_seconds,
        document_store_bytes=settings.document_store_bytes,
        document_grace_seconds=settings.document_grace_seconds,
        call_timeout_seconds=settings.store_call_timeout_seconds,
        mark_store_url=settings.mark_store(),
        check_durability=settings.mark_store_durability_check,
        state_nodes=settings.state_nodes,
        stalled_after_seconds=settings.stalled_after_seconds,
    )


def destroy_app_actors(settings: Settings) -> int:
    return app_actors(settings).destroy()


# The app admits requests itself, by waiting time (deployments/http/admission.py): Serve hands each replica every
# request at once (the builder sets max_ongoing_requests from the admission settings) and queues none of its own.
@serve.deployment(name="FinsecIngress", max_queued_requests=-1)
@serve.ingress()
class FinsecIngress:
    def __init__(self, settings: Settings, cookie_secret: str, state_node_proxies: object = None):
        # `state_node_proxies` (deployments/builder.py) is bound to the app only so that Serve deploys it
        into_serve_logs()
        self._settings = settings
        self._cookie_secret = cookie_secret
        self._app = app_actors(settings)
        limiter_args = (settings.requests_per_second, settings.rate_limit_window_seconds)
        limiter_code = code_version(rate_limiter, schedule)
        limiter = self._app.create("edgar-limiter", RateLimiterActor, limiter_args, code=limiter_code)
        context = serve.get_replica_context()
        self._limiter = ClusterRateLimiter(limiter, *limiter_args, caller=context.replica_id.unique_id)
        hub_code = code_version(telemetry_hub, telemetry)
        hub = self._app.create("telemetry", TelemetryHubActor, (), code=hub_code)
        self._hub = ActorClient(hub, "telemetry hub", settings.store_call_timeout_seconds)
        self._actors = SessionActors(self._app, session_actors_spec(settings))
        self._active = self._actors.start_reaper(
            [self._app.name("edgar-limiter", limiter_args, limiter_code), self._app.name("telemetry", (), hub_code)],
            serve_app=context.app_name,
        )
        self._store = RaySessionStore(self._actors, settings.shard_transport)
        self._documents = ActorClient(
            self._actors.document_store, "document store", settings.store_call_timeout_seconds
        )
        self._replica = context.replica_id.unique_id

    async def _services(self):
        await self._app.declare_active(self._active)  # the actors a newer deployment replaces get retired
        return await build_services(self._settings, self._store, self._limiter, self._documents)

    def __serve_build_asgi_app__(self):
        return create_api(self._settings, self._services, self._cookie_secret, served_by=self._replica, hub=self._hub)
