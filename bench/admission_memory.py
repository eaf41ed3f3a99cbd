"""What a request waiting for a place costs the server's memory: the figure `admission_waiting_bytes` divides by
(deployments/http/admission.py, REQUEST_OVERHEAD_BYTES).

    .venv/bin/python bench/admission_memory.py [--waiting 1000,4000] [--configs inprocess,serve]

Each configuration starts as users start it (`finsec serve --in-process`, or `finsec serve` with one replica) from
configs/serve.yaml with one place (`admission_running: 1`) and a long wait. A parse_html_page of a filing from
harness/stalling_edgar.py holds that place; then N small requests (sec_filing_search, each on its own connection,
from this process) wait for it. The cost per waiting request is the resident memory of the process that holds them
(the one process, or the replica), once it stops growing, less the same process with the place held and none
waiting, over N. Then the filing is released and every request must be answered 200. Writes
bench/results/admission_memory.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import FinsecServe, machine, table, write_report  # noqa: E402
from serve_rollouts import _cmdline, _rss_kb, _tree  # noqa: E402

from deployments.http.admission import REQUEST_OVERHEAD_BYTES  # noqa: E402
from harness.bodies import episode_seed, new_session_id  # noqa: E402
from harness.stalling_edgar import FILING, StallingEdgar, settings_for, stalling_edgar  # noqa: E402


def config_file(folder: Path, edgar: StallingEdgar) -> Path:
    document = yaml.safe_load((ROOT / "configs/serve.yaml").read_text())
    app = document["applications"][0]
    app["args"] = {**app["args"], **settings_for(edgar), "admission_running": 1, "admission_wait_seconds": 600}
    app["deployments"][0]["num_replicas"] = 1
    path = folder / "serve.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class App:
    def __init__(self, config: str, path: Path):
        self.server = FinsecServe([str(path), *(["--in-process"] if config == "inprocess" else [])])
        self.url = self.server.url
        self.config = config

    def holder_kb(self) -> int:
        """The resident memory of the process that holds waiting requests: the one process, or the replica."""
        pids = _tree(self.server.process.pid)
        if self.config != "inprocess":
            pids = [pid for pid in pids if "FinsecIngress" in _cmdline(pid)]
        return sum(_rss_kb(pid) for pid in pids)

    def stop(self) -> None:
        self.server.stop()


def settled_kb(read_kb: Callable[[], int], quiet_seconds: float = 3.0) -> int:
    """The memory `read_kb` reports once it has not grown for `quiet_seconds`."""
    last, since = read_kb(), time.monotonic()
    while time.monotonic() - since < quiet_seconds:
        time.sleep(0.5)
        now = read_kb()
        if now > last * 1.002:
            last, since = now, time.monotonic()
    return last


async def measure(app: App, edgar: StallingEdgar, waiting: int) -> dict:
    async with httpx.AsyncClient(base_url=app.url, timeout=900) as client:
        seeded = await client.post("/seed_session", json=episode_seed(new_session_id()))
        cookies = dict(seeded.cookies)
        edgar.released.clear()
        edgar.waiting = 0
        fresh = FILING.replace(".htm", f"-{waiting}.htm")  # a filing not parsed yet: it must reach EDGAR
        held = asyncio.create_task(client.post("/parse_html_page", json={"url": fresh, "key": "f"}, cookies=cookies))
        while edgar.waiting < 1:
            await asyncio.sleep(0.05)
        at_rest = await asyncio.to_thread(settled_kb, app.holder_kb)
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(
            app.url, connector=connector, timeout=aiohttp.ClientTimeout(total=900)
        ) as session:

            async def one() -> int:
                async with session.post("/sec_filing_search", json={"ticker": "EXM"}) as response:
                    await response.read()
                    return response.status

            sent = [asyncio.create_task(one()) for _ in range(waiting)]
            busy = await asyncio.to_thread(settled_kb, app.holder_kb)
            edgar.released.set()
            statuses = await asyncio.gather(*sent)
        await held
    return {
        "waiting": waiting,
        "at_rest_mb": at_rest / 1024,
        "busy_mb": busy / 1024,
        "bytes_each": 1024 * (busy - at_rest) / waiting,
        "answered_200": statuses.count(200),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="inprocess,serve")
    parser.add_argument("--waiting", default="1000,4000", help="requests left waiting, one count a run")
    parser.add_argument("--out", default="admission_memory")
    options = parser.parse_args()
    rows = []
    with stalling_edgar() as edgar, tempfile.TemporaryDirectory() as folder:
        path = config_file(Path(folder), edgar)
        for config in options.configs.split(","):
            app = App(config, path)
            try:
                for waiting in (int(n) for n in options.waiting.split(",")):
                    row = {"config": config, **asyncio.run(measure(app, edgar, waiting))}
                    print(row, flush=True)
                    rows.append(row)
            finally:
                app.stop()
    header = [
        "configuration",
        "waiting",
        "holder at rest MB",
        "holder with them waiting MB",
        "bytes each",
        "answered 200",
    ]
    body = [
        [
            r["config"],
            f"{r['waiting']:,}",
            f"{r['at_rest_mb']:.0f}",
            f"{r['busy_mb']:.0f}",
            f"{r['bytes_each']:,.0f}",
            f"{r['answered_200']:,}",
        ]
        for r in rows
    ]
    most = max(r["bytes_each"] for r in rows)
    write_report(
        f"{options.out}.md",
        "\n".join(
            [
                "# What a request waiting for a place costs",
                "",
                f"{machine()}. `.venv/bin/python bench/admission_memory.py {' '.join(sys.argv[1:])}`. One place, held by a "
                "parse waiting on a stalling EDGAR; N sec_filing_search requests wait for it, each on its own connection. "
                "The holder is the process that holds them (the one process, or the Serve replica); its resident memory "
                "once settled, less the same with none waiting, over N.",
                "",
                table(header, body),
                "",
                f"The most per waiting request: {most:,.0f} bytes; admission counts {REQUEST_OVERHEAD_BYTES:,} for each "
                "besides its body (REQUEST_OVERHEAD_BYTES).",
            ]
        ),
    )


if __name__ == "__main__":
    main()
