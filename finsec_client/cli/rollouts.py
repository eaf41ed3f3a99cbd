"""`finsec rollouts`: N episodes at concurrency C against a running server (--url), or one the server's `finsec`
starts for the run (a `LocalServer` it hands in), then one JSONL of episodes and a summary. Exit status 0 when every
episode completed, 1 when some did not."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from finsec_client.cli.usage import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    check_model_up,
    check_server_up,
    check_url,
    default_url,
)
from finsec_client.client import Retries
from finsec_client.drivers import DRIVERS
from finsec_client.policies.llm import ModelSpec
from finsec_client.progress import Progress
from finsec_client.records import EpisodeRecord, RecordWriter, read_records, read_run
from finsec_client.runner import RunPlan, new_run_id, run_episodes
from finsec_client.summary import render, summarize
from finsec_client.tasks import TaskFileError, embedded_tasks, load_tasks
from finsec_client.workers import join_cluster

__all__ = ["add_parser", "LocalServer", "RUN_OPTIONS", "run_options", "run_rollouts"]


class LocalServer(Protocol):
    """What the server's `finsec` hands `rollouts` so that a run without --url starts the app itself."""

    def check(self, config: Path) -> None:
        """Read the serve config as the server would; a UsageError says what is wrong."""

    def running(self, options: argparse.Namespace) -> AbstractContextManager[str]:
        """The app from --config (or the packaged one) on a free port, --address or a local cluster: its URL."""

    def workers_cluster(self) -> None:
        """Ray alone on this machine, for --workers against a server elsewhere."""


def add_parser(commands: argparse._SubParsersAction, local_server: LocalServer | None = None) -> None:
    parser = commands.add_parser(
        "rollouts",
        help="drive episodes against a server and summarise them",
        description="Drive N episodes at concurrency C through the HTTP contract, as NeMo Gym's Environment "
        "Server (episode seeds, close) or its legacy agent (agent-run seeds, verify releases) would, with a "
        "scripted or an LLM policy. Without --url it starts a local Ray cluster and the app on the embedded "
        "corpus, and stops them at the end. Writes every episode to JSONL and prints a summary beside the "
        "server's own counters. Exit status: 0 every episode completed, 1 some did not, 2 usage error.",
    )
    target = parser.add_argument_group("server")
    target.add_argument(
        "--url", default=default_url(), help="a running finsec server (default: $FINSEC_URL, else start one in process)"
    )
    target.add_argument(
        "--config",
        type=Path,
        help="serve config for the in-process server (default: "
        "the packaged serve.yaml: 2 replicas, 2 shards, the embedded corpus; FINSEC_<FIELD> overrides)",
    )
    target.add_argument("--address", help="a running Ray cluster for the in-process server and the workers")
    target.add_argument(
        "--ingress",
        choices=("haproxy", "proxy"),
        default="haproxy",
        help="the in-process server's ingress (default haproxy)",
    )
    run = parser.add_argument_group("episodes")
    run.add_argument(
        "-n",
        "--episodes",
        type=int,
        help="episodes to play (default 96; with -r, every task once as a group: tasks x K x drivers)",
    )
    run.add_argument(
        "-r",
        "--repeats",
        type=int,
        default=1,
        metavar="K",
        help="play each task K times side by "
        "side as one group (a GRPO group); the records carry `group` and `group_size` (default 1)",
    )
    run.add_argument(
        "--resume",
        type=Path,
        metavar="FILE",
        help="go on with the run recorded in FILE (its "
        "episodes JSONL): episodes it holds as scored or masked are not played again, failed ones "
        "are; new records are appended to FILE. The run's options come from FILE's first line; "
        "-n may grow the run",
    )
    run.add_argument("-c", "--concurrency", type=int, default=16, help="episodes in flight (default 16)")
    run.add_argument(
        "--driver",
        action="append",
        choices=DRIVERS,
        help="environment-server (default) or legacy-agent; give both to alternate them",
    )
    run.add_argument(
        "--agent-run-seed",
        choices=("task", "empty"),
        default="task",
        help="legacy-agent seed body: the task's run body (default) or {}",
    )
    run.add_argument(
        "--tasks",
        type=Path,
        help="a JSONL task file (default: the embedded corpus's questions; `finsec corpus questions` writes one)",
    )
    run.add_argument(
        "--workers",
        type=int,
        default=0,
        help="run the drivers as N Ray actors spread over the cluster (default: in this process)",
    )
    run.add_argument(
        "--request-timeout",
        type=float,
        default=RunPlan.request_timeout,
        help=f"seconds per request (default {RunPlan.request_timeout:g}): longer than the server's "
        "admission_wait_seconds (60 by default) plus the slowest tool call",
    )
    run.add_argument(
        "--retry-deadline",
        type=float,
        default=Retries.deadline,
        metavar="SECONDS",
        help="how long "
        "one request is sent again, a busy server's 503 or 429 with Retry-After waited out (default "
        "%(default)g)",
    )
    run.add_argument(
        "--give-up-after",
        type=int,
        default=32,
        metavar="K",
        help="after K transport failures "
        "in a row, record the episodes left as transport failures without trying them (0: never)",
    )
    run.add_argument("--trace", action="store_true", help="play one episode and print it request by request")
    run.add_argument(
        "--excerpts",
        type=int,
        default=RunPlan.excerpts,
        metavar="CHARS",
        help="characters of each request's body and reply the run file keeps, for `finsec view` (default "
        "%(default)d; 0: none)",
    )
    policy = parser.add_argument_group("policy")
    policy.add_argument(
        "--policy",
        choices=("scripted", "llm"),
        default="scripted",
        help="scripted (reads the retrieved passages) or llm (an OpenAI-compatible model)",
    )
    policy.add_argument("--model-url", help="llm: the endpoint's base URL, e.g. http://host:8000/v1")
    policy.add_argument("--model", help="llm: the model name")
    policy.add_argument(
        "--model-api-key-env",
        default="OPENAI_API_KEY",
        help="llm: environment variable holding the API key, if any (default OPENAI_API_KEY)",
    )
    policy.add_argument("--max-turns", type=int, default=12, help="llm: model turns per episode (default 12)")
    policy.add_argument("-T", "--temperature", type=float, help="llm: sampling temperature (default: the endpoint's)")
    policy.add_argument("--max-tokens", type=int, help="llm: most tokens per model turn (default: the endpoint's)")
    output = parser.add_argument_group("output")
    output.add_argument(
        "--out",
        type=Path,
        help="episodes JSONL (default runs/rollouts-<time>.jsonl); the summary goes beside it as .summary.json",
    )
    output.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out file (without it, a run never overwrites one: --resume goes on with it)",
    )
    output.add_argument("--plot", type=Path, metavar="DIR", help="write reward.png and latency.png to DIR")
    output.add_argument("--quiet", action="store_true", help="no progress line")
    output.add_argument(
        "--fail-on-masked",
        action="store_true",
        help="exit status 1 also when some verify was masked (the demo's check)",
    )
    parser.set_defaults(run=run_rollouts, default_of=parser.get_default, local_server=local_server)


def _plan_from(options: argparse.Namespace, url: str) -> RunPlan:
    tasks = tuple(load_tasks(options.tasks) if options.tasks else embedded_tasks())
    drivers = tuple(dict.fromkeys(options.driver or ["environment-server"]))
    model = None
    if options.policy == "llm":
        model = ModelSpec(
            options.model_url,
            options.model,
            os.environ.get(options.model_api_key_env) or None,
            max_turns=options.max_turns,
            timeout=options.request_timeout,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
        )
    episodes = options.episodes or (len(tasks) * options.repeats * len(drivers) if options.repeats > 1 else 96)
    plan = RunPlan(
        url,
        tasks,
        1 if options.trace else episodes,
        options.concurrency,
        drivers,
        model,
        options.request_timeout,
        options.agent_run_seed,
        new_run_id(),
        options.give_up_after,
        options.repeats,
        retry_deadline=options.retry_deadline,
        excerpts=options.excerpts,
    )
    return replace(plan, skip=frozenset(r.episode for r in options.resumed)) if options.resumed else plan


def _check(options: argparse.Namespace) -> None:
    """Everything that can be checked before a cluster starts or an episode runs: every mistake at once."""
    run = _run_options(options)  # --resume FILE: the options FILE's run was played with, where none are given
    problems = [
        f"{flag} must be at least {least}, not {value}"
        for flag, value, least in (
            ("--episodes", options.episodes, 1),
            ("--concurrency", options.concurrency, 1),
            ("--repeats", options.repeats, 1),
            ("--max-turns", options.max_turns, 1),
            ("--workers", options.workers, 0),
            ("--max-tokens", options.max_tokens, 1),
            ("--give-up-after", options.give_up_after, 0),
            ("--excerpts", options.excerpts, 0),
        )
        if value is not None and value < least
    ]
    if options.temperature is not None and not 0 <= options.temperature <= 2:
        problems.append(f"--temperature must be between 0 and 2, not {options.temperature:g}")
    problems += [
        f"{flag} must be positive, not {value:g}"
        for flag, value in (
            ("--request-timeout", options.request_timeout),
            ("--retry-deadline", options.retry_deadline),
        )
        if not value > 0
    ]  # NaN too
    if options.policy == "llm" and not (options.model_url and options.model):
        problems.append("--policy llm needs --model-url and --model")
    if problems:
        raise UsageError("\n".join(problems))
    if options.url:
        options.url = check_url(options.url)
    if options.out and options.resume is None and options.out.exists() and not options.force:
        raise UsageError(
            f"--out {options.out} exists and holds an earlier run: --resume {options.out} goes on with "
            "it, --force replaces it, or give another --out"
        )
    options.resumed = _resumed(options)
    if options.resumed:
        _check_resumed(_plan_from(options, "http://127.0.0.1"), options.resumed, from_file=run is not None)
    if options.policy == "llm":
        options.model_url = check_url(options.model_url, "--model-url")
        check_model_up(options.model_url, os.environ.get(options.model_api_key_env) or None, options.model_api_key_env)
    if options.plot:
        from finsec_client.plots import PlottingUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except PlottingUnavailable as error:
            raise UsageError(str(error)) from None
    if options.tasks:
        try:
            load_tasks(options.tasks)
        except TaskFileError as error:
            raise UsageError(str(error)) from None
    if options.config:
        _local(options).check(options.config)


# What a run's file records of its options: what decides its episodes and where they are played.
RUN_OPTIONS = (
    "url",
    "config",
    "episodes",
    "repeats",
    "driver",
    "agent_run_seed",
    "tasks",
    "policy",
    "model_url",
    "model",
    "model_api_key_env",
    "max_turns",
    "temperature",
    "max_tokens",
)


def run_options(options: argparse.Namespace) -> dict[str, Any]:
    """The run's options as its file's first line keeps them (paths made absolute: a resume may run elsewhere)."""
    return {
        name: str(Path(value).resolve()) if isinstance(value, Path) else value
        for name in RUN_OPTIONS
        if (value := getattr(options, name)) is not None
    }


def _run_options(options: argparse.Namespace) -> dict[str, Any] | None:
    """With --resume FILE, the options FILE's run recorded, for each one not given here."""
    if options.resume is None or not options.resume.is_file():
        return None
    try:
        with options.resume.open() as stream:
            run = read_run(stream)
    except (ValueError, TypeError):
        return None  # said by _resumed, which reads the whole file
    for name, value in (run or {}).items():
        if name in RUN_OPTIONS and getattr(options, name) == options.default_of(name):
            setattr(options, name, Path(value) if name in ("config", "tasks") else value)
    return run


def _resumed(options: argparse.Namespace) -> list[EpisodeRecord]:
    """The records of the run being resumed that need no replay (scored or masked)."""
    if options.resume is None:
        return []
    if options.out and options.out.resolve() != options.resume.resolve():
        raise UsageError("--resume appends to its own file: leave out --out, or give it the same file")
    if options.trace or options.workers:
        raise UsageError("--resume plays in this process: leave out --trace and --workers")
    try:
        with options.resume.open() as stream:
            records = read_records(stream)
    except FileNotFoundError:
        raise UsageError(f"--resume: {options.resume} does not exist") from None
    except (ValueError, TypeError, KeyError) as error:
        raise UsageError(f"--resume: {options.resume} is not an episodes JSONL of finsec rollouts ({error})") from None
    return [r for r in records if r.outcome != "failed"]


def _check_resumed(plan: RunPlan, resumed: list[EpisodeRecord], *, from_file: bool) -> None:
    """A resumed file must be the same run: each recorded episode the task and driver this plan gives it."""
    fix = (
        "leave out --episodes, --repeats, --tasks and --driver: the file says them"
        if from_file
        else "give the run's own --episodes, --repeats, --tasks and --driver"
    )
    for record in resumed:
        if record.episode >= plan.episodes:
            raise UsageError(f"--resume: episode {record.episode} is beyond this run's {plan.episodes} episodes: {fix}")
        episode = plan.episode(record.episode)
        if (record.task_id, record.driver, record.group) != (episode.task.task_id, episode.driver, episode.group):
            raise UsageError(
                f"--resume: episode {record.episode} was task {record.task_id} ({record.driver}) "
                f"there, task {episode.task.task_id} ({episode.driver}) here: {fix}"
            )


@contextlib.contextmanager
def _server(options: argparse.Namespace) -> Iterator[str]:
    if options.url:
        check_server_up(options.url)
        yield options.url
        return
    with _local(options).running(options) as url:
        yield url


def _local(options: argparse.Namespace) -> LocalServer:
    if options.local_server is None:
        raise UsageError("this `finsec` has the client's commands only: give --url of a running finsec-serve")
    return options.local_server


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def run_rollouts(options: argparse.Namespace) -> int:
    _check(options)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops a run as Ctrl-C does: with a summary
    try:
        with _server(options) as url:
            signal.signal(signal.SIGTERM, _interrupt)  # again: ray.init installs its own handler, which aborts
            plan = _plan_from(options, url)
            if options.trace:
                from finsec_client.trace import trace_episode

                record = asyncio.run(trace_episode(plan, sys.stdout))
                return EXIT_OK if record.failure is None else EXIT_FAILED
            return _run(options, plan, url)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(options: argparse.Namespace, plan: RunPlan, url: str) -> int:
    from finsec_client import server_view

    out = (
        options.resume
        or options.out
        or Path("runs") / f"rollouts-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    try:
        before = server_view.session_counters(url, min(server_view.TIMEOUT, plan.request_timeout))
    except server_view.Unavailable as why:
        before, notes = None, [f"no session counters: {why}"]
    waits = server_view.admission_wait_seconds(url, min(server_view.TIMEOUT, plan.request_timeout))
    if waits is not None and plan.request_timeout <= waits:
        print(
            f"warning: the server lets a busy request wait up to {waits:g} s for a place before it starts "
            f"(admission_wait_seconds), longer than --request-timeout {plan.request_timeout:g}: such requests "
            "time out here and are sent again. Raise --request-timeout past it.",
            file=sys.stderr,
            flush=True,
        )
    records: list[EpisodeRecord] = list(options.resumed)
    to_play = plan.to_play()
    progress = None if options.quiet else Progress(len(to_play))
    dead: list[str] = []
    drivers = " and ".join(plan.drivers)
    where = f"on {options.workers} Ray workers" if options.workers else "in this process"
    groups = f", groups of {plan.repeats}" if plan.repeats > 1 else ""
    resumed = f" ({len(records)} already in {out})" if options.resume else ""
    print(
        f"{len(to_play)} episodes{resumed} ({drivers} driver, {plan.policy_name} policy, {len(plan.tasks)} tasks"
        f"{groups}) at concurrency {plan.concurrency} {where} against {url}",
        file=sys.stderr,
        flush=True,
    )
    with out.open("a" if options.resume else "w") as stream:
        writer = RecordWriter(stream)
        if not options.resume:
            writer.write_run(run_options(options))

        def on_record(record: EpisodeRecord) -> None:
            records.append(record)
            writer.write(record)
            if progress:
                progress.update(record)

        began = time.monotonic()
        try:
            if options.workers:
                dead, nodes = _on_workers(options, plan, on_record)
                notes.append(f"{options.workers} workers ran on {nodes} node(s)")
            else:
                asyncio.run(run_episodes(plan, to_play, on_record))
        except KeyboardInterrupt:
            notes.append(f"interrupted: {plan.episodes - len(records)} episodes were not played")
        wall = time.monotonic() - began
    if progress:
        progress.close()
    after, key_metrics = _server_after(url, records, notes, min(server_view.TIMEOUT, plan.request_timeout))
    summary = summarize(
        records,
        wall,
        counters_before=before and before["counters"],
        counters_after=after and after["counters"],
        held=after and after.get("held"),
        shard_calls_before=before and before.get("shard_calls"),
        shard_calls_after=after and after.get("shard_calls"),
        key_metrics=key_metrics,
        dead_workers=dead,
        notes=notes,
        resumed=len(options.resumed),
    )
    print(render(summary))
    summary_path = out.with_suffix(".summary.json")
    summary_path.write_text(json.dumps(summary.to_json(), indent=1))
    if options.plot:
        from finsec_client.plots import write_plots

        print("plots: " + ", ".join(str(p) for p in write_plots(records, options.plot)))
    print(f"\nepisodes: {out}  (summary: {summary_path})")
    complete = len(records) == plan.episodes and not summary.failed
    if options.fail_on_masked and summary.masked:
        complete = False
    return EXIT_OK if complete else EXIT_FAILED


def _server_after(url: str, records: list[EpisodeRecord], notes: list[str], timeout: float):
    from finsec_client import server_view

    after = key_metrics = None
    try:
        after = server_view.session_counters(url, timeout)
    except server_view.Unavailable as why:
        notes.append(f"no session counters after the run: {why}")
    rows = [row for row in (r.verify_row() for r in records) if row is not None]
    if rows:
        try:
            key_metrics = server_view.aggregate_metrics(url, rows, timeout).get("key_metrics")
        except server_view.Unavailable as why:
            notes.append(f"no aggregate metrics: {why}")
    return after, key_metrics


def _on_workers(options: argparse.Namespace, plan: RunPlan, on_record) -> tuple[list[str], int]:
    import ray

    from finsec_client.workers import run_on_workers

    started = False
    if not ray.is_initialized():  # the server runs elsewhere (--url): a cluster just for the workers
        if options.address:
            join_cluster(options.address)
        else:
            _local(options).workers_cluster()  # Ray alone, no Serve
            started = True
        signal.signal(signal.SIGTERM, _interrupt)  # ray.init replaced it
    try:
        return run_on_workers(plan, options.workers, on_record)
    finally:
        if started or (options.url and options.address):
            ray.shutdown()
