"""The application builder that serve configs name: `import_path: deployments.app:build_app`."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from ray.serve import Application

from .ingress import FinsecIngress
from .settings import Settings

log = logging.getLogger("ray.serve")


def cookie_secret(settings: Settings) -> str:
    if settings.cookie_secret is not None:
        return settings.cookie_secret.get_secret_value()
    # Decision 14: never a predictable constant. The builder runs once per deploy and every replica gets this.
    log.warning(
        "finsec-serve: no cookie_secret configured; generated one for this deployment. "
        "Sessions will not survive a redeploy; set cookie_secret (or FINSEC_COOKIE_SECRET) to keep them."
    )
    return secrets.token_urlsafe(32)


def ingress_application(settings: Settings, **deployment_options: Any) -> Application:
    ingress = FinsecIngress.options(**deployment_options) if deployment_options else FinsecIngress
    return ingress.bind(settings, cookie_secret(settings))


def build_app(args: dict[str, Any]) -> Application:
    return ingress_application(Settings(**(args or {})))
