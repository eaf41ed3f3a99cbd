"""Building tasks on Ray: filings per second per core, and the cost per filing as the corpus grows.

    .venv/bin/python bench/task_build_scale.py                    # 250 / 500 / 1,000 filings, 1 and 2 workers
    .venv/bin/python bench/task_build_scale.py --companies 25,50 --rounds 1 --out task_build_scale_quick

The corpus is generated (finsec/corpus/annual_reports.py: each company four 10-Ks with full inline XBRL), read into
memory once, and built as `finsec tasks build --address local --workers W` builds it (finsec/taskgen/parallel.py):
a new local Ray cluster of W CPUs per run, warmed by building 2W filings first. A round runs every size on every
cluster size, in alternating order, and the in-process build (one filing at a time, no Ray) beside them as the
baseline. Timed: from the first filing handed out to the last result taken, the driver's CPU reported with it
(it reads results and hands out filings while the workers build). Across-filing kinds (comparisons, growth) are
the driver's afterwards and are not timed. Writes bench/results/<out>.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from _common import RESULTS, machine, write_report  # noqa: E402

from finsec.corpus.annual_reports import annual_reports, render  # noqa: E402
from finsec.taskgen.build import Source  # noqa: E402
from finsec.taskgen.parallel import Builds, in_order, local_builds, ray_builds  # noqa: E402

YEARS = 4


def corpus(companies: int) -> list[tuple[Source, str]]:
    return [
        (
            Source(f"{f.issuer.cik:010d}", f.issuer.ticker, f.form, f.accession, f.url),
            render(f, company),
        )
        for f, company in annual_reports(companies, YEARS)
    ]


async def build_all(filings: list[tuple[Source, str]], builds: Builds) -> tuple[float, float, int]:
    """(seconds, driver CPU seconds, tasks) building these filings."""

    async def read():
        for row in filings:
            yield row

    tasks, began, cpu = 0, time.perf_counter(), time.process_time()
    async for _, _, built in in_order(read(), builds):
        tasks += len(built.tasks) if built else 0
    return time.perf_counter() - began, time.process_time() - cpu, tasks


def run(builds: Builds, sizes: list[list[tuple[Source, str]]], label: str, workers: int) -> list[dict]:
    out = []
    asyncio.run(build_all(sizes[0][: 2 * workers], builds))  # workers import finsec and warm up
    for filings in sizes:
        seconds, driver_cpu, tasks = asyncio.run(build_all(filings, builds))
        row = {"run": label, "workers": workers, "filings": len(filings), "seconds": seconds, "tasks": tasks}
        row |= {"filings_per_s": len(filings) / seconds, "driver_cpu_s": driver_cpu}
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--companies", default="63,125,250", help="corpus sizes in companies (x4 filings)")
    parser.add_argument("--workers", default="1,2", help="Ray cluster sizes in CPUs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="task_build_scale")
    options = parser.parse_args()
    largest = corpus(max(int(c) for c in options.companies.split(",")))
    sizes = [largest[: int(c) * YEARS] for c in options.companies.split(",")]
    workers = [int(w) for w in options.workers.split(",")]
    rows = []
    for round_ in range(options.rounds):
        order = workers if round_ % 2 == 0 else workers[::-1]
        ordered = sizes if round_ % 2 == 0 else sizes[::-1]
        for w in order:
            builds = ray_builds("local", w)
            try:
                rows += [{**r, "round": round_ + 1} for r in run(builds, ordered, f"ray x{w}", w)]
            finally:
                builds.close()
        rows += [{**r, "round": round_ + 1} for r in run(local_builds(), ordered, "in process", 1)]
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["bench/task_build_scale.py", *sys.argv[1:]]),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render_report(results, workers))


def render_report(results: dict, workers: list[int]) -> str:
    rows = results["rows"]

    def rate(run: str, filings: int) -> float:
        return statistics.median(r["filings_per_s"] for r in rows if r["run"] == run and r["filings"] == filings)

    sizes = sorted({r["filings"] for r in rows})
    runs = [f"ray x{w}" for w in workers] + ["in process"]
    lines = [
        "# Building tasks on Ray: filings per second per core, and the cost per filing as the corpus grows",
        "",
        f"{results['machine']}. `.venv/bin/python {results['command']}`; medians of "
        f"{len({r['round'] for r in rows})} interleaved rounds.",
        "",
        "| run | " + " | ".join(f"{n:,} filings: per s (ms a filing a core)" for n in sizes) + " | driver CPU |",
        "|---|" + "---|" * (len(sizes) + 1),
    ]
    for run in runs:
        cores = int(run.split("x")[1]) if run.startswith("ray") else 1
        cells = [f"{rate(run, n):.1f} ({1e3 * cores / rate(run, n):.1f})" for n in sizes]
        cpu = sum(r["driver_cpu_s"] for r in rows if r["run"] == run) / sum(
            r["seconds"] for r in rows if r["run"] == run
        )
        lines.append(f"| {run} | " + " | ".join(cells) + f" | {100 * cpu:.0f}% of a core |")
    if len(workers) > 1:
        low, high = workers[0], workers[-1]
        lines += ["", f"Scaling from {low} to {high} workers (1.00 is linear):", ""]
        for n in sizes:
            ratio = rate(f"ray x{high}", n) / rate(f"ray x{low}", n) / (high / low)
            lines.append(f"- {n:,} filings: {ratio:.2f}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
