"""`finsec serve --in-process` as a user starts it, in a child process on a loopback port: for the tests that need
the command itself (its signals, its settings from the environment, a browser against it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["serving", "stopped"]

ROOT = Path(__file__).resolve().parents[1]


def serving(port: int, env: dict[str, str] | None = None, config: Path | None = None) -> subprocess.Popen:
    """`finsec serve --in-process` on `port` (from `config`, else the packaged one), once it says it is up."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deployments.cli",
            "serve",
            *([str(config)] if config else []),
            "--in-process",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    said = []
    while not (line := server.stdout.readline()).startswith("finsec-serve is up at"):  # log lines come first
        said.append(line)
        assert line, "".join(said)
    assert line.startswith(f"finsec-serve is up at http://127.0.0.1:{port}"), line
    return server


def stopped(server: subprocess.Popen) -> None:
    """SIGTERM, which the command must exit 0 on."""
    server.send_signal(signal.SIGTERM)
    assert server.wait(30) == 0
