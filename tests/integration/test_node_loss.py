"""Lose a node (contract promises across a node failure): a three-node local cluster in its own process
(harness/fault_scenarios.py), state actors only on the two state nodes, rollouts running while one state node
holding shards is removed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.bodies import ROOT


@pytest.fixture(scope="module")
def summary() -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "harness.fault_scenarios", "node-loss", "--seconds", "10"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("SUMMARY ")]
    assert run.returncode == 0 and lines, run.stderr[-3000:]
    return json.loads(lines[-1][len("SUMMARY ") :])


def test_state_actors_sit_only_on_the_nodes_meant_for_them(summary):
    assert summary["placement"]["on_head"] == []  # shards, reaper, document store, limiter: off the head
    assert len(summary["placement"]["state_nodes"]) == 2  # spread over both state nodes


def test_shards_wait_for_every_state_node_and_take_an_equal_share_of_them(summary):
    """Told of two state nodes while one has joined, the app placed no shard until the second joined, then two of
    its four on each, and a StateNodeProxy replica on each (so Serve would run a proxy there on a real cluster)."""
    placement = summary["placement"]
    assert placement["shards_before_the_second_node"] == []
    assert placement["shards_per_state_node"] == [2, 2]
    assert placement["proxies_per_state_node"] == [1, 1]


def test_losing_a_node_loses_only_its_shards_sessions_loudly(summary):
    assert 0 < summary["expected_share"] < 1  # some shards were on the lost node, some were not
    # The node held open sessions (whether one of them got as far as a verify, or was past its verify and only
    # closing, depends on when the node went, so neither is asserted) and some were noticed.
    assert summary["exposed_at_the_fault"] >= 1 and summary["episodes_the_fault_reached"] >= 1
    assert summary["lost_scored_unmasked"] == 0  # not one of them scored as a measurement, whatever its reward
    assert summary["unmasked_wrong_rewards"] == 0  # no fault became a training signal
    assert summary["reached_but_not_exposed"] == 0  # sessions on other shards never noticed
    # every attempt counted, retried or not: no replica died, so not even HAProxy's page
    assert summary["server_errors_500"] == 0 and set(summary["statuses"]) <= {200, 404, 409, 503}
    assert summary["closed_ids_still_fenced"]
    assert summary["recovery_seconds"] is not None  # the lost shards came back on the other node and serve


def test_finsec_serve_deployed_it_and_its_stop_removes_the_apps_actors_not_the_cluster(summary):
    """`finsec serve CONFIG --address` on a running multi-node cluster; SIGTERM undeploys and removes the app's
    detached actors (they outlive `serve delete` otherwise), and leaves the cluster up."""
    assert summary["actors_left_after_stop"] == 0
    assert summary["cluster_up_after_stop"]


def test_serve_shutdown_removes_the_apps_detached_actors():
    """They are registered with Serve's controller, which kills registered actors on `serve shutdown`."""
    run = subprocess.run(
        [sys.executable, "-m", "harness.fault_scenarios", "serve-shutdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("SUMMARY ")]
    assert run.returncode == 0 and lines, run.stderr[-3000:]
    summary = json.loads(lines[-1][len("SUMMARY ") :])
    assert summary["actors_before"] >= 5 and summary["actors_after_serve_shutdown"] == 0
