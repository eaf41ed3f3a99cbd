"""One clock per rule: sessions, budgets and fences are timed by their shard's session clock, which never steps
(session_store/clock.py). A step of a node's wall clock by the session TTL evicts nothing at once, a replica's
skewed clock moves no budget, and the reaper alarms and holds off its sweep of lapsed fences."""

from __future__ import annotations

import asyncio
import logging

from harness.bodies import episode_seed, new_session_id
from harness.inprocess import InProcess
from session_store import MemoryMarkStore, Reaper, ShardConfig, ShardService
from session_store.clock import SLEW, SessionClock
from session_store.core import EpisodeSeed

TTL = 600.0


class Clocks:
    """A node's wall and monotonic clocks, moved by the test."""

    def __init__(self) -> None:
        self.wall_now, self.mono_now = 1_000_000.0, 50.0

    def wall(self) -> float:
        return self.wall_now

    def monotonic(self) -> float:
        return self.mono_now

    def elapse(self, seconds: float) -> None:
        self.wall_now += seconds
        self.mono_now += seconds


def test_the_session_clock_follows_the_wall_and_absorbs_a_step_slowly():
    clocks = Clocks()
    clock = SessionClock(clocks.wall, clocks.monotonic)
    clocks.elapse(10)
    assert clock() == clocks.wall_now and clock.step() == 0
    clocks.wall_now += TTL  # an NTP step, or `date -s`
    before = clock()
    clocks.elapse(100)
    assert clock() - before == 100 * (1 + SLEW)  # at most 1% faster while it catches up
    assert clock.step() == TTL - 100 * SLEW
    clocks.wall_now -= 2 * TTL  # a step back: time never runs backwards
    before = clock()
    clocks.elapse(100)
    assert clock() - before == 100 * (1 - SLEW)


def run(shard, *ops):
    return [value for _, value in asyncio.run(shard.run(list(ops)))]


def test_a_forward_step_of_a_shards_wall_clock_by_the_ttl_evicts_nothing_at_once(caplog):
    """The issue's measurement: mass eviction, mass fencing. Timed by the wall clock, every session below would
    be evicted by the first batch after the step."""
    clocks = Clocks()
    marks = MemoryMarkStore()
    shard = ShardService(ShardConfig(TTL), marks, SessionClock(clocks.wall, clocks.monotonic))
    sids = [f"s{n}" for n in range(50)]
    run(shard, *(("seed_episode", (sid, EpisodeSeed({"rollout_id": sid, "attempt": 0}, {}, "d"))) for sid in sids))
    clocks.elapse(60)
    clocks.wall_now += TTL + 1
    clocks.elapse(1)
    assert all(r is None for r in run(shard, *(("check_open", (sid,)) for sid in sids)))  # all still open
    swept = []

    class Watched(MemoryMarkStore):
        async def sweep(self, now: float) -> int:
            swept.append(now)
            return 0

    reaper = Reaper([shard], marks=Watched(), sweep_marks_every=1)
    with caplog.at_level(logging.ERROR):
        evicted, _, _ = asyncio.run(reaper.tick())
    assert evicted.sessions == 0 and abs(reaper.status.clock_step - (TTL + 1)) < 1
    assert "a wall clock stepped" in caplog.text and "s0" not in caplog.text
    assert swept == []  # the sweep of lapsed fences waits until no clock is stepped
    clocks.elapse(TTL - 60)  # the sessions' real age passes the TTL: evicted then, as without the step
    assert asyncio.run(shard.tick()).evicted.sessions == 50


def test_a_replicas_skewed_clock_moves_no_budget():
    """The budget compares the cookie's start (the shard's clock) with the shard's clock, read through an offset:
    a replica whose own clock runs 1,000 s ahead does not end every budget at once."""
    with InProcess(max_rollout_time_seconds=60.0) as app:
        skewed = lambda: app.clock() + 1_000.0  # noqa: E731
        app.app.api.state.services.clock = skewed  # this node's wall clock
        app.app.store._monotonic = skewed  # and its monotonic one: only their rates matter
        app.post("/seed_session", json=episode_seed(new_session_id()))
        search = {"ticker": "HLXR"}
        assert "Time budget" not in app.post("/sec_filing_search", json=search).text
        app.clock.advance(61)
        assert "Time budget exhausted (61s / 60s)" in app.post("/sec_filing_search", json=search).text
