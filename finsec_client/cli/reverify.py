"""`finsec reverify RUN.jsonl [--max-answer-chars N] [--json]`: grade a run's episodes again with the current
grader, without a server, and print the episodes whose reward moved and why, then a one-line summary (rules in
finsec_client/reverify.py). Exit status 0, or 2 when the file cannot be read as a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from finsec_client.cli.usage import EXIT_OK, UsageError, one_line
from finsec_client.records import EpisodeRecord, read_records

__all__ = ["add_parser", "load", "run_reverify"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "reverify",
        help="grade a run's episodes again with the current grader",
        description="Grade every scored episode of a run file (finsec rollouts' JSONL) "
        "again with this code's deterministic grader, in this process, and print each "
        "episode whose reward moved: the rewards, the grader versions and why; then a "
        "summary. Masked and failed episodes are skipped.",
    )
    parser.add_argument("run_file", type=Path, metavar="RUN.jsonl", help="a run's episodes JSONL")
    parser.add_argument(
        "--max-answer-chars",
        type=int,
        metavar="N",
        help="grade with this answer cap (default: the one each episode's verify row names, else the grader's default)",
    )
    parser.add_argument("--json", action="store_true", help="print the moved episodes and the summary as JSON")
    parser.set_defaults(run=run_reverify)


def run_reverify(options: argparse.Namespace) -> int:
    from finsec_client.reverify import reverify  # loads the grader only when asked

    if options.max_answer_chars is not None and options.max_answer_chars < 1:
        raise UsageError(f"--max-answer-chars {options.max_answer_chars}: give at least 1")
    report = reverify(load(options.run_file), max_answer_chars=options.max_answer_chars)
    print(json.dumps(report.to_json(), indent=1, ensure_ascii=False) if options.json else report.render())
    return EXIT_OK


def load(path: Path, command: str = "reverify") -> list[EpisodeRecord]:
    """The file's episode records; a usage error, in one line, for anything else."""
    try:
        with path.open() as stream:
            records = read_records(stream)
    except FileNotFoundError:
        raise UsageError(f"{command}: {path} does not exist") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        raise UsageError(
            f"{command}: {path} is not an episodes JSONL of finsec rollouts "
            f"({one_line(f'{type(error).__name__}: {error}')})"
        ) from None
    if not records:
        raise UsageError(f"{command}: {path} holds no episodes")
    return records
