"""`finsec tasks build`: verified tasks from filings' inline XBRL (finsec/taskgen), split by company and written as
the project's task files and NeMo Gym's rows. `finsec tasks nemo-gym`: a task file as the JSONL rows NeMo Gym's
rollout collection and verifiers' NeMo Gym taskset read (finsec_client/nemo_gym_rows.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from finsec_client.cli.usage import EXIT_OK, UsageError

__all__ = ["add_parser", "run_build", "run_measure", "run_nemo_gym", "run_select", "write_jsonl"]

_SEC_WWW, _SEC_DATA = "https://www.sec.gov", "https://data.sec.gov"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "tasks",
        help="convert a task file for a trainer",
        description="Task files (JSONL: question, expected_answer, any other key as task "
        "data) as the rows a trainer's own tools read.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    nemo_gym = actions.add_parser(
        "nemo-gym",
        help="as NeMo Gym's JSONL rows (also what verifiers' NeMo Gym taskset reads)",
        description="Print the tasks as NeMo Gym rows, one JSON object a line: flat rows (the task plus "
        "responses_create_params: the instructions, the question and the tools), which finance_agent, "
        "single_agent_turn_legacy and verifiers play; or, with --episode, the task_id/task_input rows of the "
        "single_agent_turn Environment Server.",
    )
    nemo_gym.add_argument("--tasks", type=Path, help="a JSONL task file (default: the embedded corpus's questions)")
    nemo_gym.add_argument("--episode", action="store_true", help="single_agent_turn's rows instead of flat ones")
    nemo_gym.add_argument("--out", "-o", type=Path, help="write here instead of standard output")
    nemo_gym.set_defaults(run=run_nemo_gym)

    build = actions.add_parser(
        "build",
        help="verified tasks from filings' inline XBRL, split by company",
        description="Build tasks whose answers are the filings' own tagged facts, each kept only when the value "
        "as tagged and the value as printed (scaled as its table says) agree. Writes DIR/{train,validation,test}"
        ".jsonl (task files for `finsec rollouts --tasks`; a split no company fell in is not written), "
        "DIR/nemo-gym/<split>.jsonl (NeMo Gym's rows, which "
        "verifiers' nemo_gym taskset reads too) and DIR/report.{md,json}.",
    )
    where = build.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--corpus",
        type=Path,
        help="a folder in the sec.gov layout (files/company_tickers.json, submissions/, Archives/)",
    )
    where.add_argument("--live", action="store_true", help="live EDGAR, rate-limited, through the fetch guard")
    build.add_argument("--out", "-o", type=Path, required=True, help="the folder to write")
    build.add_argument(
        "--tickers", help="comma-separated companies (default: every company of a --corpus; required with --live)"
    )
    build.add_argument("--forms", default="10-K,10-Q", help="forms to read (default 10-K,10-Q)")
    build.add_argument(
        "--filings-per-form", type=int, default=1, help="each company's newest N filings of each form (default 1)"
    )
    build.add_argument(
        "--address",
        help="build on a Ray cluster, one filing a task: its address as `ray.init` takes it (auto, "
        "ray://HOST:10001, HOST:6379), or `local` for a new cluster on this machine (default: this process)",
    )
    build.add_argument(
        "--workers",
        type=int,
        help="with --address: the CPUs a build keeps busy, twice as many filings in flight (default: the "
        "cluster's CPUs); with `local`, the new cluster's size",
    )
    build.add_argument("--hold-out", default="", help="comma-separated companies that go to the test split")
    build.add_argument(
        "--split",
        default="0.8,0.1,0.1",
        help="train,validation,test fractions of the other companies, by a digest of the CIK (default 0.8,0.1,0.1)",
    )
    build.add_argument(
        "--user-agent",
        default=os.environ.get("FINSEC_USER_AGENT"),
        help="with --live: your name and contact email, as SEC asks (or FINSEC_USER_AGENT)",
    )
    build.add_argument("--sec-www-url", default=_SEC_WWW, help="with --live: www.sec.gov, or a mirror of it")
    build.add_argument("--sec-data-url", default=_SEC_DATA, help="with --live: data.sec.gov, or a mirror of it")
    build.add_argument(
        "--requests-per-second",
        type=int,
        default=5,
        help="with --live: EDGAR requests per second (SEC allows 10; default 5)",
    )
    build.set_defaults(run=run_build)

    chosen = actions.add_parser(
        "select",
        help="the tasks whose measured pass rate lies in a range: a curriculum",
        description="Write the tasks of a task file whose pass@1 in a profile (finsec profile --json) lies "
        "between --min-pass and --max-pass, and say how many were left out and why (too hard, too easy, not "
        "measured).",
    )
    chosen.add_argument("--profile", type=Path, required=True, help="a profile from `finsec profile --json`")
    chosen.add_argument("--tasks", type=Path, help="a JSONL task file (default: the embedded corpus's questions)")
    chosen.add_argument("--min-pass", type=float, default=0.0, help="the lowest pass@1 kept (default 0)")
    chosen.add_argument("--max-pass", type=float, default=1.0, help="the highest pass@1 kept (default 1)")
    chosen.add_argument("--out", "-o", type=Path, help="write here instead of standard output")
    chosen.set_defaults(run=run_select)

    measure = actions.add_parser(
        "measure",
        help="pass rates of played tasks by kind and difficulty, written into the task rows",
        description="Read run files that played a task file (finsec rollouts --tasks FILE, any policy, -r K for "
        "K plays a task) and print each group of tasks' measured pass@1 by kind and difficulty (documents, facts, "
        "operations), easiest first; with --out, write the task file again with each task's `measured` pass@1 "
        "and episodes, for `finsec tasks select` or a curriculum of your own.",
    )
    measure.add_argument("run_files", type=Path, nargs="+", metavar="RUN.jsonl", help="run files, taken together")
    measure.add_argument("--tasks", type=Path, required=True, help="the task file the runs played")
    measure.add_argument("--threshold", type=float, default=1.0, help="the reward at which an episode passes")
    measure.add_argument("--out", "-o", type=Path, help="the task rows with their measured pass rates")
    measure.set_defaults(run=run_measure)


def run_nemo_gym(options: argparse.Namespace) -> int:
    from finsec_client.nemo_gym_rows import episode_row, flat_row
    from finsec_client.tasks import TaskFileError, embedded_tasks, load_tasks

    try:
        tasks = load_tasks(options.tasks) if options.tasks else embedded_tasks()
    except TaskFileError as error:
        raise UsageError(str(error)) from None
    convert = episode_row if options.episode else flat_row
    write_jsonl((convert(task) for task in tasks), options.out)
    return EXIT_OK


def run_build(options: argparse.Namespace) -> int:
    from finsec.taskgen.compare import comparison_tasks
    from finsec.taskgen.filings import read_filings
    from finsec.taskgen.manifest import document_digest, write_manifest
    from finsec.taskgen.parallel import in_order, local_builds, ray_builds
    from finsec.taskgen.periods import growth_tasks, quarter_tasks
    from finsec.taskgen.report import BuildReport
    from finsec.taskgen.split import SPLITS, split_of
    from finsec_client.nemo_gym_rows import flat_row
    from finsec_client.tasks import task_of

    if options.workers is not None and not options.address:
        raise UsageError("--workers needs --address: it says how many filings a Ray cluster builds at once")
    for flag, value in (
        ("--filings-per-form", options.filings_per_form),
        ("--requests-per-second", options.requests_per_second),
        ("--workers", 1 if options.workers is None else options.workers),
    ):
        if value < 1:
            raise UsageError(f"{flag} {value}: give a whole number of at least 1")
    fractions = _fractions(options.split)
    tickers = [t.strip().upper() for t in options.tickers.split(",") if t.strip()] if options.tickers else None
    forms = [f.strip().upper() for f in options.forms.split(",") if f.strip()]
    held_out = [t.strip().upper() for t in options.hold_out.split(",") if t.strip()]
    _check_out(options.out, SPLITS)
    source = _source(options, tickers)
    report = BuildReport()
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SPLITS}
    built_filings: list[tuple[Any, Any, str]] = []  # (Source, Built, split), for the kinds across filings
    inputs: list[dict[str, Any]] = []  # each filing read, and the digest of its text: the manifest's inputs

    async def build() -> None:
        filings = read_filings(source, tickers, forms=forms, per_form=options.filings_per_form)
        try:
            async for filing, document, built in in_order(filings, builds):
                if document is None or built is None:
                    report.unreadable.append(filing.url)
                    continue
                inputs.append(
                    {
                        "ticker": filing.ticker,
                        "cik": filing.cik,
                        "form": filing.form,
                        "accession": filing.accession,
                        "url": filing.url,
                        "sha256": document_digest(document),
                    }
                )
                split = split_of(filing.cik, filing.ticker, fractions, held_out)
                report.add(filing, built, split)
                rows[split] += [{**task, "split": split} for task in built.tasks]
                built_filings.append((filing, built, split))
        finally:
            await source.aclose()

    try:
        builds = ray_builds(options.address, options.workers) if options.address else local_builds()
    except ConnectionError as error:
        raise UsageError(f"--address {options.address}: cannot reach a Ray cluster: {error}") from None
    try:
        asyncio.run(build())
    except RuntimeError as error:  # the company registry could not be read: one line, not a traceback
        raise UsageError(f"cannot read filings: {error}") from None
    finally:
        builds.close()
    # Across filings: two companies' 10-Ks within a split, a company's 10-Ks of different years, its 10-Qs a year
    # apart.
    for task in [*comparison_tasks(built_filings), *growth_tasks(built_filings), *quarter_tasks(built_filings)]:
        rows[task["split"]].append(task)
        report.across[task["kind"]] += 1
    out = options.out
    try:
        (out / "nemo-gym").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot write {out}: {error.strerror}") from None
    written = []
    for split, tasks in rows.items():
        if not tasks:  # no company fell in it: a task file holds at least one task, and an earlier build's goes
            for stale in (out / f"{split}.jsonl", out / "nemo-gym" / f"{split}.jsonl"):
                stale.unlink(missing_ok=True)
            continue
        write_jsonl(tasks, out / f"{split}.jsonl")
        write_jsonl((flat_row(task_of(task, split)) for task in tasks), out / "nemo-gym" / f"{split}.jsonl")
        written += [out / f"{split}.jsonl", out / "nemo-gym" / f"{split}.jsonl"]
    (out / "report.json").write_text(json.dumps(report.to_json(), indent=1) + "\n")
    (out / "report.md").write_text(report.render())
    write_manifest(out, inputs, rows, [*written, out / "report.json"])
    sys.stdout.write(report.render())
    return EXIT_OK


def _check_out(out: Path, splits: Iterable[str]) -> None:
    """A build writes over an earlier build's files, and nobody else's: --out must hold only those, if anything."""
    files = {f"{split}.jsonl" for split in splits}
    owned = {".": files | {"nemo-gym", "report.json", "report.md", "manifest.json"}, "nemo-gym": files}
    others = sorted(
        str(path.relative_to(out))
        for folder, names in owned.items()
        if (out / folder).is_dir()
        for path in (out / folder).iterdir()
        if path.name not in names
    )
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file: give a folder")
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise UsageError(
            f"--out {out} holds files a tasks build did not write ({shown}): give a new or empty "
            "folder, or one an earlier build wrote"
        )


def _fractions(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(part) for part in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3 or any(not 0 <= p <= 1 for p in parts) or sum(parts) <= 0:
        raise UsageError(f"--split {text!r}: give three fractions train,validation,test, e.g. 0.8,0.1,0.1")
    return parts


def _source(options: argparse.Namespace, tickers: list[str] | None):
    """A mirror folder, or live EDGAR through the guarded fetcher; a loopback mirror URL is trusted by name."""
    from finsec.edgar.limiter import LocalRateLimiter
    from finsec.edgar.live import LiveSource
    from finsec.edgar.source import MirrorSource
    from finsec.net.policy import FetchPolicy

    if options.corpus is not None:
        if not (options.corpus / "files" / "company_tickers.json").is_file():
            raise UsageError(
                f"--corpus {options.corpus}: not a folder in the sec.gov layout (no files/company_tickers.json)"
            )
        return MirrorSource(options.corpus)
    if not tickers:
        raise UsageError("--live needs --tickers: live EDGAR lists every listed company")
    if not options.user_agent:
        raise UsageError("--live needs --user-agent (or FINSEC_USER_AGENT): SEC asks for your name and contact email")
    urls = (options.sec_www_url, options.sec_data_url)
    trusted = ["127.0.0.0/8", "::1/128"] if all(_loopback(url) for url in urls) else []
    limiter = LocalRateLimiter(options.requests_per_second, 1.0)
    policy = FetchPolicy(
        sec_base_urls=urls,
        max_bytes=20_000_000,
        timeout_seconds=30.0,
        user_agent=options.user_agent,
        limiter=limiter,
        trusted_networks=trusted,
    )
    return LiveSource(fetcher=policy.sec_fetcher(), www_base_url=urls[0], data_base_url=urls[1], limiter=limiter)


def _loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path | None = None) -> None:
    """Rows to `path`, or to standard output, where a reader that stops early (`| head`) ends the command
    quietly instead of with a BrokenPipeError."""
    if path is not None:
        try:
            with path.open("w") as out:
                out.writelines(json.dumps(row) + "\n" for row in rows)
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror}") from None
        return
    try:
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit: point stdout at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run_select(options: argparse.Namespace) -> int:
    from finsec_client.profile import from_json, select
    from finsec_client.tasks import TaskFileError, embedded_tasks, load_tasks

    if not 0 <= options.min_pass <= options.max_pass <= 1:
        raise UsageError(f"--min-pass {options.min_pass:g} --max-pass {options.max_pass:g}: 0 <= min <= max <= 1")
    try:
        profiles = from_json(json.loads(options.profile.read_text()))
    except FileNotFoundError:
        raise UsageError(f"--profile {options.profile} does not exist") from None
    except (ValueError, TypeError, AttributeError) as error:
        raise UsageError(f"--profile {options.profile} is not a `finsec profile --json` file ({error})") from None
    try:
        tasks = load_tasks(options.tasks) if options.tasks else embedded_tasks()
    except TaskFileError as error:
        raise UsageError(str(error)) from None
    chosen = select(tasks, profiles, options.min_pass, options.max_pass)
    write_jsonl((task.data for task in chosen.tasks), options.out)
    left = ", ".join(f"{count} {why}" for why, count in chosen.left_out.items() if count) or "none"
    print(f"selected {len(chosen.tasks)} of {len(tasks)} tasks; left out: {left}", file=sys.stderr)
    return EXIT_OK


def run_measure(options: argparse.Namespace) -> int:
    from finsec_client.cli.profile import check_threshold
    from finsec_client.cli.reverify import load
    from finsec_client.profile import by_difficulty, profile, render_difficulty
    from finsec_client.tasks import TaskFileError, load_tasks

    check_threshold(options.threshold)
    try:
        tasks = load_tasks(options.tasks)
    except TaskFileError as error:
        raise UsageError(str(error)) from None
    records = [record for path in options.run_files for record in load(path, "tasks measure")]
    profiles = profile(records, [1], options.threshold)
    played = {p.key: p for p in profiles}
    if not any((task.taskset, task.task_id) in played for task in tasks):
        raise UsageError(f"tasks measure: no episode of the runs played a task of {options.tasks}")
    sys.stdout.write(render_difficulty(by_difficulty(tasks, profiles)))
    if options.out is not None:
        if options.out.exists():
            raise UsageError(f"--out {options.out} exists: give a new file")
        write_jsonl(
            (
                {**task.data, "measured": _measured(played.get((task.taskset, task.task_id)), options.threshold)}
                for task in tasks
            ),
            options.out,
        )
    return EXIT_OK


def _measured(played: Any, threshold: float) -> dict[str, Any] | None:
    if played is None or not played.episodes:
        return None
    return {"episodes": played.episodes, "pass_at_1": played.pass_at.get(1), "threshold": threshold}
