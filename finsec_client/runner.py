"""N episodes at concurrency C in one process: one HTTP connection pool, C lanes each playing one episode at a
time. The same runner plays a Ray worker's share of a distributed run (workers.py).

Episode i plays driver i mod D; with groups of K (`repeats`, a GRPO group), the j = i div D th play of that
driver belongs to group j div K, which plays task (j div K) mod T: K plays of one task side by side, one after
another in the order the lanes take them. With both drivers every task is played by both, and the run's requests
mix episode seeds and agent-run seeds as a shared server sees them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from finsec_client.client import Observer, Retries, ServerClient
from finsec_client.drivers import AgentRunSeed, Episode, make_driver, new_record
from finsec_client.policies import Policy
from finsec_client.policies.llm import LlmPolicy, ModelSpec
from finsec_client.policies.scripted import ScriptedPolicy
from finsec_client.records import EpisodeRecord, Failure
from finsec_client.tasks import Task

__all__ = ["make_policy", "new_run_id", "not_attempted", "run_episodes", "RunPlan"]


@dataclass(frozen=True)
class RunPlan:
    """Everything a run (or one worker's share of it) needs; plain data, so it pickles to a Ray actor."""

    base_url: str
    tasks: tuple[Task, ...]
    episodes: int
    concurrency: int
    drivers: tuple[str, ...] = ("environment-server",)
    model: ModelSpec | None = None  # None: the scripted policy
    request_timeout: float = 180.0  # a busy server's wait for a place (60 s by default), then the work
    agent_run_seed: AgentRunSeed = "task"
    run_id: str = ""
    # After this many transport failures in a row the server is taken for gone: the episodes left are recorded
    # as transport failures without being tried, so a hung server cannot hold a long run for hours. 0: never.
    give_up_after: int = 32
    repeats: int = 1  # K plays of each task as one group (GRPO); 1: no groups
    # How long one request is sent again: a busy server's 503/429 with Retry-After is waited out until then.
    retry_deadline: float = Retries.deadline
    skip: frozenset[int] = frozenset()  # episodes a resumed run already has
    excerpts: int = 2_000  # characters of each request's body and reply the run file keeps (`finsec view`)

    @property
    def policy_name(self) -> str:
        return "scripted" if self.model is None else "llm"

    def client(self, *, connections: int = 256, observer: Observer | None = None) -> ServerClient:
        """The rollout client this plan's requests go through."""
        return ServerClient(
            self.base_url,
            timeout=self.request_timeout,
            connections=connections,
            observer=observer,
            retries=Retries(deadline=self.retry_deadline),
            excerpts=self.excerpts,
        )

    def episode(self, index: int) -> Episode:
        d, t, k = len(self.drivers), len(self.tasks), self.repeats
        play = index // d  # this driver's play number
        group = play // k
        return Episode(
            index,
            self.tasks[group % t],
            (group // t) * k + play % k,
            self.run_id or "finsec",
            self.drivers[index % d],
            group if k > 1 else None,
            k if k > 1 else None,
        )

    def to_play(self) -> list[int]:
        return [i for i in range(self.episodes) if i not in self.skip]


def new_run_id() -> str:
    return f"finsec-{uuid.uuid4().hex[:8]}"


def not_attempted(episode: Episode, policy: str, worker: int | None, in_a_row: int) -> EpisodeRecord:
    record = new_record(episode, policy, worker)
    record.failure = Failure(
        "transport", None, f"not attempted: the server stopped answering ({in_a_row} transport failures in a row)"
    )
    return record


def make_policy(plan: RunPlan) -> Policy:
    return ScriptedPolicy() if plan.model is None else LlmPolicy(plan.model)


async def run_episodes(
    plan: RunPlan,
    indices: Iterable[int],
    on_record: Callable[[EpisodeRecord], None],
    *,
    worker: int | None = None,
    observer: Observer | None = None,
) -> None:
    """Play the episodes `indices` at the plan's concurrency, calling `on_record` as each one ends."""
    pending = list(indices)
    drivers = {name: make_driver(name, plan.agent_run_seed) for name in plan.drivers}
    policy = make_policy(plan)
    queue = iter(pending)
    in_a_row = 0

    def finished(record: EpisodeRecord) -> None:
        nonlocal in_a_row
        in_a_row = in_a_row + 1 if record.failure is not None and record.failure.kind == "transport" else 0
        on_record(record)

    async with plan.client(connections=max(8, plan.concurrency), observer=observer) as client:

        async def lane() -> None:
            for index in queue:  # one iterator shared by the lanes: each index is played once
                episode = plan.episode(index)
                if plan.give_up_after and in_a_row >= plan.give_up_after:
                    finished(not_attempted(episode, plan.policy_name, worker, in_a_row))
                    continue
                finished(await drivers[episode.driver].run(client, episode, policy, worker))

        try:
            await asyncio.gather(*(lane() for _ in range(max(1, min(plan.concurrency, len(pending))))))
        finally:
            close = getattr(policy, "aclose", None)
            if close is not None:
                await close()
