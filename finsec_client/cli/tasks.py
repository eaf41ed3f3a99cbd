"""`finsec tasks nemo-gym`: a task file as the JSONL rows NeMo Gym's rollout collection and verifiers' NeMo Gym
taskset read (finsec_client/nemo_gym_rows.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from finsec_client.cli.usage import EXIT_OK, UsageError


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("tasks", help="convert a task file for a trainer",
                                 description="Task files (JSONL: question, expected_answer, any other key as task "
                                 "data) as the rows a trainer's own tools read.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    nemo_gym = actions.add_parser(
        "nemo-gym", help="as NeMo Gym's JSONL rows (also what verifiers' NeMo Gym taskset reads)",
        description="Print the tasks as NeMo Gym rows, one JSON object a line: flat rows (the task plus "
        "responses_create_params: the instructions, the question and the tools), which finance_agent, "
        "single_agent_turn_legacy and verifiers play; or, with --episode, the task_id/task_input rows of the "
        "single_agent_turn Environment Server.")
    nemo_gym.add_argument("--tasks", type=Path, help="a JSONL task file (default: the embedded corpus's questions)")
    nemo_gym.add_argument("--episode", action="store_true", help="single_agent_turn's rows instead of flat ones")
    nemo_gym.add_argument("--out", "-o", type=Path, help="write here instead of standard output")
    nemo_gym.set_defaults(run=run_nemo_gym)


def run_nemo_gym(options: argparse.Namespace) -> int:
    from finsec_client.nemo_gym_rows import episode_row, flat_row
    from finsec_client.tasks import TaskFileError, embedded_tasks, load_tasks

    try:
        tasks = load_tasks(options.tasks) if options.tasks else embedded_tasks()
    except TaskFileError as error:
        raise UsageError(str(error)) from None
    convert = episode_row if options.episode else flat_row
    write_jsonl((convert(task) for task in tasks), options.out)
    return EXIT_OK


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path | None = None) -> None:
    """Rows to `path`, or to standard output, where a reader that stops early (`| head`) ends the command
    quietly instead of with a BrokenPipeError."""
    if path is not None:
        try:
            with path.open("w") as out:
                out.writelines(json.dumps(row) + "\n" for row in rows)
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror}") from None
        return
    try:
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit: point stdout at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
