"""The task set a run plays: the embedded corpus's questions by default, or rows of a JSONL file.

A row needs a question (`question`, or the last user message of `responses_create_params.input`, as NeMo Gym's
finance datasets have it) and an `expected_answer`; every other key travels with it as task data (the episode
seed's `task_data`, the verify body)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["embedded_tasks", "EMBEDDED_TASKSET", "load_tasks", "Task", "task_of", "TaskFileError"]

EMBEDDED_TASKSET = "finsec-embedded"


class TaskFileError(ValueError):
    """A task file that cannot be read, said in one line."""


@dataclass(frozen=True)
class Task:
    index: int  # position in the task set: the `_ng_task_index` of /aggregate_metrics
    taskset: str
    task_id: str
    question: str
    expected_answer: str
    data: dict[str, Any] = field(default_factory=dict)  # the whole row

    def hint(self, key: str) -> str | None:
        """A field of the row the question came with (ticker, form), for a policy that may use it."""
        value = self.data.get(key)
        return value if isinstance(value, str) and value else None


def embedded_tasks() -> list[Task]:
    from finsec.corpus.generate import questions

    return [_task(row, i, EMBEDDED_TASKSET) for i, row in enumerate(questions())]


def load_tasks(path: Path) -> list[Task]:
    """The file's tasks; refused when a build's manifest lists it with another digest (finsec/taskgen/manifest.py)."""
    from finsec.taskgen.manifest import listed_digest

    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"task file {path} does not exist")
    listed = listed_digest(path)
    if listed is not None and listed[1] != listed[2]:
        raise TaskFileError(
            f"task file {path} changed after its build: {listed[0]} records another digest. Build again, or move the "
            "file out of the build's folder to play it as a file of your own"
        )
    tasks: list[Task] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            # not every ValueError is a JSONDecodeError with .msg: an integer too long to convert is not
            why = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
            raise TaskFileError(f"{path}:{number}: not JSON ({why})") from None
        if not isinstance(row, dict):
            raise TaskFileError(f"{path}:{number}: a task is a JSON object")
        tasks.append(_task(row, len(tasks), path.stem, where=f"{path}:{number}"))
    if not tasks:
        raise TaskFileError(f"task file {path} holds no tasks")
    return tasks


def task_of(row: dict[str, Any], taskset: str = "task") -> Task:
    """One task row given whole (by an environment's reset, say); raises TaskFileError naming what it lacks."""
    return _task(row, 0, taskset)


def _task(row: dict[str, Any], index: int, taskset: str, where: str = "task") -> Task:
    question = row.get("question") or _last_user_message(row.get("responses_create_params"))
    expected = row.get("expected_answer")
    if not isinstance(question, str) or not question:
        raise TaskFileError(f"{where}: no question (a 'question' string or a user message)")
    if not isinstance(expected, str):
        raise TaskFileError(f"{where}: no 'expected_answer' string")
    task_id = row.get("task_id")
    return Task(
        index,
        str(row.get("taskset") or taskset),
        str(task_id) if task_id else str(index),
        question,
        expected,
        dict(row),
    )


def _last_user_message(params: Any) -> str | None:
    messages = params.get("input") if isinstance(params, dict) else None
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return None
