"""`finsec view RUN.jsonl... [--out FILE]`: runs as one page a browser opens offline (finsec_client/view.py):
every episode's calls, answer, reward and grader, filters, a reward histogram and latency by route per run, side
by side, and each run's reward profile."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from finsec_client.cli.profile import check_threshold, parse_ks
from finsec_client.cli.reverify import load
from finsec_client.cli.usage import EXIT_OK, UsageError

__all__ = ["add_parser", "run_view"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "view",
        help="runs as one page: every episode's calls, answer, reward and grader, and the reward profile",
        description="Write run files (finsec rollouts' JSONL) as one HTML page that works offline, and open it: "
        "each run's episodes, rewards, masked share and latency by route, side by side; every episode's calls with "
        "what was sent and answered (as much as the run kept: finsec rollouts --excerpts), its answer, reward, "
        "why it was masked and the grader's explanation; filters by run, task, outcome, reward and tool error; and "
        "each run's reward profile (finsec profile).",
    )
    parser.add_argument("run_files", type=Path, nargs="+", metavar="RUN.jsonl", help="run files, side by side")
    parser.add_argument("--out", "-o", type=Path, help="the page to write (default: the first run file's, .html)")
    parser.add_argument("--force", action="store_true", help="replace --out when it exists")
    parser.add_argument("--no-open", action="store_true", help="write the page without opening it in a browser")
    parser.add_argument("-k", default="1,4,8", help="the k of the profile's pass@k (default 1,4,8)")
    parser.add_argument(
        "--threshold", type=float, default=1.0, help="the reward at which an episode passes (default 1)"
    )
    parser.set_defaults(run=run_view)


def run_view(options: argparse.Namespace) -> int:
    from finsec_client.records import read_run
    from finsec_client.view import RunFile, page

    ks = parse_ks(options.k)
    check_threshold(options.threshold)
    out: Path = options.out or options.run_files[0].with_suffix(".html")
    if out.exists() and not options.force:
        raise UsageError(f"view: {out} exists: --force replaces it, or give another --out")
    runs = []
    for path in options.run_files:
        records = load(path, "view")
        with path.open() as stream:
            runs.append(RunFile(path.name, read_run(stream), records))
    try:
        text = page(runs, ks, options.threshold)
    except ValueError as error:  # a hand-edited file: NaN or infinity, which JSON cannot carry
        raise UsageError(f"view: a run file holds a value the page cannot show ({error})") from None
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({sum(len(run.records) for run in runs)} episodes)", file=sys.stderr)
    if not options.no_open:
        webbrowser.open(out.resolve().as_uri())
    return EXIT_OK
