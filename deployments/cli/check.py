"""`finsec check [CONFIG]`: every mistake in a serve config and the FINSEC_ environment at once, before anything
starts (`finsec serve` runs the same check); `--explain` lists every setting."""

from __future__ import annotations

import argparse
from pathlib import Path

from finsec_client.cli.usage import EXIT_OK

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "check",
        help="check a serve config and the FINSEC_ environment, every mistake at once",
        description="Read a serve config as `finsec serve` would, with FINSEC_<FIELD> variables overriding its "
        "args, and report every mistake at once, one line each, naming the file's key or the variable and what "
        "to change: keys Serve would drop, wrong types, unknown settings and variables, missing folders and "
        "files, and stores and endpoints that do not answer within a short timeout. Exit 0 when sound, 2 if "
        "not. `finsec serve` runs this check first.",
    )
    parser.add_argument(
        "config",
        nargs="?",
        type=Path,
        help="serve config YAML (default: the packaged serve.yaml; configs/serve.yaml here)",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="leave out whether the stores and endpoints answer (the file and the variables only)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="list every setting: its variable, its default and what it does; then exit",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="with --explain: as the table docs/configuration.md holds"
    )
    parser.set_defaults(run=run)


def run(options: argparse.Namespace) -> int:
    from deployments.cli.serve_config import describe_corpus, load_serve_config, packaged_config

    if options.explain:
        from deployments.cli.settings_check import explain, reference_markdown

        print(reference_markdown() if options.markdown else "\n".join(explain()), end="\n" * (not options.markdown))
        return EXIT_OK
    config = options.config or packaged_config()
    target = load_serve_config(config, reach=not options.offline)
    print(
        f"{config}: sound. Application {target.app_name!r} at {target.route_prefix} on port {target.port}; "
        f"corpus: {describe_corpus(target.settings)}"
    )
    return EXIT_OK
