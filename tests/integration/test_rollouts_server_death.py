"""A server that dies mid-run (no Ray: the app in one uvicorn process, killed on cue after N requests): each
episode it cuts short is a transport failure in the JSONL, the summary counts them, the exit status is 1, and
the run ends by itself, whether the server's connections are reset or left hanging (request timeouts)."""

from __future__ import annotations

import json

import pytest

from deployments.cli import main
from harness.http_app_server import start

EPISODES = 24


def run_against_dying_server(tmp_path, failure: str, *extra: str) -> tuple[int, list[dict], dict]:
    # 7 requests an episode: a third of the way into the run, the server stops answering
    process, url = start(fail_after=7 * 8 + 3, failure=failure)
    out = tmp_path / "episodes.jsonl"
    try:
        status = main(
            [
                "rollouts",
                "--url",
                url,
                "-n",
                str(EPISODES),
                "-c",
                "4",
                "--driver",
                "environment-server",
                "--driver",
                "legacy-agent",
                "--out",
                str(out),
                "--quiet",
                *extra,
            ]
        )
    finally:
        process.kill()
        process.wait(10)
    run, *records = [json.loads(line) for line in out.read_text().splitlines()]
    assert "run" in run  # the file opens with the run's options
    return status, records, json.loads(out.with_suffix(".summary.json").read_text())


def check(status: int, records: list[dict], summary: dict) -> list[dict]:
    assert status == 1
    assert sorted(r["episode"] for r in records) == list(range(EPISODES))  # every episode has its row
    failed = [r for r in records if r["outcome"] == "failed"]
    assert failed and all(r["failure"]["kind"] == "transport" for r in failed)
    for r in failed:  # no verdict; or, when the server died between verify and close, a close that failed
        assert r["reward"] is None or (r["failure"]["route"] == "close_session" and r["closed"] is False)
    for r in failed:  # a reply that never came is recorded as such
        assert r["failure"]["route"] is None or any(c["status"] is None for c in r["calls"])
    completed = [r for r in records if r["outcome"] != "failed"]
    assert completed and all(r["reward"] == 1.0 for r in completed)
    assert summary["failed"] == {"transport": len(failed)} and summary["completed"] == len(completed)
    return failed


@pytest.mark.timeout(120)
def test_a_server_that_exits_mid_run_gives_transport_failures_and_exit_status_1(tmp_path, capsys):
    status, records, summary = run_against_dying_server(tmp_path, "exit")
    failed = check(status, records, summary)
    # the environment server's cleanup close was tried, and failed too
    cut = [r for r in failed if r["driver"] == "environment-server" and r["resources_session_id"]]
    assert cut and all(r["closed"] is False for r in cut)
    assert f"transport failures  {len(failed)}" in capsys.readouterr().out


@pytest.mark.timeout(120)
def test_a_server_that_hangs_mid_run_is_ended_by_request_timeouts(tmp_path):
    status, records, summary = run_against_dying_server(
        tmp_path, "hang", "--request-timeout", "1", "--give-up-after", "6"
    )
    failed = check(status, records, summary)
    timed_out = [c for r in failed for c in r["calls"] if c["status"] is None]
    assert timed_out and all(c["error"] == "timed out" for c in timed_out)
    # after 6 in a row the rest are not tried: they say so, and send nothing
    untried = [r for r in failed if r["failure"]["detail"].startswith("not attempted")]
    assert untried and all(r["calls"] == [] for r in untried)
