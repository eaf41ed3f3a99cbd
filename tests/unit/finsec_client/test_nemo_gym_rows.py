"""`finsec tasks nemo-gym` (finsec_client/nemo_gym_rows.py): task rows as NeMo Gym's datasets hold them. The
recipes' tests play these rows with NeMo Gym and verifiers themselves; here, what the rows must say."""

from __future__ import annotations

import json
import subprocess
import sys

from deployments.cli import main
from finsec.tools.catalog import DEFAULT_TOOLS, INSTRUCTIONS, parameters
from finsec_client.nemo_gym_rows import PARAMS, episode_row, flat_row
from finsec_client.tasks import embedded_tasks, load_tasks


def test_a_flat_row_is_the_task_plus_the_models_input_and_tools(tmp_path):
    out = tmp_path / "rows.jsonl"
    assert main(["tasks", "nemo-gym", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    tasks = embedded_tasks()
    assert len(rows) == len(tasks)
    for row, task in zip(rows, tasks, strict=False):
        assert {k: row[k] for k in task.data} == task.data  # every task key travels with it
        params = row[PARAMS]
        assert params["input"] == [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": task.question},
        ]
        assert [t["name"] for t in params["tools"]] == list(DEFAULT_TOOLS)
        assert all(t["type"] == "function" and t["parameters"] == parameters(t["name"]) for t in params["tools"])
    again = load_tasks(out)  # a flat row is itself a task row
    assert [(t.question, t.expected_answer) for t in again] == [(t.question, t.expected_answer) for t in tasks]


def test_an_episode_row_carries_the_task_as_task_data():
    task = embedded_tasks()[3]
    row = episode_row(task)
    assert row["task_id"] == {"taskset": task.taskset, "task_id": task.task_id}
    assert row["task_input"][PARAMS] == flat_row(task)[PARAMS]
    assert row["task_input"]["task_data"] == {
        **task.data,
        "question": task.question,
        "expected_answer": task.expected_answer,
    }


def test_a_row_with_its_own_model_input_keeps_it(tmp_path):
    own = {"input": [{"role": "user", "content": "How much?"}]}
    source = tmp_path / "tasks.jsonl"
    source.write_text(json.dumps({PARAMS: own, "expected_answer": "$5"}) + "\n")
    task = load_tasks(source)[0]
    assert flat_row(task)[PARAMS] == own and flat_row(task)["question"] == "How much?"


def test_a_bad_task_file_is_a_usage_error(tmp_path, capsys):
    assert main(["tasks", "nemo-gym", "--tasks", str(tmp_path / "none.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_reader_that_stops_early_ends_it_quietly():
    """`finsec tasks nemo-gym | head -1` (rows past a pipe's buffer): no BrokenPipeError. `finsec corpus
    questions` writes through the same function."""
    for command in (["tasks", "nemo-gym"],):
        code = "import sys; from deployments.cli import main; sys.exit(main(sys.argv[1:]))"
        writer = subprocess.Popen(
            [sys.executable, "-c", code, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        writer.stdout.readline()
        writer.stdout.close()  # the reader goes away after one line
        assert writer.wait(timeout=60) == 0
        assert b"Error" not in writer.stderr.read()
