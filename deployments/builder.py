"""The application builder that serve configs name: `import_path: deployments.builder:build_app`."""

from __future__ import annotations

import logging
from typing import Any

from ray.serve import Application

from deployments import serve_tuning
from deployments.http.admission import Admission
from deployments.ingress import FinsecIngress
from deployments.mark_store import begin_mark_store, cookie_secret
from deployments.settings import Settings
from deployments.state_nodes import state_node_proxies

log = logging.getLogger("ray.serve")


def ingress_application(settings: Settings, **deployment_options: Any) -> Application:
    """The app, its ingress deployment configured by `deployment_options` (a serve config's FinsecIngress section).
    Every request reaches a replica at once, where admission times its wait: Serve's own bound on the requests a
    replica holds is what admission may hold, unless the options say otherwise (`finsec check` says why not to)."""
    held = Admission.from_settings(settings).most_held()
    ingress = FinsecIngress.options(**{"max_ongoing_requests": held, **deployment_options})
    begin_mark_store(settings)
    return ingress.bind(settings, cookie_secret(settings), state_node_proxies(settings))


def build_app(args: dict[str, Any]) -> Application:
    if (untuned := serve_tuning.warning()) is not None:  # `serve run` without the environment, say
        log.warning(untuned)
    return ingress_application(Settings(**(args or {})))
