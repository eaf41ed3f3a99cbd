"""`finsec store check|acknowledge-loss [CONFIG]`: the durable mark store of the app a serve config deploys.

When the store loses records while the app runs (its marker is gone: a Redis restarted without persistence, an
eviction, a failover to an empty replica), the app refuses new sessions, since a closed ID can no longer be proven
fenced. `acknowledge-loss` is the operator's word that this is accepted (the rollouts that were in flight have
been given up, or their IDs will not be seeded again): it writes the marker again, and seeds are served at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from finsec_client.cli.usage import EXIT_FAILED, EXIT_OK, UsageError, one_line

__all__ = ["add_parser", "run_store"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "store",
        help="check the durable mark store, or acknowledge that it lost records",
        description="The app's durable mark store (fences, episode seeds, the cookie secret), as the serve config "
        "and FINSEC_<FIELD> name it: Redis (mark_store_url), or the GCS of the Ray cluster at --address.",
    )
    parser.add_argument(
        "action",
        choices=("check", "acknowledge-loss"),
        help="check: is the marker there, and can the store forget? acknowledge-loss: accept a "
        "loss the app reported, so that it seeds new sessions again",
    )
    parser.add_argument("config", nargs="?", type=Path, help="serve config (default: the packaged serve.yaml)")
    parser.add_argument(
        "--address",
        default="auto",
        help="the Ray cluster whose GCS keeps the marks, when "
        "mark_store_url is unset (default: the cluster this machine is part of)",
    )
    parser.set_defaults(run=run_store)


def run_store(options: argparse.Namespace) -> int:
    from deployments.cli.serve_config import load_serve_config, packaged_config

    settings = load_serve_config(options.config or packaged_config()).settings
    store, where = _open(settings, options.address), _where(settings)
    try:
        if options.action == "acknowledge-loss":
            store.acknowledge_loss()
            print(f"{where}: loss acknowledged, the marker is written again; new sessions are seeded from now on")
            return EXIT_OK
        present = asyncio.run(store.marker_present())
        problem = store.durability_problem() if settings.mark_store_durability_check else None
    except Exception as error:  # an unreachable or refusing store: say which, in one line
        raise UsageError(f"{where} could not be reached: {one_line(f'{type(error).__name__}: {error}')}") from None
    print(f"{where}: marker {'present' if present else 'GONE: the store lost records (acknowledge-loss)'}")
    print(
        f"{where}: {'may forget: ' + problem if problem else 'cannot forget (noeviction, append-only file)'}"
        if settings.mark_store()
        else f"{where}: as durable as the cluster's GCS"
    )
    return EXIT_OK if present and problem is None else EXIT_FAILED


def _where(settings) -> str:
    from deployments.about import mark_store

    return f"mark store {mark_store(settings)} of app {settings.app_name!r}"


def _open(settings, address: str):
    from deployments.mark_store import durable_records

    if settings.mark_store() is None:
        import ray

        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)  # what Ray makes of "ERROR"
        except Exception as error:
            raise UsageError(
                f"no Ray cluster at {address} to read the GCS mark store from ({one_line(str(error))}); pass --address"
            ) from None
    return durable_records(settings)
