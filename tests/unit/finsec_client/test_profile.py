"""Reward profiles (finsec_client/profile.py): pass@k against its closed form, what counts in a rate, flat GRPO
groups, and a curriculum chosen by measured pass rate, through `finsec profile` and `finsec tasks select` as a user
runs them on run files."""

from __future__ import annotations

import json
import math

import pytest

from deployments.cli import main
from finsec_client.profile import pass_at_k, profile, select
from finsec_client.records import EpisodeRecord, Failure, RecordWriter
from finsec_client.tasks import embedded_tasks


def closed_form(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 50])
def test_pass_at_k_is_its_closed_form(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(closed_form(n, c, k), abs=1e-12), (n, c, k)
    assert pass_at_k(n, 0, 1) == 0.0 and pass_at_k(n, n, 1) == 1.0


def test_pass_at_k_refuses_what_it_cannot_estimate():
    for n, c, k in ((4, 5, 1), (4, 2, 5), (4, 2, 0), (0, 0, 1)):
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


def episode(n: int, task: str, reward: float | None, *, masked: bool = False, failed: bool = False, group=None):
    return EpisodeRecord(
        episode=n,
        driver="environment-server",
        policy="scripted",
        task_index=0,
        repeat=0,
        taskset="t",
        task_id=task,
        question=f"question {task}",
        expected_answer="1",
        group=group,
        group_size=4 if group is not None else None,
        tools=["sec_filing_search", "submit_final_result"],
        reward=None if failed else reward,
        masked=masked,
        failure_kind="session_lost" if masked else None,
        failure=Failure("transport", "verify", "connection reset") if failed else None,
    )


def runs() -> list[EpisodeRecord]:
    """Task a: 1 pass of 4 scored, one masked, one failed; task b: always passes, its group flat; task c: never."""
    a = [episode(n, "a", r, group=0) for n, r in enumerate([1.0, 0.0, 0.0, 0.0])]
    a += [episode(4, "a", 1.0, masked=True), episode(5, "a", None, failed=True)]
    b = [episode(10 + n, "b", 1.0, group=1) for n in range(4)]
    c = [episode(20 + n, "c", 0.0) for n in range(2)]
    return a + b + c


def test_a_profile_counts_only_scored_episodes_and_finds_flat_groups():
    by_task = {p.task_id: p for p in profile(runs(), ks=(1, 4, 8))}
    a, b, c = by_task["a"], by_task["b"], by_task["c"]
    assert (a.episodes, a.masked, a.failed, a.passed) == (4, 1, 1, 1)  # the masked 1.0 is no pass
    assert a.pass_at == {1: pytest.approx(0.25), 4: pytest.approx(1.0)}  # pass@8 needs 8 episodes: not given
    assert a.masked_share == pytest.approx(1 / 5) and a.mean_reward == pytest.approx(0.25)
    assert (a.groups, a.flat_groups) == (1, 0) and (b.groups, b.flat_groups) == (1, 1)
    assert b.pass_at[1] == 1.0 and b.std_reward == 0.0 and c.pass_at[1] == 0.0
    assert [p.task_id for p in profile(runs())] == ["c", "a", "b"]  # hardest first
    assert {p.task_id: p.passed for p in profile(runs(), threshold=0.0)} == {"a": 4, "b": 4, "c": 2}


def test_selection_keeps_the_tasks_between_the_rates_and_says_why_it_left_the_others_out():
    tasks = embedded_tasks()[:5]
    profiles = profile(
        [
            *(episode(n, tasks[0].task_id, r) for n, r in enumerate([1.0, 0.0])),  # 0.5: kept
            *(episode(10 + n, tasks[1].task_id, 1.0) for n in range(3)),  # 1.0: too easy
            episode(20, tasks[2].task_id, 0.0),  # 0.0: too hard
        ]
    )
    for p in profiles:  # the records above say taskset "t"; the tasks are the embedded set's
        p.taskset = tasks[0].taskset
    chosen = select(tasks, profiles, 0.1, 0.9)
    assert [t.task_id for t in chosen.tasks] == [tasks[0].task_id]
    assert chosen.left_out == {"too hard": 1, "too easy": 1, "not measured": 2}


def test_the_commands_profile_run_files_and_select_a_curriculum(tmp_path, capsys):
    tasks = embedded_tasks()
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    records = [
        *(episode(n, tasks[0].task_id, r) for n, r in enumerate([1.0, 0.0, 1.0, 0.0])),
        *(episode(10 + n, tasks[1].task_id, 1.0) for n in range(4)),
    ]
    for record in records:
        record.taskset = tasks[0].taskset
    for path, part in ((first, records[:4]), (second, records[4:])):
        with path.open("w") as stream:
            writer = RecordWriter(stream)
            writer.write_run({"n": len(part)})
            for record in part:
                writer.write(record)
    assert main(["profile", str(first), str(second), "-k", "1,2"]) == 0
    table = capsys.readouterr().out
    assert "pass@2" in table and "never passed: 0 tasks; always passed: 1" in table
    assert main(["profile", str(first), str(second), "--json", "--out", str(tmp_path / "p.json")]) == 0
    measured = {row["task_id"]: row["pass_at"]["1"] for row in json.loads((tmp_path / "p.json").read_text())["tasks"]}
    assert measured == {tasks[0].task_id: 0.5, tasks[1].task_id: 1.0}
    out = tmp_path / "curriculum.jsonl"
    assert main(["tasks", "select", "--profile", str(tmp_path / "p.json"), "--max-pass", "0.9", "--out", str(out)]) == 0
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["question"] for row in kept] == [tasks[0].question]
    said = capsys.readouterr().err
    assert f"selected 1 of {len(tasks)} tasks" in said and "1 too easy" in said


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["profile", "missing.jsonl"], "does not exist"),
        (["profile", "RUN", "-k", "0"], "at least 1"),
        (["profile", "RUN", "-k", "x"], "whole numbers"),
        (["profile", "RUN", "--threshold", "2"], "between 0"),
        (["tasks", "select", "--profile", "missing.json"], "does not exist"),
        (["tasks", "select", "--profile", "P", "--min-pass", "0.8", "--max-pass", "0.2"], "min <= max"),
    ],
)
def test_usage_errors_say_what_to_fix(argv, said, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "RUN").write_text(json.dumps(episode(0, "a", 1.0).to_json()) + "\n")
    (tmp_path / "P").write_text('{"tasks": []}')
    assert main(argv) == 2
    assert said in capsys.readouterr().err
