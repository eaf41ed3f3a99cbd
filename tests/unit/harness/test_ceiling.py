"""harness/ceiling.py, the arithmetic the benchmark reports the per-core targets against: checked on figures whose
answers are known, and against the serve_floor report it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import ceiling, rollout_report


def test_a_free_floor_idle_and_client_let_two_cores_double_a_baseline_that_fills_its_core():
    assert ceiling.ceiling(
        app_ms=5.0, floor_ms=0.0, client_ms=0.0, idle_cores=0.0, cores=2, baseline_rate=200.0
    ) == pytest.approx(2.0)
    # a baseline held below its core's rate (by its client, say) is easier to reach: the ceiling rises
    assert ceiling.ceiling(5.0, 0.0, 0.0, 0.0, 2, baseline_rate=160.0) == pytest.approx(2.5)


def test_the_ceiling_is_where_the_serve_path_would_fill_the_machine():
    app, floor, client, idle, cores, baseline = 6.6, 1.5, 4.2, 0.2, 2, 142.0
    ratio = ceiling.ceiling(app, floor, client, idle, cores, baseline)
    rate = ratio * baseline  # rollouts/s
    assert rate * (app + floor + client) / 1000 + idle == pytest.approx(cores)
    # and at that rate the budget is exactly what the rollout costs with the app as cheap as the baseline's
    assert ceiling.budget_ms(ratio, baseline, client, cores) == pytest.approx(app + floor + idle * 1000 / rate)


def test_a_costlier_load_generator_leaves_the_server_less_budget():
    cheap = ceiling.budget_ms(0.8, 150.0, client_ms=3.0, cores=2)
    dear = ceiling.budget_ms(0.8, 150.0, client_ms=5.0, cores=2)
    assert cheap - dear == pytest.approx(2.0)


def test_serve_floor_is_read_over_uvicorn_per_rollout_for_the_matching_client(tmp_path: Path):
    def run(us: float, by: dict) -> dict:
        return {"server_cpu_us_per_request": us, "cpu_us_per_request_by_process": by}

    floor = tmp_path / "serve_floor.json"
    floor.write_text(
        json.dumps(
            {
                "runs": {
                    "uvicorn": [run(200, {}), run(210, {}), run(900, {})],
                    "serve": [run(0, {"ingress replicas": 400, "HAProxy": 100, "GCS": 50})] * 3,
                    "serve-no-disconnect-watch": [run(0, {"ingress replicas": 300, "HAProxy": 100})] * 3,
                }
            }
        )
    )
    # medians: uvicorn 210 us; replica + HAProxy 500 (the GCS is idle background, counted apart) and 400 us
    assert ceiling.serve_floor_ms(floor, "serve-haproxy") == pytest.approx(8 * 290 / 1000)
    assert ceiling.serve_floor_ms(floor, "redis-nowatch-haproxy") == pytest.approx(8 * 190 / 1000)
    assert ceiling.serve_floor_ms(tmp_path / "missing.json", "serve-haproxy") is None


def test_a_rendered_report_reads_the_cores_and_floor_its_run_recorded():
    # A run on 4 cores with a floor of 1.0 ms, rendered here (2 cores, another serve_floor.json): its own figures.
    level = {"requests_per_s": 800.0, "client_cpu_share": 0.25}  # 100 rollouts/s
    results = {
        "levels": [64],
        "cores": 4,
        "serve_floor_ms": {"nowatch-haproxy": 1.0},
        "configs": {
            "baseline": {"throughput": [level], "cpu_share_at_64": {"the script's server process": 0.5}},
            "nowatch-haproxy": {
                "throughput": [level],
                "cpu_share_at_64": {"ingress replicas": 0.75},
                "idle_cpu_share": 0.05,
            },
        },
    }
    row = rollout_report.ceiling_table(results)[-1]
    # 4 cores: the app 20 ms a rollout, the Serve path 30, idle 0.2 cores (2 ms), the client 10: (4 - 0.2) / 31 ms
    assert row.startswith("| nowatch-haproxy | 30.0 | 0.20, 2.0 | 1.0 | 7.0 | 10.0 | 1.23x |"), row
