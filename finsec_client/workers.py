"""A distributed run: the runner as N Ray actors spread over the cluster, each with its own HTTP client, the way
distributed rollout workers reach a shared server. The caller polls the workers for finished records (so a long
run streams into one JSONL) and learns of a worker that died: its unreported episodes become `worker` failures,
never silently missing rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from finsec_client.drivers import new_record
from finsec_client.records import EpisodeRecord, Failure
from finsec_client.runner import RunPlan, run_episodes

__all__ = [
    "CALL_TIMEOUT_SECONDS",
    "POLL_SECONDS",
    "RolloutWorker",
    "join_cluster",
    "run_on_workers",
    "shares",
    "worker_name",
]

POLL_SECONDS = 0.5
CALL_TIMEOUT_SECONDS = 60.0


class RolloutWorker:
    """One worker's share of the run. Async, so `drain` answers while `run` plays."""

    def __init__(self, plan: RunPlan, worker: int, indices: list[int]):
        self._plan, self._worker, self._indices = plan, worker, indices
        self._done: list[EpisodeRecord] = []

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    async def run(self) -> int:
        await run_episodes(self._plan, self._indices, self._finished, worker=self._worker)
        return len(self._indices)

    def _finished(self, record: EpisodeRecord) -> None:
        self._done.append(record)  # looked up each time: drain swaps the list

    async def drain(self) -> list[dict]:
        done, self._done = self._done, []
        return [r.to_json() for r in done]


def worker_name(plan: RunPlan, worker: int) -> str:
    return f"{plan.run_id or 'finsec'}-worker-{worker}"


def shares(indices: list[int], workers: int) -> list[list[int]]:
    """Episode indices per worker, dealt round-robin, so every worker gets both drivers and every task."""
    return [indices[w::workers] for w in range(workers)]


def run_on_workers(plan: RunPlan, workers: int, on_record: Callable[[EpisodeRecord], None]) -> tuple[list[str], int]:
    """Play the plan on `workers` Ray actors (Ray already initialised); returns the dead workers, described,
    and how many nodes the workers ran on."""
    import ray
    from ray.exceptions import GetTimeoutError, RayError

    to_play = plan.to_play()
    workers = max(1, min(workers, len(to_play)))
    remote = ray.remote(RolloutWorker)
    options = dict(num_cpus=0, scheduling_strategy="SPREAD", max_restarts=0, max_task_retries=0)
    per_worker_plan = [replace(plan, concurrency=max(1, plan.concurrency // workers)) for _ in range(workers)]
    dealt = shares(to_play, workers)
    # Named after the run, so an operator can find them (`ray list actors`) while it lasts.
    # Any: Ray types the methods of a class not decorated with @ray.method as plain methods, without .remote
    actors: list[Any] = [
        remote.options(name=worker_name(plan, w), **options).remote(per_worker_plan[w], w, dealt[w])
        for w in range(workers)
    ]
    nodes: set[str] = set()
    for actor in actors:
        try:
            nodes.add(ray.get(actor.node.remote(), timeout=CALL_TIMEOUT_SECONDS))
        except RayError:
            pass  # reported below, when its run fails
    runs = {actor.run.remote(): w for w, actor in enumerate(actors)}
    reported: dict[int, set[int]] = {w: set() for w in range(len(actors))}
    dead: dict[int, str] = {}

    def drain(w: int) -> None:
        try:
            rows = ray.get(actors[w].drain.remote(), timeout=CALL_TIMEOUT_SECONDS)
        except (RayError, GetTimeoutError) as error:
            dead.setdefault(w, _why(error))
            return
        for row in rows:
            record = EpisodeRecord.from_json(row)
            reported[w].add(record.episode)
            on_record(record)

    try:
        while runs:
            ready, _ = ray.wait(list(runs), num_returns=len(runs), timeout=POLL_SECONDS)
            for w in {w for w in runs.values() if w not in dead}:
                drain(w)
            for ref in ready:
                w = runs.pop(ref)
                try:
                    ray.get(ref)
                except RayError as error:
                    dead.setdefault(w, _why(error))
                else:
                    drain(w)  # what it finished after the last poll
    finally:
        for actor in actors:
            ray.kill(actor)
    for w, why in dead.items():
        for index in dealt[w]:
            if index not in reported[w]:
                record = new_record(plan.episode(index), plan.policy_name, w)
                record.failure = Failure("worker", None, f"worker {w} died before reporting it: {why}")
                on_record(record)
    return [f"worker {w}: {why}" for w, why in sorted(dead.items())], len(nodes)


def _why(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:200]


def join_cluster(address: str) -> None:
    """This process into the Ray cluster at `address`; a UsageError when it cannot."""
    import logging

    import ray

    from finsec_client.cli.usage import UsageError, one_line

    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise UsageError(f"cannot join the Ray cluster at {address}: {one_line(error)}") from None
