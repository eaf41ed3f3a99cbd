"""The `finsec` command: serve the app, drive rollouts against it, and handle the embedded corpus.

    finsec serve [CONFIG]           the app from a serve config until Ctrl-C (local cluster, --address, or
                                    --in-process: one process, no Ray); CONFIG defaults to the packaged one
    finsec check [CONFIG]           every mistake in a serve config and the FINSEC_ environment at once
    finsec rollouts [...]           N episodes at concurrency C against --url or an in-process server
    finsec reverify RUN.jsonl       a run's episodes graded again by the current grader: what moved and why
    finsec status --url URL         what a running server is: version, settings, actors, sessions, fences
    finsec store check|acknowledge-loss [CONFIG]   the durable mark store: can it forget; accept a loss
    finsec corpus write|serve|questions
    finsec tasks nemo-gym [--tasks FILE] [--episode]   a task file as NeMo Gym's (and verifiers') rows
    finsec recipe nemo-gym DIR --finsec-url URL --model-url URL --model NAME   a NeMo Gym folder for a running server

A usage error (bad URL, no server, bad config, port in use) is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from finsec_client.cli import check, corpus, recipe, reverify, rollouts, serve, status, store, tasks
from finsec_client.cli.usage import EXIT_USAGE, UsageError, did_you_mean

__all__ = ["entry_point", "main", "parser"]


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


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="finsec",
        description="finsec-serve: NeMo Gym's finance_sec_search resources server on Ray Serve, "
        "and the rollout drivers that exercise it.",
    )
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and the code's digest, then exit")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve.add_parser(commands)
    check.add_parser(commands)
    rollouts.add_parser(commands)
    reverify.add_parser(commands)
    status.add_parser(commands)
    store.add_parser(commands)
    corpus.add_parser(commands)
    tasks.add_parser(commands)
    recipe.add_parser(commands)
    return top


class _Version(argparse.Action):
    """The version, computed when asked for: it digests the server's code, which the command line never loads."""

    def __call__(self, parser, namespace, values, option_string=None):
        from deployments.about import version

        parser.exit(message=f"finsec-serve {version()}\n")


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
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
