"""`finsec serve [CONFIG]`: the app from a serve config, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from dataclasses import replace
from pathlib import Path

from deployments.cli.serve_config import ServeTarget, describe_corpus, load_serve_config, packaged_config
from deployments.cli.server import running_app
from finsec_client.cli.usage import EXIT_OK, check_port_free

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve the app from a serve config until Ctrl-C",
        description="Start a local Ray cluster (or join one with --address) and deploy finsec-serve from a serve "
        "config: its application's args are the Settings (FINSEC_<FIELD> in the environment overrides them), "
        "its FinsecIngress options set replicas or autoscaling and ray_actor_options (admission is in the args), and "
        "http_options.port is the port. Ctrl-C or SIGTERM removes the app and its actors, and stops a cluster "
        "it started; the app's fences, episode seeds and cookie secret stay (see --purge). With --in-process, "
        "the same app runs in this one process instead, without Ray.",
    )
    parser.add_argument(
        "config",
        nargs="?",
        type=Path,
        help="serve config YAML (default: the packaged serve.yaml; configs/serve.yaml here)",
    )
    parser.add_argument("--port", type=int, help="HTTP port (default: the config's http_options.port)")
    parser.add_argument(
        "--address",
        help="join this running Ray cluster (e.g. ray://head:10001 or head:6379) "
        "instead of starting a local one; stopping leaves the cluster up",
    )
    parser.add_argument(
        "--purge",
        action="store_true",
        help="on stop, also delete the app's durable records: fences, episode seeds and the "
        "generated cookie secret (kept by default, so a restart honours them)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="serve the app from this one process with uvicorn: no Ray, shards in process, marks in "
        "memory (lost when it stops); the config's settings (admission included) and port apply, "
        "its FinsecIngress options do not",
    )
    parser.add_argument(
        "--ingress",
        choices=("haproxy", "proxy"),
        default="haproxy",
        help="a local cluster's ingress: Serve's HAProxy (default, faster) or its Python proxy",
    )
    parser.set_defaults(run=run)


def run(options: argparse.Namespace) -> int:
    target = load_serve_config(options.config or packaged_config(), reach=True)  # `finsec check`, before Ray starts
    _open_files_to_hard_limit()
    if options.port is not None:
        target = replace(target, port=options.port)
    if options.in_process:
        return _run_in_process(target)
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    with running_app(target, address=options.address, ingress=options.ingress, purge=options.purge) as url:
        for sig in (signal.SIGINT, signal.SIGTERM):  # again: ray.init installs its own SIGTERM handler (aborts)
            signal.signal(sig, on_signal)
        options_text = ", ".join(f"{k}={v}" for k, v in target.deployment_options.items()) or "defaults"
        print(f"finsec-serve is up at {url}  (application {target.app_name!r}; FinsecIngress {options_text})")
        print(f"corpus: {describe_corpus(target.settings)}")
        print(f"stop with Ctrl-C, or: kill -TERM {os.getpid()}", flush=True)
        while not stop.wait(0.5):  # a timed wait, so the signal handler runs promptly
            pass
    return EXIT_OK


def _open_files_to_hard_limit() -> None:
    """A connection is a file: every request waiting for a place holds one, and thousands may wait (macOS starts a
    shell at 256). The processes a local cluster starts inherit the raised limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(soft, 65536) if hard == resource.RLIM_INFINITY else hard
    if soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))  # the hard limit stays as it was
        except (ValueError, OSError):  # macOS refuses more than OPEN_MAX however high the hard limit
            pass


def _run_in_process(target: ServeTarget) -> int:
    from deployments.about import mark_store
    from deployments.inprocess import serve_in_process

    check_port_free(target.host, target.port)
    settings = target.settings

    def ready(url: str) -> None:
        marks = mark_store(settings) if settings.mark_store() else "memory"
        print(
            f"finsec-serve is up at {url}  (one process, no Ray; marks in {marks}; {settings.admission_running} "
            f"requests at once, the others waiting up to {settings.admission_wait_seconds:g} s)"
        )
        print(f"corpus: {describe_corpus(target.settings)}")
        print(f"stop with Ctrl-C, or: kill -TERM {os.getpid()}", flush=True)

    serve_in_process(settings, target.host, target.port, on_ready=ready)
    return EXIT_OK
