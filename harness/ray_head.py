"""A second, private Ray cluster for tests that kill a whole cluster (`ray start --head` on loopback, its own
temp folder and ports) and `finsec serve --address` on it. Its processes are found by PID (command lines that
name its folder or its GCS port, and their children), so killing it never touches another cluster here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from deployments.local import LOCAL_RAY_ENV
from finsec.net.ports import free_port

BIN = Path(sys.executable).parent


class RayHead:
    def __init__(self, env: dict[str, str] | None = None):
        self.folder = tempfile.mkdtemp(prefix="finsec-head-")
        self.gcs_port, self.client_port = free_port(), free_port()
        # Not the test session's cluster settings: its address, nor its HAProxy and that HAProxy's ports.
        inherited = {
            k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and "HAPROXY" not in k and "HA_PROXY" not in k
        }
        self.env = {**inherited, **LOCAL_RAY_ENV, **(env or {})}
        self.server: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    def start(self) -> None:
        subprocess.run(
            [
                str(BIN / "ray"),
                "start",
                "--head",
                f"--port={self.gcs_port}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={self.folder}",
                f"--ray-client-server-port={self.client_port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=120,
        )

    def serve(self, config: Path, url: str, timeout: float = 180) -> None:
        """`finsec serve CONFIG --address` this cluster, as an operator runs it; returns once `url` answers."""
        log = Path(self.folder) / "finsec-serve.log"
        with log.open("ab") as out:
            self.server = subprocess.Popen(
                [str(BIN / "finsec"), "serve", str(config), "--address", self.address],
                env={**self.env, "PYTHONUNBUFFERED": "1"},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"finsec serve did not come up at {url}:\n{tail}")
            time.sleep(0.5)

    def pids(self) -> list[int]:
        marks = (self.folder.encode(), f":{self.gcs_port}".encode())
        parents: dict[int, int] = {}
        found: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes()
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if any(mark in argv for mark in marks):
                found.add(int(entry.name))
        if self.server is not None and self.server.poll() is None:
            found.add(self.server.pid)
        grew = True
        while grew:  # workers and agents are children of the raylet
            more = {pid for pid, parent in parents.items() if parent in found} - found
            found |= more
            grew = bool(more)
        return sorted(found - {os.getpid()})

    def kill_all(self) -> int:
        """SIGKILL every process of this cluster at once, as `ray stop --force` does, but only this cluster's."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.server is not None:
            self.server.wait(timeout=30)
            self.server = None
        deadline = time.monotonic() + 30
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        return len(pids)
