"""`finsec corpus write DIR | serve DIR | questions`: the embedded corpus as a folder, any such folder over
loopback HTTP, and the question set as a task file."""

from __future__ import annotations

import argparse
import ipaddress
import json
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finsec_client.cli.usage import EXIT_OK, UsageError, check_port_free

__all__ = ["add_parser", "client_settings", "run_questions", "run_serve", "run_write"]

if TYPE_CHECKING:
    from finsec_client.mirror_server import MirrorServer


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "corpus",
        help="write, serve or list the embedded corpus",
        description="The embedded corpus (a folder in the sec.gov URL layout) and its question set.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    write = actions.add_parser(
        "write",
        help="write the embedded corpus to a folder",
        description="Write the embedded corpus to DIR in the sec.gov URL layout "
        "(files/company_tickers.json, submissions/, Archives/edgar/data/, questions.json).",
    )
    write.add_argument("dir", type=Path)
    write.set_defaults(run=run_write)
    serve = actions.add_parser(
        "serve",
        help="serve a sec.gov-layout folder over HTTP on loopback",
        description="Serve DIR (a folder in the sec.gov URL layout) over HTTP on 127.0.0.1 until Ctrl-C, as a "
        "stand-in for www.sec.gov and data.sec.gov. It prints the settings that point a finsec-serve app at it: "
        "documents over the live-EDGAR path (edgar_source: live, the two base URLs, fetch_trusted_networks), "
        "edgar_search over the same folder (corpus_dir).",
    )
    serve.add_argument("dir", type=Path)
    serve.add_argument("--port", type=int, default=8800, help="port (default 8800; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    serve.set_defaults(run=run_serve)
    questions = actions.add_parser(
        "questions",
        help="print the question set as JSONL (a --tasks file)",
        description="Print the embedded corpus's questions, one JSON object a line, "
        "in the format `finsec rollouts --tasks` reads.",
    )
    questions.set_defaults(run=run_questions)


def run_write(options: argparse.Namespace) -> int:
    from finsec.corpus.generate import write_corpus

    if options.dir.exists() and not options.dir.is_dir():
        raise UsageError(f"{options.dir} exists and is not a folder")
    print(write_corpus(options.dir))
    return EXIT_OK


def run_serve(options: argparse.Namespace) -> int:
    from finsec_client.mirror_server import MirrorServer, NotAMirror, NotLoopback

    if options.port:
        check_port_free(options.host, options.port)
    try:
        server = MirrorServer(options.dir, host=options.host, port=options.port)
    except (NotAMirror, NotLoopback) as error:
        raise UsageError(str(error)) from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        print(f"serving {server.root} at {server.url}")
        print("use it from finsec-serve with (config args or FINSEC_<FIELD>):")
        for name, value in client_settings(server).items():
            print(f"  {name}: {json.dumps(value)}")  # JSON: YAML, and (shell-quoted) FINSEC_<FIELD> values
        print("stop with Ctrl-C", flush=True)
        while not stop.wait(0.5):  # a timed wait, so the signal handler runs promptly
            pass
    return EXIT_OK


def client_settings(server: MirrorServer) -> dict[str, Any]:
    """The settings that make an app read `server` as it reads a corpus folder. Documents come over the
    live-EDGAR path (rate limit, retries, the fetch guard) from the mirror; edgar_search, which in its default
    `local` mode needs a folder to index, searches the same folder, so results match the folder's."""
    return {
        "edgar_source": "live",
        "sec_www_base_url": server.url,
        "sec_data_base_url": server.url,
        "fetch_trusted_networks": [str(ipaddress.ip_network(server.host))],  # /32, or /128 for ::1
        "corpus_dir": str(server.root),
    }


def run_questions(options: argparse.Namespace) -> int:
    from finsec.corpus.generate import questions
    from finsec_client.cli.tasks import write_jsonl

    write_jsonl(questions())
    return EXIT_OK
