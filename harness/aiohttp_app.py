"""An aiohttp app on a free loopback port, for tests that need a real server that misbehaves on purpose."""

from __future__ import annotations

from aiohttp import web


async def start(app: web.Application) -> tuple[web.AppRunner, str]:
    """The app served on 127.0.0.1: its runner (to `cleanup`) and its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
