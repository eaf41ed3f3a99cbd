"""The client's commands of `finsec`: drive rollouts against a server, grade a run again, read a server's state,
and handle the embedded corpus, tasks and recipes. They speak to a server over HTTP and load none of it; the
`finsec` command itself (deployments/cli) adds the server's own commands (serve, check, store) and lets
`rollouts` start a server when it is given no --url.

    finsec rollouts [...]           N episodes at concurrency C against --url (or a server `finsec` starts)
    finsec reverify RUN.jsonl       a run's episodes graded again by the current grader: what moved and why
    finsec profile RUN.jsonl...     per task: pass@1, pass@k, reward mean and spread, masked share, flat groups
    finsec view RUN.jsonl...        runs as one page that works offline: every episode's calls, answer and reward
    finsec status --url URL         what a running server is: version, settings, actors, sessions, fences
    finsec corpus write|serve|questions
    finsec tasks nemo-gym [--tasks FILE] [--episode]   a task file as NeMo Gym's (and verifiers') rows
    finsec recipe nemo-gym DIR --finsec-url URL --model-url URL --model NAME   a NeMo Gym folder for a running server

A usage error (bad URL, no server, bad config, port in use) is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from finsec_client.cli import corpus, profile, recipe, reverify, rollouts, status, tasks, view
from finsec_client.cli.usage import EXIT_USAGE, UsageError, did_you_mean

__all__ = ["COMMANDS", "entry_point", "main", "parser", "run_command"]


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too), which also suggests the flag a misspelt one was meant to be."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            flags = _flags(self)
            for given in message.removeprefix("unrecognized arguments: ").split():
                if given.startswith("--"):
                    message += did_you_mean(given.split("=")[0], flags, cutoff=0.7)
        super().error(message)


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every long flag of the parser and its subcommands."""
    flags = [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            flags += [flag for sub in action.choices.values() for flag in _flags(sub)]
    return sorted(set(flags))


# The client's commands in the order `finsec --help` lists them; each module has add_parser(commands).
COMMANDS = (rollouts, reverify, profile, view, status, corpus, tasks, recipe)


def parser(commands=COMMANDS, version: type[argparse.Action] | None = None) -> argparse.ArgumentParser:
    """`finsec`'s parser over these command modules (the server's `finsec` passes its own and the client's)."""
    top = _Parser(
        prog="finsec",
        description="finsec-serve: NeMo Gym's finance_sec_search resources server on Ray Serve, "
        "and the rollout drivers that exercise it.",
    )
    if version is not None:
        top.add_argument("--version", action=version, nargs=0, help="show the version and the code's digest, then exit")
    subcommands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        command.add_parser(subcommands)
    return top


def main(argv: list[str] | None = None) -> int:
    """The client's commands alone (the installed `finsec` is deployments.cli's, which adds the server's)."""
    return run_command(parser(), argv)


def run_command(top: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    options = top.parse_args(argv)
    try:
        return options.run(options)
    except UsageError as error:
        for line in str(error).splitlines() or [type(error).__name__]:  # several mistakes: one line each
            print(f"finsec: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("finsec: interrupted", file=sys.stderr)
        return 130


def entry_point() -> None:
    sys.exit(main())
