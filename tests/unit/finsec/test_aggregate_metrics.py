"""/aggregate_metrics is total (contract §D.6): any verify rows give a result that renders as strict JSON."""

from __future__ import annotations

import json
import random
import statistics

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from finsec.aggregate_metrics import aggregate_metrics
from finsec.contract import AggregateMetricsRequest


def strict_json(result) -> dict:
    return json.loads(json.dumps(result, allow_nan=False))  # what Starlette's JSONResponse requires


def groups(result) -> dict[int, dict]:
    return {group["_ng_task_index"]: group for group in result["group_level_metrics"]}


def test_ordinary_rows_keep_the_usual_statistics() -> None:
    rewards = [1.0, 0.0, 0.5, 0.25]
    rows = [
        {
            "reward": r,
            "_ng_task_index": i % 2,
            "_ng_rollout_index": i // 2,
            "response": {"usage": {"input_tokens": 10 * i}},
        }
        for i, r in enumerate(rewards)
    ]
    result = strict_json(aggregate_metrics(rows))
    agent = result["agent_metrics"]
    assert agent["mean/reward"] == statistics.fmean(rewards) and agent["median/reward"] == statistics.median(rewards)
    assert agent["std/reward"] == statistics.pstdev(rewards) and agent["num_repeats"] == 2
    assert agent["mean/input_tokens"] == 15.0 and set(groups(result)) == {0, 1}


@pytest.mark.parametrize("bad", ["3", 1e308, 2.0, {"a": 1}, [1], True, False, None, float("nan"), float("inf")])
def test_an_index_that_is_not_an_int_counts_as_zero(bad) -> None:
    rows = [{"reward": 1.0, "_ng_task_index": bad, "_ng_rollout_index": bad}, {"reward": 0.0, "_ng_task_index": 1}]
    result = strict_json(aggregate_metrics(rows))
    assert set(groups(result)) == {0, 1} and groups(result)[0]["mean/reward"] == 1.0
    assert [r["_ng_rollout_index"] for r in result["repeat_level_metrics"]] == [0]


def test_a_bool_index_is_not_task_one() -> None:
    rows = [{"reward": 1.0, "_ng_task_index": True}, {"reward": 0.0, "_ng_task_index": 1}]
    assert groups(strict_json(aggregate_metrics(rows)))[1]["mean/reward"] == 0.0


def test_rewards_at_the_edge_of_float_range() -> None:
    result = strict_json(aggregate_metrics([{"reward": 1e308}, {"reward": 1e308}]))["agent_metrics"]
    assert result["mean/reward"] == 1e308 and result["median/reward"] == 1e308 and result["std/reward"] == 0.0
    result = strict_json(aggregate_metrics([{"reward": 1.7e308}, {"reward": -1.7e308}]))["agent_metrics"]
    assert result["mean/reward"] == 0.0 and result["median/reward"] == 0.0 and result["std/reward"] == 1.7e308
    result = strict_json(aggregate_metrics([{"reward": 1.7e308}, {"reward": 1.7e308}, {"reward": -1e308}]))
    assert result["agent_metrics"]["max/reward"] == 1.7e308


def test_non_finite_and_unrepresentable_values_are_left_out() -> None:
    rows = [
        {"reward": float("inf"), "x": float("nan")},
        {"reward": 10**400},
        {"reward": 1.0, "x": 2},
        {"reward": 0.0, "response": {"usage": {"input_tokens": float("-inf"), "output_tokens": 10**400}}},
    ]
    agent = strict_json(aggregate_metrics(rows))["agent_metrics"]
    assert agent["mean/reward"] == 0.5 and agent["mean/x"] == 2.0
    assert not any("input_tokens" in k or "output_tokens" in k for k in agent)


def test_the_echoed_sample_has_no_nan_or_infinity() -> None:
    row = {"reward": 1.0, "note": {"weird": [float("nan"), float("inf"), 1.5]}, "_ng_task_index": 0}
    sample = strict_json(aggregate_metrics([row]))["group_level_metrics"][0]["sample"]
    assert sample["note"]["weird"] == [None, None, 1.5] and sample["reward"] == 1.0


def test_perf_summary_survives_overflow() -> None:
    rows = [
        {"reward": 1.0, "ng_perf": {"seconds": 1e308}},
        {"reward": 1.0, "ng_perf": {"seconds": 1e308}},
        {"reward": 1.0, "ng_perf": "not a dict"},
    ]
    perf = strict_json(aggregate_metrics(rows))["perf_summary"]
    assert perf["rows"] == 2 and perf["mean/seconds"] == 1e308


def test_masking_and_empty_requests_unchanged() -> None:
    rows = [
        {"reward": 1.0, "_ng_task_index": 0},
        {"reward": 0.0, "mask_sample": True, "_ng_task_index": "1"},
        {"reward": 0.0, "mask_sample": True, "_ng_task_index": 2},
    ]
    result = strict_json(aggregate_metrics(rows))
    assert result["key_metrics"]["coverage/masked_rollouts"] == 2
    assert result["key_metrics"]["coverage/fully_masked_tasks"] == 1  # task "1" counts as task 0, which is measured
    assert aggregate_metrics([]) == {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
        "perf_summary": None,
        "repeat_level_metrics": [],
    }


HOSTILE = [
    0,
    1,
    -1,
    True,
    False,
    None,
    "",
    "x",
    "1",
    1e308,
    -1e308,
    1.7976931348623157e308,
    5e-324,
    float("inf"),
    float("-inf"),
    float("nan"),
    10**400,
    -(10**400),
    [],
    [1e308],
    {},
    {"usage": 1e308},
    {"usage": {"input_tokens": 1e308, "output_tokens": float("nan"), "total_tokens": "9"}},
]
KEYS = ["reward", "judge_rating", "_ng_task_index", "_ng_rollout_index", "mask_sample", "response", "ng_perf", "x"]


def test_random_hostile_rows_never_raise() -> None:
    rng = random.Random(20261201)
    for _ in range(300):
        rows = [
            {key: rng.choice(HOSTILE) for key in rng.sample(KEYS, rng.randrange(len(KEYS)))}
            for _ in range(rng.randrange(1, 6))
        ]
        strict_json(aggregate_metrics(rows))


def test_over_http_a_hostile_body_gets_200() -> None:
    app = FastAPI()

    @app.post("/aggregate_metrics")
    def route(body: AggregateMetricsRequest) -> dict:  # the shape of routes/sessions.py's route
        return aggregate_metrics(body.verify_responses)

    body = (
        '{"verify_responses": [{"reward": 1e400, "_ng_task_index": 1e308, "_ng_rollout_index": "a"},'
        ' {"reward": NaN, "judge_rating": 1e308, "_ng_task_index": {"a": 1}},'
        ' {"reward": 1e308, "judge_rating": 1e308, "_ng_task_index": true}]}'
    )
    with TestClient(app) as client:
        reply = client.post("/aggregate_metrics", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["agent_metrics"]["mean/judge_rating"] == 1e308


def test_the_grounded_share_counts_measured_rows_that_were_checked() -> None:
    """Null grounding (nothing to check) and masked rows are left out of the denominator; no checked row, no keys.
    Mutation: counting null as ungrounded, or masked rows, fails this."""
    rows = [
        {"reward": 1.0, "grounded": True},
        {"reward": 0.0, "grounded": False},
        {"reward": 1.0, "grounded": True},
        {"reward": 1.0, "grounded": None},
        {"reward": 0.0, "mask_sample": True, "grounded": False},
        {"reward": 1.0, "grounded": "yes"},
    ]
    result = strict_json(aggregate_metrics(rows))
    for block in ("agent_metrics", "key_metrics"):
        assert result[block]["grounding/checked_rollouts"] == 3
        assert result[block]["grounding/grounded_rate"] == 2 / 3
    assert "grounding/grounded_rate" not in aggregate_metrics([{"reward": 1.0, "grounded": None}])["agent_metrics"]
