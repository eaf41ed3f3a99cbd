"""How bench/serve_rollouts.py reads latency at concurrency 1: differences within each round, so the machine's
drift between rounds (2x here at concurrency 1) cancels instead of deciding a target."""

from __future__ import annotations

import pytest

from tests import bench_modules

serve_rollouts = bench_modules.load("serve_rollouts")


def test_a_route_is_read_against_submit_final_result_of_its_own_round():
    # A fast round and two slow ones: every round has the seed 0.5 ms over submit, whatever the round's speed.
    # Across rounds (the median seed against the median submit) it would read 1.5 ms.
    rounds = [{"submit_final_result": 1.0, "seed_session": 1.5}, {"submit_final_result": 3.0, "seed_session": 3.5},
              {"submit_final_result": 0.9, "seed_session": 1.4}]
    level = {"p50_ms": rounds[1], "rounds_p50_ms": rounds}
    assert serve_rollouts.over_submit(level) == {"seed_session": pytest.approx(0.5)}
    # a report from before the rounds were kept reads its one round
    assert serve_rollouts.over_submit({"p50_ms": rounds[1]}) == {"seed_session": pytest.approx(0.5)}
