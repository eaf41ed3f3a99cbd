"""`finsec rollouts --url` against the Serve app (2 replicas) over real HTTP: both drivers with the scripted policy,
the LLM policy against the loopback OpenAI-compatible stub, Ray workers, and the server's session counters
checked against what the run did. Every session is closed or released at the end: the store holds none."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from deployments.cli import main
from finsec.corpus.generate import questions

from .conftest import deployed_app

TOOLS = ["sec_filing_search", "parse_html_page", "retrieve_information", "submit_final_result"]
LIFECYCLE = {
    "environment-server": (["seed_session"], ["verify", "close_session"]),
    "legacy-agent": (["seed_session"], ["verify"]),
}


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-rollouts", replicas=2)


def rollouts(tmp_path, app, *args: str, name: str = "run") -> tuple[int, list[dict], dict]:
    out = tmp_path / f"{name}.jsonl"
    status = main(["rollouts", "--url", app.base_url, "--out", str(out), "--quiet", *args])
    run, *records = [json.loads(line) for line in out.read_text().splitlines()]
    assert run["run"]["url"] == app.base_url  # the file opens with the run's options
    return status, records, json.loads(out.with_suffix(".summary.json").read_text())


def counters(app) -> dict[str, int]:
    return httpx.get(app.base_url + "/session_counters", timeout=30).json()["counters"]


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {
        k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after) if after.get(k, 0) != before.get(k, 0)
    }


def test_both_drivers_play_every_episode_to_a_verdict_and_leave_no_session(app, tmp_path):
    status, records, summary = rollouts(
        tmp_path, app, "-n", "32", "-c", "8", "--driver", "environment-server", "--driver", "legacy-agent"
    )
    assert status == 0
    assert sorted(r["episode"] for r in records) == list(range(32))
    for r in records:
        before, after = LIFECYCLE[r["driver"]]
        assert r["tools"] == TOOLS
        assert [c["route"] for c in r["calls"]] == before + TOOLS + after
        assert all(c["status"] == 200 for c in r["calls"])
        assert r["outcome"] == "scored" and r["final_answer"]
    assert {r["driver"] for r in records} == set(LIFECYCLE)
    assert all(r["closed"] for r in records if r["driver"] == "environment-server")
    rewards = [r["reward"] for r in records]
    assert rewards == [1.0] * len(rewards)  # the scripted policy reads the figure in the passages, every time
    assert summary["mean_reward"] == pytest.approx(sum(rewards) / len(rewards))
    stats = app.stats()
    assert stats["sessions"] == 0 and stats["documents"] == 0  # closed, or released by verify


def test_the_session_counters_match_what_the_run_did(app, tmp_path):
    status, records, summary = rollouts(
        tmp_path,
        app,
        "-n",
        "12",
        "-c",
        "4",
        "--driver",
        "environment-server",
        "--driver",
        "legacy-agent",
        name="counted",
    )
    assert status == 0
    episodes = sum(r["driver"] == "environment-server" for r in records)
    assert summary["counters"] == {
        "seeds.episode.created": episodes,
        "closes": episodes,
        "seeds.agent_run": len(records) - episodes,
        "verifies.scored": len(records),
    }
    # the shards timed their batches, and the durable writes of the seeds' and closes' marks inside them
    timed = summary["shard_time"]
    assert timed["batches"] >= episodes and timed["batch_ms"] > 0
    assert 0 < timed["mark_writes"] <= timed["batches"] and timed["mark_write_ms"] > 0
    # a trace plays one episode, then the promises after close: a cached re-send, a lost session for the
    # tools, a masked verify and a refused (409) late seed
    before = counters(app)
    assert main(["rollouts", "--url", app.base_url, "--trace"]) == 0
    assert delta(before, counters(app)) == {
        "seeds.episode.created": 1,
        "verifies.scored": 1,
        "verifies.cached": 1,
        "closes": 1,
        "session_lost": 1,
        "verifies.masked.session_lost": 1,
        "conflicts.fenced": 1,
    }
    before = counters(app)
    assert main(["rollouts", "--url", app.base_url, "--trace", "--driver", "legacy-agent"]) == 0
    assert delta(before, counters(app)) == {"seeds.agent_run": 1, "verifies.scored": 1, "session_lost": 1}


def test_repeats_play_each_task_as_a_group_side_by_side(app, tmp_path):
    """`-r K`: K plays of one task, recorded with their group; without -n, every task once as a group."""
    tasks = tmp_path / "two.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in questions()[:2]))
    status, records, summary = rollouts(tmp_path, app, "-r", "3", "-c", "6", "--tasks", str(tasks), name="groups")
    assert status == 0 and len(records) == 2 * 3
    by_group: dict[int, list[dict]] = {}
    for r in records:
        by_group.setdefault(r["group"], []).append(r)
    assert sorted(by_group) == [0, 1]
    for group, members in by_group.items():
        assert len(members) == 3 and {r["group_size"] for r in members} == {3}
        assert {r["task_id"] for r in members} == {str(group)}  # one task per group
        assert sorted(r["repeat"] for r in members) == [0, 1, 2]
        assert len({r["rollout_id"] for r in members}) == 3  # each member its own episode
    assert summary["groups"] == {"played": 2, "complete": 2, "with_spread": 0}  # the scripted policy: all 1.0


def test_resume_plays_only_what_the_file_lacks(app, tmp_path):
    """`--resume FILE`: episodes recorded as scored or masked are not played again; failed and missing ones are,
    and their records are appended to FILE."""
    status, records, _ = rollouts(tmp_path, app, "-n", "6", "-c", "3", name="resumed")
    assert status == 0
    out = tmp_path / "resumed.jsonl"
    failed = {"kind": "transport", "route": "verify", "detail": "cut"}
    kept = [
        r if r["episode"] else {**r, "failure": failed}  # 0 failed, and a run cut short never recorded 1 and 4
        for r in records
        if r["episode"] not in (1, 4)
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in kept))
    before = counters(app)
    status = main(["rollouts", "--url", app.base_url, "--resume", str(out), "-n", "8", "-c", "3", "--quiet"])
    assert status == 0
    assert delta(before, counters(app))["seeds.episode.created"] == 5  # 0, 1, 4, and the new 6 and 7
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    played = [r["episode"] for r in rows[len(kept) :]]
    assert sorted(played) == [0, 1, 4, 6, 7]
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == 8 and summary["scored"] == 8
    # the same file with other options is another run: refused before anything is played
    assert main(["rollouts", "--url", app.base_url, "--resume", str(out), "-n", "8", "-r", "2", "--quiet"]) == 2


def test_resume_with_the_file_alone_goes_on_with_its_run(app, tmp_path):
    """The file's first line keeps the run's options: `--resume FILE` needs nothing else, and refuses options
    that would make it another run."""
    status, records, _ = rollouts(
        tmp_path, app, "-n", "6", "-c", "3", "--driver", "legacy-agent", "--agent-run-seed", "empty", name="alone"
    )
    assert status == 0
    out = tmp_path / "alone.jsonl"
    run, *rows = out.read_text().splitlines()
    out.write_text("\n".join([run, *rows[:3]]) + "\n")  # the run cut short after three episodes
    before = counters(app)
    assert main(["rollouts", "--resume", str(out), "--quiet"]) == 0
    assert delta(before, counters(app))["seeds.agent_run"] == 3  # the legacy-agent driver, as the run had it
    episodes = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert sorted(r["episode"] for r in episodes) == list(range(6))
    assert {r["driver"] for r in episodes} == {"legacy-agent"}
    assert main(["rollouts", "--resume", str(out), "--driver", "environment-server", "--quiet"]) == 2


def test_status_names_the_apps_actors_and_what_its_shards_hold(app, capsys):
    assert main(["status", "--url", app.base_url]) == 0
    shown = capsys.readouterr().out
    assert "app        it-rollouts" in shown and "mark_store            gcs" in shown
    for kind in ("shard-0-of-4", "shard-3-of-4", "reaper", "documents", "edgar-limiter"):
        assert f"  {kind}." in shown, kind  # each actor's name, ending in its version
    assert main(["status", "--url", "http://127.0.0.1:9"]) == 2  # nothing there: a usage error, one line


def test_workers_run_as_ray_actors_and_their_records_gather_into_one_file(app, tmp_path):
    status, records, summary = rollouts(tmp_path, app, "-n", "12", "-c", "4", "--workers", "2", name="workers")
    assert status == 0
    assert sorted(r["episode"] for r in records) == list(range(12))
    assert {r["worker"] for r in records} == {0, 1}
    assert all(r["outcome"] == "scored" for r in records) and summary["dead_workers"] == []
    assert app.stats()["sessions"] == 0


def _answer_from(reply: str) -> str:
    row = re.search(r"Total net revenues \| (\$[\d,]+)", reply)
    return f"{row.group(1)} thousand" if row else "unknown"


def fake_analyst(body: dict) -> dict:
    """A model that calls the tools in order: search, parse the newest 10-K, retrieve, submit what it read."""
    from harness.llm_stub import tool_calls_reply

    messages = body["messages"]
    tool_results = [m["content"] for m in messages if m["role"] == "tool"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    if not tool_results:
        ticker = re.search(r"\(([A-Z0-9]+)\)", question).group(1)
        return tool_calls_reply(("sec_filing_search", {"ticker": ticker, "form_types": ["10-K"]}))
    if len(tool_results) == 1:
        newest = json.loads(tool_results[0])[0]
        return tool_calls_reply(("parse_html_page", {"url": newest["filing_url"], "key": "doc"}))
    if len(tool_results) == 2:
        return tool_calls_reply(("retrieve_information", {"prompt": question + " {{doc}}"}))
    return tool_calls_reply(("submit_final_result", {"final_result": _answer_from(tool_results[2])}))


def test_the_llm_policy_plays_through_tool_calls_and_is_scored_on_its_submission(app, tmp_path, stub):
    asked = [
        q for q in questions() if q["form"] == "10-K" and "total net revenues for fiscal year 2024" in q["question"]
    ][:3]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(q) + "\n" for q in asked))
    stub.respond_with(fake_analyst)
    status, records, _ = rollouts(
        tmp_path,
        app,
        "--policy",
        "llm",
        "--model-url",
        stub.base_url,
        "--model",
        "fake",
        "--tasks",
        str(tasks),
        "-n",
        "6",
        "-c",
        "3",
        "--driver",
        "environment-server",
        "--driver",
        "legacy-agent",
        "-T",
        "0.7",
        "--max-tokens",
        "256",
        name="llm",
    )
    assert status == 0
    for r in records:
        assert r["policy"] == "llm" and r["tools"] == TOOLS
        assert r["reward"] == 1.0 and r["final_answer"] == asked[r["task_index"]]["expected_answer"]
        assert r["usage"]["total_tokens"] == 4 * 18  # four model turns
    sent = stub.bodies[0]
    assert sent["model"] == "fake" and {t["function"]["name"] for t in sent["tools"]} >= set(TOOLS)
    assert all(b["temperature"] == 0.7 and b["max_tokens"] == 256 for b in stub.bodies)  # the sampling flags
    assert app.stats()["sessions"] == 0


def test_a_model_that_never_submits_stops_after_its_turns_and_scores_zero(app, tmp_path, stub):
    from harness.llm_stub import tool_calls_reply

    stub.respond_with(lambda body: tool_calls_reply(("sec_filing_search", {"ticker": "HLXR1"})))
    status, records, _ = rollouts(
        tmp_path,
        app,
        "--policy",
        "llm",
        "--model-url",
        stub.base_url,
        "--model",
        "m",
        "--max-turns",
        "3",
        "-n",
        "2",
        "-c",
        "2",
        name="stubborn",
    )
    assert status == 0  # completed: scored, by the hard gate
    for r in records:
        assert r["tools"] == ["sec_filing_search"] * 3 and r["final_answer"] is None
        assert r["reward"] == 0.0 and not r["masked"] and r["closed"]
    assert len(stub.requests) == 6


def test_a_model_endpoint_that_fails_fails_its_episodes_and_still_closes_them(app, tmp_path, stub):
    status, records, summary = rollouts(
        tmp_path, app, "--policy", "llm", "--model-url", stub.base_url, "--model", "m", "-n", "2", name="no-model"
    )  # no replies scripted: 500s
    assert status == 1
    assert summary["failed"] == {"model": 2}
    assert all(r["failure"]["kind"] == "model" and r["closed"] for r in records)
    assert app.stats()["sessions"] == 0


def test_a_worker_that_dies_is_reported_and_its_episodes_are_not_hidden(app):
    import ray

    from finsec_client.runner import RunPlan, new_run_id
    from finsec_client.tasks import embedded_tasks
    from finsec_client.workers import run_on_workers, worker_name

    plan = RunPlan(app.base_url, tuple(embedded_tasks()), 200, 2, run_id=new_run_id())
    records = []

    def on_record(record):
        if record.worker == 1 and not any(r.worker == 1 for r in records):
            ray.kill(ray.get_actor(worker_name(plan, 1)))  # dies mid-run, with episodes left to play
        records.append(record)

    dead, nodes = run_on_workers(plan, 2, on_record)
    assert len(dead) == 1 and dead[0].startswith("worker 1: ") and nodes == 1
    assert sorted(r.episode for r in records) == list(range(200))  # every episode has its row
    lost = [r for r in records if r.failure is not None]
    assert lost and all(r.worker == 1 and r.failure.kind == "worker" for r in lost)
    assert all(r.outcome == "scored" for r in records if r.worker == 0)


def test_the_live_page_sums_both_replicas_and_a_runs_rewards(app, tmp_path):
    """After a run, /ui/state (no admin token here: open, naming no session) counts what both replicas served,
    as each reports to the telemetry hub actor every 2 s."""
    import time

    status, records, _ = rollouts(tmp_path, app, "-n", "24", "-c", "8", name="live")
    assert status == 0 and len(records) == 24
    deadline = time.monotonic() + 60
    while True:
        state = httpx.get(app.base_url + "/ui/state", timeout=30).json()
        live = state["telemetry"]
        verifies = live.get("rewards", {}).get("5m", {}).get("scored", 0) if live["ok"] else 0
        if live["ok"] and len(live["replicas"]) == 2 and verifies >= 24:
            break
        assert time.monotonic() < deadline, state
        time.sleep(1)
    assert live["routes"]["/seed_session"]["calls_5m"] >= 24 and live["routes"]["/verify"]["p99_ms_5m"] is not None
    assert live["rewards"]["5m"]["mean"] is not None  # the module's earlier runs count too: some score 0
    assert all(r["loop_lag_ms"]["max_1m"] >= 0 for r in live["replicas"])
    assert state["stalled"]["idlest"] == []  # no token set: counted, never named
    assert httpx.get(app.base_url + "/ui", timeout=30).text.startswith("<!doctype html>")
