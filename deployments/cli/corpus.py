"""`finsec corpus write DIR | serve DIR | questions`: the embedded corpus as a folder, any such folder over
loopback HTTP, and the question set as a task file."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from .errors import EXIT_OK, UsageError, check_port_free


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("corpus", help="write, serve or list the embedded corpus",
                                 description="The embedded corpus (a folder in the sec.gov URL layout) and its "
                                 "question set.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    write = actions.add_parser("write", help="write the embedded corpus to a folder",
                               description="Write the embedded corpus to DIR in the sec.gov URL layout "
                               "(files/company_tickers.json, submissions/, Archives/edgar/data/, questions.json).")
    write.add_argument("dir", type=Path)
    write.set_defaults(run=run_write)
    serve = actions.add_parser(
        "serve", help="serve a sec.gov-layout folder over HTTP on loopback",
        description="Serve DIR (a folder in the sec.gov URL layout) over HTTP on 127.0.0.1 until Ctrl-C, as a "
        "stand-in for www.sec.gov and data.sec.gov: point a server at it with edgar_source: live, "
        "sec_www_base_url and sec_data_base_url set to the printed URL, and fetch_trusted_networks: "
        "[\"127.0.0.1/32\"].")
    serve.add_argument("dir", type=Path)
    serve.add_argument("--port", type=int, default=8800, help="port (default 8800; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    serve.set_defaults(run=run_serve)
    questions = actions.add_parser("questions", help="print the question set as JSONL (a --tasks file)",
                                   description="Print the embedded corpus's questions, one JSON object a line, "
                                   "in the format `finsec rollouts --tasks` reads.")
    questions.set_defaults(run=run_questions)


def run_write(options: argparse.Namespace) -> int:
    from ..corpus.generate import write_corpus

    if options.dir.exists() and not options.dir.is_dir():
        raise UsageError(f"{options.dir} exists and is not a folder")
    print(write_corpus(options.dir))
    return EXIT_OK


def run_serve(options: argparse.Namespace) -> int:
    from ..corpus.mirror_server import MirrorServer, NotAMirror, NotLoopback

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
        print("  edgar_source: live")
        print(f"  sec_www_base_url: {server.url}")
        print(f"  sec_data_base_url: {server.url}")
        print(f'  fetch_trusted_networks: ["{server.host}/32"]')
        print("stop with Ctrl-C", flush=True)
        while not stop.wait(0.5):  # a timed wait, so the signal handler runs promptly
            pass
    return EXIT_OK


def run_questions(options: argparse.Namespace) -> int:
    from ..corpus.generate import questions

    for row in questions():
        sys.stdout.write(json.dumps(row) + "\n")
    return EXIT_OK
