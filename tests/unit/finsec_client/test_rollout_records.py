"""The episode record (one JSONL row), the summary computed from records, the progress line and task files."""

from __future__ import annotations

import io
import json

import pytest

from finsec_client.client import Call
from finsec_client.progress import Progress
from finsec_client.records import EpisodeRecord, Failure, RecordWriter, read_records, read_run
from finsec_client.summary import counter_delta, percentile, render, shard_time, summarize
from finsec_client.tasks import TaskFileError, embedded_tasks, load_tasks
from harness.extras import needs


def record(
    n: int,
    driver: str = "environment-server",
    reward: float | None = 1.0,
    masked: bool = False,
    failure_kind: str | None = None,
    failure: Failure | None = None,
    ms: float = 10.0,
) -> EpisodeRecord:
    r = EpisodeRecord(
        n,
        driver,
        "scripted",
        n % 3,
        n // 3,
        "set",
        str(n % 3),
        "q?",
        "42",
        reward=reward,
        masked=masked,
        failure_kind=failure_kind,
        failure=failure,
    )
    r.add_calls([Call("seed_session", 200, ms), Call("verify", 200 if failure is None else None, ms * 2)])
    return r


def test_a_record_round_trips_through_jsonl_with_its_outcome():
    rows = [
        record(0),
        record(1, masked=True, reward=0.0, failure_kind="session_lost"),
        record(2, reward=None, failure=Failure("transport", "verify", "ClientConnectorError: refused")),
    ]
    stream = io.StringIO()
    writer = RecordWriter(stream)
    for r in rows:
        writer.write(r)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["outcome"] for line in lines] == ["scored", "masked", "failed"]
    assert lines[2]["failure"] == {"kind": "transport", "route": "verify", "detail": "ClientConnectorError: refused"}
    assert lines[0]["calls"] == [
        {"route": "seed_session", "status": 200, "ms": 10.0},
        {"route": "verify", "status": 200, "ms": 20.0},
    ]
    assert lines[2]["calls"][1]["status"] is None
    assert read_records(io.StringIO(stream.getvalue())) == rows
    assert read_run(io.StringIO(stream.getvalue())) is None  # a file of records only (an older run's)


def test_a_run_file_opens_with_its_options_and_its_records_skip_them():
    stream = io.StringIO()
    writer = RecordWriter(stream)
    writer.write_run({"episodes": 2, "driver": ["legacy-agent"]})
    writer.write(record(0))
    assert read_run(io.StringIO(stream.getvalue())) == {"episodes": 2, "driver": ["legacy-agent"]}
    assert read_records(io.StringIO(stream.getvalue())) == [record(0)]


def test_the_verify_row_is_what_aggregate_metrics_reads():
    r = record(4, reward=1.0)
    r.usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    assert r.verify_row() == {
        "reward": 1.0,
        "mask_sample": False,
        "failure_kind": None,
        "_ng_task_index": 1,
        "_ng_rollout_index": 1,
        "response": {"usage": r.usage},
    }
    assert record(5, reward=None, failure=Failure("http", "verify", "500")).verify_row() is None


def test_the_summary_counts_outcomes_and_averages_only_scored_rewards():
    records = [
        record(0, reward=1.0),
        record(1, reward=0.0),
        record(2, driver="legacy-agent", reward=1.0),
        record(3, masked=True, reward=0.0, failure_kind="session_lost"),
        record(4, masked=True, reward=0.0, failure_kind="session_expired"),
        record(5, reward=None, failure=Failure("transport", "seed_session", "refused")),
        record(6, reward=None, failure=Failure("http", "verify", "500")),
    ]
    s = summarize(
        records,
        2.0,
        counters_before={"closes": 4, "seeds.agent_run": 1},
        counters_after={"closes": 7, "seeds.agent_run": 1, "verifies.scored": 5},
    )
    assert (s.episodes, s.completed, s.scored) == (7, 5, 3)
    assert s.mean_reward == pytest.approx(2 / 3)  # masked rows are no measurement; failed ones no verdict
    assert s.masked == {"session_lost": 1, "session_expired": 1}
    assert s.failed == {"transport": 1, "http": 1} and s.transport_failures == 1
    assert s.rollouts_per_second == pytest.approx(2.5)
    assert s.by_driver["legacy-agent"].episodes == 1 and s.by_driver["environment-server"].failed == 2
    assert s.counters == {"closes": 3, "verifies.scored": 5}  # unchanged counters are left out
    assert s.latency_ms["verify"]["n"] == 5  # requests without a reply have no latency
    text = render(s)
    for line in ("transport failures  1", "masked session_lost", "closes", "+3", "legacy-agent"):
        assert line in text


def test_percentiles_are_nearest_rank_and_counter_deltas_need_both_sides():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile([7.0], 0.99)) == (50.0, 99.0, 7.0)
    assert counter_delta(None, {"closes": 1}) == {}
    assert counter_delta({"a": 1}, {"b": 2}) == {"a": -1, "b": 2}


def test_the_shards_timers_over_a_run_give_each_phase_s_mean():
    before = {
        "batches": 10,
        "operations": 12,
        "batch_us": 5_000,
        "mark_reads": 2,
        "mark_read_us": 600,
        "mark_writes": 4,
        "mark_write_us": 2_000,
    }
    after = {
        "batches": 16,
        "operations": 18,
        "batch_us": 8_000,
        "mark_reads": 3,
        "mark_read_us": 900,
        "mark_writes": 6,
        "mark_write_us": 3_000,
    }
    assert shard_time(before, after) == {
        "batches": 6,
        "batch_ms": pytest.approx(0.5),
        "mark_reads": 1,
        "mark_read_ms": pytest.approx(0.3),
        "mark_writes": 2,
        "mark_write_ms": pytest.approx(0.5),
    }
    # a server from before the timers, or a reading that failed, gives nothing rather than zeros
    assert shard_time({"batches": 1, "operations": 1}, {"batches": 2, "operations": 2}) is None
    assert shard_time(None, after) is None
    text = render(
        summarize(
            [],
            1.0,
            counters_before={},
            counters_after={},
            held={"sessions": 0},
            shard_calls_before=before,
            shard_calls_after=after,
        )
    )
    assert "6 batches at 0.50 ms" in text and "writes 2 at 0.50 ms" in text


def test_progress_without_a_terminal_prints_plain_periodic_lines():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(4, out, interval=5.0, clock=lambda: now[0])
    for n, r in enumerate(
        [
            record(0),
            record(1, masked=True, reward=0.0, failure_kind="session_lost"),
            record(2, failure=Failure("transport", None, "x"), reward=None),
        ]
    ):
        now[0] = 3.0 * (n + 1)
        progress.update(r)
    progress.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) == 2  # one at 6 s (interval passed), one at the end
    assert "3/4 episodes" in lines[-1] and "masked 1" in lines[-1] and "failed 1" in lines[-1]
    assert "mean reward 1.000" in lines[-1]


def test_task_files_are_read_and_their_errors_said_in_one_line(tmp_path):
    good = tmp_path / "tasks.jsonl"
    good.write_text(
        json.dumps({"question": "Q1?", "expected_answer": "1", "ticker": "X1"})
        + "\n\n"
        + json.dumps(
            {
                "responses_create_params": {"input": [{"role": "user", "content": "Q2?"}]},
                "expected_answer": "2",
                "task_id": "t-2",
            }
        )
        + "\n"
    )
    tasks = load_tasks(good)
    assert [(t.index, t.taskset, t.task_id, t.question) for t in tasks] == [
        (0, "tasks", "0", "Q1?"),
        (1, "tasks", "t-2", "Q2?"),
    ]
    assert tasks[0].hint("ticker") == "X1" and tasks[0].data["expected_answer"] == "1"
    bad = tmp_path / "bad.jsonl"
    for text, message in [
        ("{nope", "not JSON"),
        ("[1]", "JSON object"),
        ('{"question": "q"}', "expected_answer"),
        ('{"expected_answer": "1"}', "no question"),
        ("", "no tasks"),
    ]:
        bad.write_text(text)
        with pytest.raises(TaskFileError, match=message):
            load_tasks(bad)
    with pytest.raises(TaskFileError, match="does not exist"):
        load_tasks(tmp_path / "missing.jsonl")
    assert len(embedded_tasks()) >= 40


def test_plots_are_written_as_pngs(tmp_path):
    needs("bench", "matplotlib")
    from finsec_client.plots import write_plots

    paths = write_plots([record(n, reward=float(n % 2)) for n in range(6)], tmp_path / "plots")
    assert [p.name for p in paths] == ["reward.png", "latency.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)
