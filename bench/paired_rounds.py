"""The shipped Serve app against an earlier commit's, in pairs run back to back: this machine drifts 25-40% within
minutes, so two configurations measured a round apart can differ by more than what separates them.

    .venv/bin/python bench/paired_rounds.py --before COMMIT --levels 64,256,1024 --rounds 4 --out NAME

Each round starts the app of this tree (`serve-haproxy`, bench/serve_rollouts.py) and the app of COMMIT
(`before-haproxy`) one after the other, the order reversed every other round; each warms, then runs whole rollouts
at the level for 20 s. It records rollouts/s, the server's CPU per rollout by process (the load generator left out)
and the operations each shard call carried (the shards' group commits). The ratio that counts is each pair's.
Writes bench/results/NAME.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import commit_tree, machine, table, write_report  # noqa: E402
from serve_rollouts import Server, steady, warm  # noqa: E402

CONFIGS = ("serve-haproxy", "before-haproxy")


def measure(config: str, root: Path, level: int, seconds: float) -> dict:
    server = Server(config, root)
    try:
        warm(server)
        return {"config": config, "level": level, **steady(server, level, seconds)}
    finally:
        server.stop()


def render(results: dict) -> str:
    rows, levels = results["rows"], sorted({r["level"] for r in results["rows"]})
    body = []
    for level in levels:
        pairs = {}
        for r in rows:
            if r["level"] == level:
                pairs.setdefault(r["round"], {})[r["config"]] = r
        ratios = [p["serve-haproxy"]["rollouts_per_s"] / p["before-haproxy"]["rollouts_per_s"] for p in pairs.values()]

        def cpu(config: str, p: dict = pairs) -> float:
            return statistics.median(sum(q[config]["cpu_ms_per_rollout"].values()) for q in p.values())

        def ops(config: str, p: dict = pairs) -> float:
            return statistics.median(q[config]["operations_per_shard_call"] for q in p.values())

        body.append(
            [
                f"{level:,}",
                ", ".join(
                    f"{p['serve-haproxy']['rollouts_per_s']:.0f} / {p['before-haproxy']['rollouts_per_s']:.0f}"
                    for _, p in sorted(pairs.items())
                ),
                ", ".join(f"{x:.2f}" for x in ratios),
                f"{statistics.median(ratios):.2f}x",
                f"{cpu('serve-haproxy'):.1f} / {cpu('before-haproxy'):.1f}",
                f"{ops('serve-haproxy'):.1f} / {ops('before-haproxy'):.1f}",
                str(sum(r["errors"] for r in rows if r["level"] == level)),
            ]
        )
    header = ["in flight", "rollouts/s by round (this tree / before)", "pair ratios", "median",
              "server CPU ms a rollout", "operations a shard call", "errors"]  # fmt: skip
    return "\n".join(
        [
            "# This tree's Serve app against an earlier commit's, in pairs run back to back",
            "",
            f"{results['machine']}. `.venv/bin/python bench/paired_rounds.py {' '.join(results['argv'])}`; the "
            f"commit before is {results['before']}. Each round runs the two apps one after the other (the order "
            "reversed every other round), 20 s of whole rollouts each after a warm-up; a ratio is this tree's "
            "rollouts/s over the commit's in the same round. CPU and operations are medians over rounds.",
            "",
            table(header, body),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the commit the other app runs")
    parser.add_argument("--levels", default="64,256,1024", help="rollouts in flight")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", default="paired_rounds")
    options = parser.parse_args()
    results = {"machine": machine(), "argv": sys.argv[1:], "before": options.before, "rows": []}
    with commit_tree(options.before) as before_root:
        cells = [("serve-haproxy", ROOT), ("before-haproxy", before_root)]
        for level in (int(n) for n in options.levels.split(",")):
            for n in range(options.rounds):
                for config, root in cells if n % 2 == 0 else cells[::-1]:
                    row = {"round": n + 1, **measure(config, root, level, options.seconds)}
                    print(json.dumps(row), flush=True)
                    results["rows"].append(row)
                    write_report(f"{options.out}.json", json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render(results))


if __name__ == "__main__":
    main()
