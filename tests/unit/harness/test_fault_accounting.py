"""The fault scenarios' accounting (harness/fault_scenarios.py, used by bench/faults.py and the Ray fault tests),
checked without Ray: a lost session scored unmasked is counted as a failure whatever its reward, an app 500 is
told from HAProxy's page for a dead backend, and what cannot be known is not counted either way."""

from __future__ import annotations

import httpx

from harness.fault_scenarios import Call, Episode, Fault, failures, ingress_error_page, lost_at_verify, summarize

OLD, NEW = "life-before", "life-after"
FAULT = Fault(began=10.0, ended=10.01, shards=frozenset({1}))
RIGHT = {"mask_sample": False, "reward": 1.0, "failure_kind": None}
MASKED = {"mask_sample": True, "reward": 0.0, "failure_kind": "session_lost"}


def run(
    sid: str,
    seed_done: float,
    verify_sent: float,
    row: dict | None,
    incarnation: str = OLD,
    tool_lost: bool = False,
    statuses: list[int] | None = None,
) -> Episode:
    """An episode seeded (answered at `seed_done`) and verified (sent at `verify_sent`, answered 5 ms later)."""
    calls = [
        Call("/seed_session", 200, seed_done - 0.005, seed_done),
        Call("/verify", 200, verify_sent, verify_sent + 0.005),
    ]
    return Episode(
        sid,
        seed_done - 0.01,
        verify_sent + 0.01,
        statuses or [200] * 5,
        calls,
        row,
        incarnation=incarnation,
        tool_lost=tool_lost,
    )


def shard_of(e: Episode) -> int:
    return int(e.sid.split("-")[0])


def test_a_lost_session_scored_unmasked_fails_the_scenario_whatever_its_reward():
    """The kill landed between the last tool call and the verify: the reward is right (1.0), and the row is still
    a failure. Mutation: counting only rewards other than 1.0 (the old check) passes this scenario."""
    lost_but_scored = run("1-a", seed_done=9.0, verify_sent=10.2, row=RIGHT)
    summary = summarize([lost_but_scored, run("0-b", 9.0, 10.2, RIGHT)], FAULT, lambda e: shard_of(e) == 1, shard_of)
    assert summary["unmasked_wrong_rewards"] == 0  # what the old check saw: nothing
    assert (
        summary["lost_sessions_verified"],
        summary["lost_seen_only_by_verify"],
        summary["lost_scored_unmasked"],
    ) == (1, 1, 1)
    assert failures(summary) == ["lost_scored_unmasked = 1 (must be 0)"]


def test_what_tells_a_session_was_lost_when_its_verify_came():
    reborn = 11.0  # a later life of shard 1 first answered then
    cases = {
        "seeded by the life that died, verified after it": (run("1-a", 9.0, 10.2, MASKED), True),
        "a tool already said session_lost": (run("0-a", 9.0, 9.5, MASKED, tool_lost=True), True),
        "verified before the fault began": (run("1-b", 9.0, 9.9, RIGHT), False),
        "seeded by the later life": (run("1-c", 11.5, 11.6, RIGHT, incarnation=NEW), False),
        "on a shard that did not die": (run("2-d", 9.0, 10.2, RIGHT), False),
        "verify in flight while it died": (run("1-e", 9.0, 9.998, RIGHT), None),
    }
    for name, (episode, lost) in cases.items():
        assert lost_at_verify(episode, FAULT, shard_of(episode), {OLD}, reborn) is lost, name
    slow_death = Fault(10.0, 10.01, frozenset({1}), grace=5.0)  # a wider margin around the kill
    assert lost_at_verify(run("1-f", 9.0, 10.5, RIGHT), slow_death, 1, {OLD}, reborn) is None
    assert lost_at_verify(run("1-g", 9.0, 11.2, RIGHT), slow_death, 1, {OLD}, reborn) is True  # after rebirth


def test_masked_rows_and_uncertain_verifies_are_not_failures():
    episodes = [run("1-a", 9.0, 10.2, MASKED), run("1-b", 9.0, 9.998, RIGHT), run("1-c", 9.0, 9.998, MASKED)]
    summary = summarize(episodes, FAULT, lambda e: True, shard_of)
    assert (summary["lost_scored_unmasked"], summary["verified_while_dying"]) == (0, 2)
    assert failures(summary) == []


def response(status: int, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.Response(status, content=body, headers=headers)


def test_haproxys_page_for_a_dead_backend_is_told_from_an_app_500():
    haproxy = response(500, b"Internal Server Error", {"content-type": "text/plain"})
    assert ingress_error_page(haproxy)
    for app_500 in (
        response(500, b"Internal Server Error", {"content-type": "text/plain; charset=utf-8"}),  # ASGI
        response(500, b"Internal Server Error", {}),  # a Serve replica's own
        response(
            500, b"Internal Server Error", {"content-type": "text/plain", "set-cookie": "s=x; path=/"}
        ),  # through the app
        response(503, b'{"detail": "retry"}', {"content-type": "application/json"}),
    ):
        assert not ingress_error_page(app_500)
    calls = [Call("/verify", 500, 1.0, 1.1, ingress_page=True), Call("/verify", 500, 1.2, 1.3)]
    summary = summarize([Episode("0-a", 0.0, 2.0, [200] * 5, calls, RIGHT)], FAULT, lambda e: True, shard_of)
    assert (summary["server_errors_500"], summary["app_500s"], summary["ingress_500_pages"]) == (2, 1, 1)
    assert failures(summary) == ["app_500s = 1 (must be 0)"]


def test_with_durable_sessions_a_dead_life_restores_and_only_a_reported_loss_counts():
    """`durable`: a session seeded by a life that died and verified unmasked is restored, not lost; a loss is what
    the server reported (a tool's 404, a masked verify), and a reported loss scored unmasked still fails."""
    restored = run("1-a", seed_done=9.0, verify_sent=10.2, row=RIGHT)
    reported = run("1-b", seed_done=9.0, verify_sent=10.2, row=MASKED)
    summary = summarize([restored, reported], FAULT, lambda e: shard_of(e) == 1, shard_of, durable=True)
    assert (summary["restored"], summary["lost_sessions_verified"], summary["lost_scored_unmasked"]) == (1, 1, 0)
    assert failures(summary) == []
    tool_said_lost = run("1-c", seed_done=9.0, verify_sent=10.2, row=RIGHT, tool_lost=True)
    summary = summarize([tool_said_lost], FAULT, lambda e: shard_of(e) == 1, shard_of, durable=True)
    assert failures(summary) == ["lost_scored_unmasked = 1 (must be 0)"]
