"""What the live page sums (deployments/observability): replicas' minutes of calls, latency and rewards, windows
that move with the clock, replicas that stop reporting, bounded session trails, and the event loop's lag."""

from __future__ import annotations

import asyncio
import time

from deployments.observability.hub import TelemetryHub
from deployments.observability.telemetry import BUCKETS_MS, LoopLag, ReplicaTelemetry, quantile_ms


class Clock:
    def __init__(self, now: float = 6_000_000.0):  # a minute's start
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_quantiles_are_bucket_edges_that_hold_the_rank():
    buckets = [0] * (len(BUCKETS_MS) + 1)
    buckets[4] = 98  # 1 ms
    buckets[10] = 2  # 8 ms
    assert quantile_ms(buckets, 0.5) == BUCKETS_MS[4] == 1.0
    assert quantile_ms(buckets, 0.99) == BUCKETS_MS[10] == 8.0
    assert quantile_ms([0] * len(buckets), 0.5) is None


def test_the_hub_sums_replicas_over_windows_that_move_with_the_clock():
    clock = Clock()
    hub = TelemetryHub(clock=clock)
    replicas = {name: ReplicaTelemetry(clock) for name in ("a", "b")}
    for name, replica in replicas.items():
        for _ in range(30):
            replica.called("/seed_session", 200, 1.0, "s-" + name)
        replica.called("/verify", 500, 300.0, None)
        replica.verified(1.0, masked=False)
        replica.verified(0.0, masked=True)
    clock.now += 30
    for name, replica in replicas.items():
        hub.push(name, replica.snapshot({"running": 1}), replica.take_trail())
    state = hub.state()
    assert state["rates"]["seeds"] == round(60 / 90, 3)  # 60 seeds over the minute before and the 30 s since
    assert state["routes"]["/seed_session"]["calls_5m"] == 60 and state["routes"]["/verify"]["failed_5m"] == 2
    assert state["routes"]["/verify"]["p99_ms_5m"] >= 300.0
    assert state["rewards"]["1m"] == {"scored": 2, "mean": 1.0, "masked": 2, "masked_share": 0.5}
    assert [r["replica"] for r in state["replicas"]] == ["a", "b"]
    clock.now += 6 * 60  # past 5 minutes: the route windows are empty; the 15-minute one still counts
    for name, replica in replicas.items():
        hub.push(name, replica.snapshot(), replica.take_trail())
    state = hub.state()
    assert state["routes"] == {} and state["rewards"]["5m"]["scored"] == 0 and state["rewards"]["15m"]["scored"] == 2
    clock.now += 31  # neither reported since: forgotten
    assert hub.state()["replicas"] == []


def test_a_reward_window_holds_what_came_just_before_a_minutes_turn():
    """A verify a second before the minute turns is still in the 1-minute window a second after it; a window of
    w minutes is the minute under way and the w before it."""
    clock = Clock(6_000_000.0 + 59)
    hub, replica = TelemetryHub(clock=clock), ReplicaTelemetry(clock)
    replica.verified(1.0, masked=False)

    def scored(window: str) -> int:
        hub.push("a", replica.snapshot(), replica.take_trail())
        return hub.state()["rewards"][window]["scored"]

    clock.now += 2
    assert scored("1m") == 1
    clock.now += 60
    assert scored("1m") == 0 and scored("5m") == 1
    clock.now += 13 * 60  # the minute under way is the 15th after the verify's
    assert scored("15m") == 1
    clock.now += 60
    assert scored("15m") == 0


def test_trails_keep_the_last_calls_of_the_sessions_called_last():
    clock = Clock()
    hub = TelemetryHub(sessions=2, calls=3, clock=clock)
    hub.push(
        "a",
        ReplicaTelemetry(clock).snapshot(),
        [(sid, f"/r{k}", 200, 1.0, clock.now) for sid in "xyz" for k in range(5)],
    )
    assert hub.trail("x") == []  # the least recently called of three, with room for two
    assert [c["route"] for c in hub.trail("z")] == ["/r2", "/r3", "/r4"]
    hub.push("a", ReplicaTelemetry(clock).snapshot(), [("y", "/again", 404, 2.0, clock.now)])
    hub.push("a", ReplicaTelemetry(clock).snapshot(), [("w", "/new", 200, 1.0, clock.now)])
    assert hub.trail("z") == [] and hub.trail("y")[-1]["status"] == 404  # y was called again, z not


def test_the_loop_lag_is_how_late_a_sleeping_task_wakes():
    seen: list[float] = []
    lag = LoopLag(interval=0.05, observe=seen.append)

    async def hold_the_loop() -> None:
        sampling = asyncio.create_task(lag.run())
        await asyncio.sleep(0.12)
        time.sleep(0.3)  # work that holds the loop
        await asyncio.sleep(0.12)
        sampling.cancel()

    asyncio.run(hold_the_loop())
    assert max(seen) >= 0.2 and lag.report()["max_1m"] >= 200.0


def test_the_hubs_trails_stay_within_their_memory_bound():
    """Past 10,000 sessions of 20 calls each, the hub forgets the least recently called: its memory stays under the
    bound docs/operations.md states (40 MB), however many sessions call."""
    import tracemalloc

    hub = TelemetryHub()
    routes = ["/seed_session", "/parse_html_page", "/retrieve_information", "/verify"]
    tracemalloc.start()
    try:
        for batch in range(60):  # 24,000 sessions, 25 calls each
            sids = range(batch * 400, (batch + 1) * 400)
            calls = [
                (f"resources-session-{n:032x}", routes[k % 4], 200, 1.5 + k, 1e9 + k) for n in sids for k in range(25)
            ]
            hub.push("replica", {"minutes": {}, "loop_lag_ms": {}, "admission": {}}, calls)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(hub._trails) == 10_000 and all(len(calls) == 20 for calls in hub._trails.values())
    assert held < 40e6
