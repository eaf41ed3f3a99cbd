"""The `finsec` command: the server's own commands (serve, check, store) beside the client's (finsec_client.cli),
and `rollouts` able to start the app itself when it is given no --url.

    finsec serve [CONFIG]           the app from a serve config until Ctrl-C (local cluster, --address, or
                                    --in-process: one process, no Ray); CONFIG defaults to the packaged one
    finsec check [CONFIG]           every mistake in a serve config and the FINSEC_ environment at once
    finsec store check|acknowledge-loss [CONFIG]   the durable mark store: can it forget; accept a loss
    finsec rollouts, reverify, profile, view, status, corpus, tasks, recipe   the client's (finsec_client/cli)

Answering `--help` loads neither Ray nor the app: each command loads what it runs when it runs.
"""

from __future__ import annotations

import argparse
import functools
import sys
from types import SimpleNamespace

from deployments.cli import check, serve, store
from deployments.cli.server import LOCAL_SERVER
from finsec_client.cli import corpus, parser, profile, recipe, reverify, rollouts, run_command, status, tasks, view

__all__ = ["COMMANDS", "entry_point", "main"]

COMMANDS = (
    serve,
    check,
    SimpleNamespace(add_parser=functools.partial(rollouts.add_parser, local_server=LOCAL_SERVER)),
    reverify,
    profile,
    view,
    status,
    store,
    corpus,
    tasks,
    recipe,
)


class _Version(argparse.Action):
    """The version, computed when asked for: it digests the server's code, which answering --help never loads."""

    def __call__(self, parser, namespace, values, option_string=None):
        from deployments.about import version

        parser.exit(message=f"finsec-serve {version()}\n")


def main(argv: list[str] | None = None) -> int:
    return run_command(parser(COMMANDS, version=_Version), argv)


def entry_point() -> None:
    sys.exit(main())
