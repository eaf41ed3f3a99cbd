"""The path a request names inside the app, wherever the app is mounted.

Serve keeps a non-root `route_prefix` in `scope["path"]` and names it in `scope["root_path"]` (its proxy and,
behind HAProxy, the replica's own server do; ray/serve/_private/proxy.py, replica.py), as any ASGI server does
for a `--root-path`. Starlette routes on the path relative to the root path (starlette/_utils.py
`get_route_path`), so every middleware that matches a path must use the same relative path here, or it is
silently off under a prefix while the routes still answer.
"""

from __future__ import annotations

from starlette.types import Scope


def route_path(scope: Scope) -> str:
    """`scope["path"]` without the root path, exactly as Starlette's router strips it (a path outside the root
    path is taken as it is; the root path itself is "")."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root):]
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
