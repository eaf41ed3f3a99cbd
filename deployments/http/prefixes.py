"""The path a request names inside the app, wherever the app is mounted, and NeMo Gym's rollout prefix:
`/ng-rollout/<rollout_id>/<route>` is the same request as `/<route>` (contract §A.0), so
`/finsec/ng-rollout/r1/verify` is `/finsec/verify` at route prefix /finsec.

Serve keeps a non-root `route_prefix` in `scope["path"]` and names it in `scope["root_path"]` (its proxy and,
behind HAProxy, the replica's own server do; ray/serve/_private/proxy.py, replica.py), as any ASGI server does
for a `--root-path`. Starlette routes on the path relative to the root path (starlette/_utils.py
`get_route_path`), so every middleware that matches a path must use the same relative path here, or it is
silently off under a prefix while the routes still answer.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from finsec.contract import ROLLOUT_ID

__all__ = ["mount_path", "RolloutPrefixMiddleware", "route_path", "with_route_path"]


def route_path(scope: Scope) -> str:
    """`scope["path"]` without the root path, exactly as Starlette's router strips it (a path outside the root
    path is taken as it is; the root path itself is "")."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


def mount_path(scope: Scope) -> str:
    """Where the app is mounted in this request's URL: the root path the route path was taken from, or "/"."""
    path = scope["path"]
    return path[: len(path) - len(route_path(scope))] or "/"


def with_route_path(scope: Scope, route: str) -> Scope:
    """A copy of `scope` naming `route` under the same mount (so the router strips the root path as before)."""
    mount = mount_path(scope).rstrip("/")
    path = mount + route
    return {**scope, "path": path, "raw_path": path.encode()}


_PREFIX = re.compile(rf"^/ng-rollout/({ROLLOUT_ID})(/.*)$")


class RolloutPrefixMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            match = _PREFIX.match(route_path(scope))
            if match:
                scope = with_route_path(scope, match.group(2))
        await self.app(scope, receive, send)
