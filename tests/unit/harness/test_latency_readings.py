"""How bench/serve_rollouts.py reads its rounds (harness/rollout_report.py): latency at concurrency 1 as differences
within each round, and the scaling table's ratios within each round, so the machine's drift between rounds (2x here
at concurrency 1) cancels instead of deciding a target."""

from __future__ import annotations

import pytest

from harness import rollout_report as serve_rollouts


def test_a_route_is_read_against_submit_final_result_of_its_own_round():
    # A fast round and two slow ones: every round has the seed 0.5 ms over submit, whatever the round's speed.
    # Across rounds (the median seed against the median submit) it would read 1.5 ms.
    rounds = [
        {"submit_final_result": 1.0, "seed_session": 1.5},
        {"submit_final_result": 3.0, "seed_session": 3.5},
        {"submit_final_result": 0.9, "seed_session": 1.4},
    ]
    level = {"p50_ms": rounds[1], "rounds_p50_ms": rounds}
    assert serve_rollouts.over_submit(level) == {"seed_session": pytest.approx(0.5)}
    # a report from before the rounds were kept reads its one round
    assert serve_rollouts.over_submit({"p50_ms": rounds[1]}) == {"seed_session": pytest.approx(0.5)}


def scaling_row(round_: int, shards: int, ms: float) -> dict:
    return {
        "round": round_,
        "config": "serve-haproxy",
        "replicas": 2,
        "shards": shards,
        "rollouts_per_s": 100.0,
        "idle_cpu_share": 0.1,
        "operations_per_shard_call": 1.0,
        "cpu_ms_per_rollout": {"ingress replicas": ms},
    }


def test_the_scaling_table_takes_each_ratio_within_its_round():
    # A slow round: both cells cost twice as much. Within each round 16 shards cost 1.5x the 2 x 2; against the
    # median 2 x 2 (8 ms) the slow round's 24 ms would read 3.0x.
    rows = [
        scaling_row(1, 2, 8.0),
        scaling_row(1, 16, 12.0),
        scaling_row(2, 2, 16.0),
        scaling_row(2, 16, 24.0),
        scaling_row(3, 2, 7.0),
        scaling_row(3, 16, 10.5),
    ]
    table = serve_rollouts.render_scaling(
        {"machine": "test", "seconds": 12, "concurrency": 64, "rounds": 3, "rows": rows}
    )
    line = next(line for line in table.splitlines() if line.startswith("| serve-haproxy | 2 | 16 |"))
    assert "| 12.0 (10.5-24.0); 1.50x (1.50-1.50x) |" in line
    assert "--rounds 3" in table
