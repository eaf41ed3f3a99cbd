"""`/ng-rollout/<rollout_id>/<route>` is the same request as `/<route>` (contract §A.0)."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from .contract import ROLLOUT_ID

_PREFIX = re.compile(rf"^/ng-rollout/({ROLLOUT_ID})(/.*)$")


class RolloutPrefixMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            match = _PREFIX.match(scope["path"])
            if match:
                path = match.group(2)
                scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)
