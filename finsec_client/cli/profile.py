"""`finsec profile RUN.jsonl... [--json]`: per task of one or more runs, pass@1 and pass@k, the reward's mean and
spread, masked episodes, tool calls and GRPO groups with no variance (finsec_client/profile.py), hardest first.
`finsec tasks select` picks tasks by the pass rates a profile measured."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from finsec_client.cli.reverify import load
from finsec_client.cli.usage import EXIT_OK, UsageError

__all__ = ["add_parser", "check_threshold", "parse_ks", "run_profile"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "profile",
        help="per-task pass rates and reward of runs: what each task still teaches",
        description="Read run files (finsec rollouts' JSONL) and print, per task: scored episodes, pass@1 and "
        "the unbiased pass@k, the reward's mean and standard deviation, the masked share, tool calls an episode, "
        "and the GRPO groups (-r K) whose rewards were all equal. Masked and failed episodes count in no rate. "
        "With --json, the profile `finsec tasks select --profile` reads.",
    )
    parser.add_argument("run_files", type=Path, nargs="+", metavar="RUN.jsonl", help="run files, taken together")
    parser.add_argument("-k", default="1,4,8", help="the k of pass@k, comma-separated (default 1,4,8)")
    parser.add_argument(
        "--threshold", type=float, default=1.0, help="the reward at which an episode passes (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="print the profile as JSON")
    parser.add_argument("--out", "-o", type=Path, help="write there instead of standard output")
    parser.set_defaults(run=run_profile)


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"-k {text!r}: give whole numbers such as 1,4,8") from None
    if not ks or ks[0] < 1:
        raise UsageError(f"-k {text!r}: each k is at least 1")
    return ks


def check_threshold(threshold: float) -> None:
    """The reward at which an episode passes, as profile, view and tasks measure take it (NaN refused too)."""
    if not 0 < threshold <= 1:
        raise UsageError(f"--threshold {threshold:g}: a reward between 0 (exclusive) and 1")


def run_profile(options: argparse.Namespace) -> int:
    from finsec_client.profile import as_json, profile, render

    ks = parse_ks(options.k)
    check_threshold(options.threshold)
    records = [record for path in options.run_files for record in load(path, "profile")]
    profiles = profile(records, ks, options.threshold)
    text = (
        json.dumps(as_json(profiles, options.threshold), indent=1) + "\n"
        if options.json
        else render(profiles, ks, options.threshold)
    )
    if options.out is not None:
        options.out.write_text(text)
    else:
        print(text, end="")
    return EXIT_OK
