"""`/ng-rollout/<rollout_id>/<route>` is the same request as `/<route>` (contract §A.0), wherever the app is
mounted: `/finsec/ng-rollout/r1/verify` is `/finsec/verify` at route prefix /finsec."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from .contract import ROLLOUT_ID
from .route_prefix import route_path, with_route_path

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
