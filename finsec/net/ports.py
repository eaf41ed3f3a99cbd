"""Free loopback ports for servers that bind them later (HAProxy's stats port, a test's Redis, Ray's GCS).

A port the kernel hands out for `bind(0)` comes from its ephemeral range, the same range every outgoing
connection's local port comes from: between picking it and the server's bind, any connection on the machine may
take it, and the server fails to start ("Address already in use"; HAProxy did, in a benchmark). So the port is
drawn below that range instead, where only a deliberate bind can land, and is checked free when picked.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["ephemeral_range", "free_port"]

_LOWEST = 20_000  # above the ports services usually take (8000, 8080, 8265, 6379, ...)
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()  # never the same port twice from one process


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default where it cannot be read)."""
    try:
        low, high = map(int, _RANGE_FILE.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32_768, 60_999


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now, outside the ephemeral range when there is room below it."""
    low, _ = ephemeral_range()
    for _ in range(200):
        port = random.randrange(_LOWEST, low) if low > _LOWEST + 1_000 else 0
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError(f"no free port found on {host}")
