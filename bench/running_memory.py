"""What requests holding a place cost the server's memory at their worst: N parses of distinct large real filings
admitted at once (`admission_running: N`), so the default number of places can be chosen with its memory known.

    .venv/bin/python bench/running_memory.py [--running 32,128,512] [--configs inprocess,serve]

Each configuration starts as users start it (`finsec serve --in-process`, or `finsec serve` with one replica) from
configs/serve.yaml, reading filings from a mirror folder (`corpus_dir`) of N copies of the real filings of
../shared/data/edgar-real, each under its own accession (a URL parsed once per process, so N copies are N parses).
A filing is read from disk at once, unlike live EDGAR's 10 requests a second, so every parse reaches the parser
together: the worst a replica can be asked to hold. N sessions are seeded, then N parse_html_page requests sent at
once, each on its own connection. The holder (the one process, or the replica) is sampled every 0.1 s; the peak
less its memory before, over N, is what a running parse costs. Every parse must be answered 200. Writes
bench/results/running_memory.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import FinsecServe, machine, real_filings, table, write_report  # noqa: E402
from admission_memory import settled_kb  # noqa: E402
from serve_rollouts import _cmdline, _rss_kb, _tree  # noqa: E402

from harness.bodies import episode_seed, new_session_id  # noqa: E402
from harness.cookies import cookie_header, take_cookies  # noqa: E402
from harness.real_filings import EDGAR_REAL  # noqa: E402


def mirror(folder: Path, copies: int) -> list[str]:
    """`copies` filings under `folder` in the sec.gov layout, the real ones in turn, largest first; their URLs."""
    filings = sorted(real_filings(), key=lambda f: -f.path.stat().st_size)
    for part in ("files", "submissions"):  # the company registry a mirror needs
        shutil.copytree(EDGAR_REAL / part, folder / part)
    urls = []
    for n in range(copies):
        filing = filings[n % len(filings)]
        cik, document = filing.url_path.split("/")[3], filing.url_path.split("/")[5]
        path = Path("Archives/edgar/data", cik, f"{9_000_000_000 + n:010d}26{n:06d}", document)
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(filing.path, folder / path)
        urls.append(f"https://www.sec.gov/{path}")
    return urls


def config_file(folder: Path, corpus: Path, running: int) -> Path:
    document = yaml.safe_load((ROOT / "configs/serve.yaml").read_text())
    app = document["applications"][0]
    app["args"] = {**app["args"], "corpus_dir": str(corpus), "admission_running": running}
    app["deployments"][0]["num_replicas"] = 1
    path = folder / f"serve-{running}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class Peak:
    """The most a set of processes held, sampled every 0.1 s in a thread until `stop`."""

    def __init__(self, pids: list[int]):
        self.pids, self.kb = pids, 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stopped.wait(0.1):
            self.kb = max(self.kb, sum(_rss_kb(pid) for pid in self.pids))

    def stop(self) -> int:
        self._stopped.set()
        self._thread.join()
        return self.kb


async def measure(config: str, path: Path, urls: list[str]) -> dict:
    server = FinsecServe([str(path), *(["--in-process"] if config == "inprocess" else [])])
    try:
        everything = _tree(server.process.pid)
        holder = everything if config == "inprocess" else [p for p in everything if "FinsecIngress" in _cmdline(p)]
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=1800)
        async with aiohttp.ClientSession(server.url, connector=connector, timeout=timeout) as session:
            jars: list[dict[str, str]] = []
            for _ in urls:
                jar: dict[str, str] = {}
                async with session.post("/seed_session", json=episode_seed(new_session_id())) as response:
                    assert response.status == 200, await response.text()
                    take_cookies(response.headers.getall("Set-Cookie", []), jar)
                jars.append(jar)
            before = await asyncio.to_thread(settled_kb, lambda: sum(_rss_kb(p) for p in holder))
            before_all = sum(_rss_kb(p) for p in everything)
            peak, peak_all = Peak(holder), Peak(everything)

            async def parse(url: str, jar: dict[str, str]) -> int:
                body = {"url": url, "key": "f"}
                async with session.post("/parse_html_page", json=body, headers=cookie_header(jar)) as response:
                    await response.read()
                    return response.status

            began = time.monotonic()
            statuses = await asyncio.gather(*(parse(u, j) for u, j in zip(urls, jars, strict=True)))
            seconds = time.monotonic() - began
            most, most_all = peak.stop(), peak_all.stop()
    finally:
        server.stop()
    return {
        "config": config,
        "running": len(urls),
        "before_mb": before / 1024,
        "peak_mb": most / 1024,
        "bytes_each": 1024 * (most - before) / len(urls),
        "all_before_mb": before_all / 1024,
        "all_peak_mb": most_all / 1024,
        "seconds": seconds,
        "answered_200": statuses.count(200),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="inprocess,serve")
    parser.add_argument("--running", default="32,128,512", help="places, and parses sent at once; one count a run")
    parser.add_argument("--out", default="running_memory")
    options = parser.parse_args()
    rows: list[dict] = []
    counts = [int(n) for n in options.running.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus"
        urls = mirror(corpus, max(counts))
        for running in counts:
            path = config_file(Path(folder), corpus, running)
            for config in options.configs.split(","):
                row = asyncio.run(measure(config, path, urls[:running]))
                print(json.dumps(row), flush=True)
                rows.append(row)
    header = ["configuration", "places (parses at once)", "holder before MB", "holder peak MB", "MB each parse",
              "all processes before, peak MB", "seconds", "answered 200"]  # fmt: skip
    body = [
        [
            r["config"],
            f"{r['running']:,}",
            f"{r['before_mb']:,.0f}",
            f"{r['peak_mb']:,.0f}",
            f"{r['bytes_each'] / 1e6:.2f}",
            f"{r['all_before_mb']:,.0f}, {r['all_peak_mb']:,.0f}",
            f"{r['seconds']:.1f}",
            f"{r['answered_200']:,}",
        ]
        for r in rows
    ]
    sizes = sorted(f.path.stat().st_size for f in real_filings())
    write_report(
        f"{options.out}.md",
        "\n".join(
            [
                "# What parses holding a place cost, at their worst",
                "",
                f"{machine()}. `.venv/bin/python bench/running_memory.py {' '.join(sys.argv[1:])}`. N distinct copies "
                f"of the {len(sizes)} real filings ({sizes[0] / 1e6:.1f}-{sizes[-1] / 1e6:.1f} MB of HTML each, the "
                "largest first), from a mirror folder, parsed at once with N places; one replica. The holder is the "
                "one process or the replica; MB each parse is its peak less its memory before, over N.",
                "",
                table(header, body),
            ]
        ),
    )
    write_report(f"{options.out}.json", json.dumps({"command": sys.argv, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
