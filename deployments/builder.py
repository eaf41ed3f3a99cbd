"""The application builder that serve configs name: `import_path: deployments.builder:build_app`."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from ray.serve import Application

from .ingress import FinsecIngress, app_actors
from .settings import Settings

log = logging.getLogger("ray.serve")


def cookie_secret(settings: Settings) -> str:
    """The configured secret; else one generated for the app and kept in the cluster's key-value store, so a
    redeploy on the same cluster keeps the cookies valid. Then the new shards report the old sessions as lost
    (their cookies name shards that are gone), where a new secret would make them unknown, and scored."""
    if settings.cookie_secret is not None:
        return settings.cookie_secret.get_secret_value()
    # Decision 14: never a predictable constant. The builder runs once per deploy and every replica gets this.
    kept = app_actors(settings).shared_secret(lambda: secrets.token_urlsafe(32))
    log.warning(
        "finsec-serve: no cookie_secret configured; %s. Sessions do not survive a new cluster; set cookie_secret "
        "(or FINSEC_COOKIE_SECRET) for that.",
        "using the one generated for this app on this cluster" if kept else "generated one for this deployment")
    return kept or secrets.token_urlsafe(32)


def ingress_application(settings: Settings, **deployment_options: Any) -> Application:
    ingress = FinsecIngress.options(**deployment_options) if deployment_options else FinsecIngress
    return ingress.bind(settings, cookie_secret(settings))


def build_app(args: dict[str, Any]) -> Application:
    return ingress_application(Settings(**(args or {})))
