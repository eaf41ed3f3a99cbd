"""Verified tasks from the real filings of ../shared/data/edgar-real: what `finsec tasks build` makes of each filing
(tasks by kind, facts whose tagged and printed readings agree, tasks dropped and why) and how long a filing takes.

    .venv/bin/python bench/task_supply.py      # ~10 s; writes bench/results/task_supply.{md,json}
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _common import DATA, RESULTS, machine, write_report

COMMAND = ["tasks", "build", "--corpus", str(DATA), "--hold-out", "NVDA,TSLA"]


def main() -> None:
    if not (DATA / "MANIFEST.json").is_file():
        print(f"no real filings at {DATA}: nothing to build")
        return
    from finsec_client.cli import main as finsec

    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter(), time.process_time()
        if finsec([*COMMAND, "--out", out]) != 0:
            sys.exit("the build failed")
        seconds, cpu = time.perf_counter() - began[0], time.process_time() - began[1]
        report = json.loads((Path(out) / "report.json").read_text())
        table = (Path(out) / "report.md").read_text()
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "seconds": seconds,
        "cpu": cpu,
        **report,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "task_supply.json").write_text(json.dumps(results, indent=1))
    filings = len(report["filings"])
    write_report(
        "task_supply.md",
        "\n".join(
            [
                "# Verified tasks from real filings",
                "",
                f"{results['machine']}; {results['ran_at']}. Produced by `.venv/bin/python bench/task_supply.py`, which runs "
                f"`finsec {' '.join(COMMAND).replace(str(DATA), '../shared/data/edgar-real')} --out DIR` over the eight "
                "filings. A task is kept only when each fact it rests on reads the same as tagged (scale, sign) and as "
                "printed where it sits (the table's caption, parentheses, a scale word in a sentence), and is printed "
                "somewhere a scale is stated; duplicates of a fact must agree to the coarser precision.",
                "",
                table,
                f"Built in {seconds:.1f} s ({cpu:.1f} s of CPU): {seconds / filings:.2f} s a filing, in one process.",
                "",
            ]
        ),
    )
    print(table)


if __name__ == "__main__":
    main()
