"""The two ways NeMo Gym's callers drive a finance_sec_search episode over HTTP (contract §A.1-A.3, §B.2, §C).

- `environment-server` (NeMo Gym's single_agent_turn): an episode seed with a fresh `resources_session_id`, the
  tools with the seed reply's cookie, /verify with it, and /close_session by ID in cleanup, whatever happened
  (it registers the close before it seeds, so a lost seed reply cannot hide the session).
- `legacy-agent` (finance_agent behind legacy_agent): an agent-run seed (`{}` or its run body), each reply's
  cookies carried to the next request, /verify, which releases the session; no close.

A driver turns everything that can go wrong into the record's `failure`; it never raises."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from finsec_client.client import Call, Cookies, Reply, ServerClient, TransportFailure
from finsec_client.policies import Policy
from finsec_client.policies.llm import ModelFailure
from finsec_client.records import EpisodeRecord, Failure
from finsec_client.tasks import Task
from finsec_client.toolbox import Toolbox, Trajectory

__all__ = [
    "AgentRunSeed",
    "close_request",
    "Driver",
    "DRIVERS",
    "EnvironmentServerDriver",
    "Episode",
    "episode_seed",
    "EpisodeFailed",
    "EpisodeState",
    "LegacyAgentDriver",
    "make_driver",
    "new_record",
    "new_resources_session_id",
    "verify_request",
]

DRIVERS = ("environment-server", "legacy-agent")
AgentRunSeed = Literal["empty", "task"]


class EpisodeFailed(Exception):
    def __init__(self, kind: str, route: str | None, detail: str):
        super().__init__(detail)
        self.failure = Failure(kind, route, detail)


@dataclass(frozen=True)
class Episode:
    """The index-th episode of a run: which task, which repeat of it, under which run ID."""

    index: int
    task: Task
    repeat: int
    run_id: str
    driver: str
    group: int | None = None  # the GRPO group it belongs to (`finsec rollouts -r K`)
    group_size: int | None = None

    @property
    def rollout_id(self) -> str:
        return f"{self.run_id}-e{self.index}"  # never ends in -a<N> (contract §A.1)


@dataclass
class EpisodeState:
    client: ServerClient
    episode: Episode
    record: EpisodeRecord
    cookies: Cookies
    calls: list[Call] = field(default_factory=list)
    trajectory: Trajectory = field(default_factory=lambda: Trajectory([]))
    verify_body: dict[str, Any] | None = None

    def toolbox(self) -> Toolbox:
        return Toolbox(self.client, self.cookies, self.calls, self.trajectory)


def new_record(episode: Episode, policy: str, worker: int | None) -> EpisodeRecord:
    task = episode.task
    return EpisodeRecord(
        episode.index,
        episode.driver,
        policy,
        task.index,
        episode.repeat,
        task.taskset,
        task.task_id,
        task.question,
        task.expected_answer,
        worker=worker,
        rollout_id=episode.rollout_id,
        group=episode.group,
        group_size=episode.group_size,
        started_at=time.time(),
    )


def new_resources_session_id() -> str:
    return f"resources-session-{uuid.uuid4().hex}"


def episode_seed(task: Task, rollout_id: str, resources_session_id: str) -> dict[str, Any]:
    """The environment server's seed of an episode (contract §A.1)."""
    return {
        "resources_session_id": resources_session_id,
        "episode_id": {"rollout_id": rollout_id, "attempt": 0},
        "task_id": {"taskset": task.taskset, "task_id": task.task_id},
        "task_data": task.data,
    }


def verify_request(task: Task, trajectory: Trajectory) -> dict[str, Any]:
    """What both callers send to /verify (§A.3): the task's data with the trajectory, the question and the
    expected answer."""
    return {
        **task.data,
        "responses_create_params": {"input": trajectory.input},
        "response": trajectory.response(),
        "question": task.question,
        "expected_answer": task.expected_answer,
    }


def close_request(resources_session_id: str, rollout_id: str) -> dict[str, Any]:
    return {"resources_session_id": resources_session_id, "episode_id": {"rollout_id": rollout_id, "attempt": 0}}


class Driver:
    name = ""
    follow_cookies = False

    async def run(
        self, client: ServerClient, episode: Episode, policy: Policy, worker: int | None = None
    ) -> EpisodeRecord:
        state = self.start(client, episode, policy.name, worker)
        began = time.perf_counter()
        try:
            await self.seed(state)
            await self.play(state, policy)
            await self.verify(state)
        except EpisodeFailed as failed:
            state.record.failure = failed.failure
        except TransportFailure as failed:
            state.record.failure = Failure("transport", failed.route, failed.detail)
        await self.finish(state)  # never raises; keeps the first failure
        state.record.seconds = time.perf_counter() - began
        state.record.add_calls(state.calls)
        return state.record

    def start(self, client: ServerClient, episode: Episode, policy: str, worker: int | None) -> EpisodeState:
        question = [{"role": "user", "content": episode.task.question}]
        return EpisodeState(
            client,
            episode,
            new_record(episode, policy, worker),
            Cookies(self.follow_cookies),
            trajectory=Trajectory(question),
        )

    async def seed(self, state: EpisodeState) -> None:
        raise NotImplementedError

    async def finish(self, state: EpisodeState) -> None:
        """Cleanup after verify (or after a failure): the environment server's close."""

    async def play(self, state: EpisodeState, policy: Policy) -> None:
        tools = state.toolbox()
        try:
            await policy.play(state.episode.task, tools)
        except ModelFailure as error:
            raise EpisodeFailed("model", None, str(error)) from None
        except TransportFailure:
            raise
        except Exception as error:  # a bug in a policy fails its episode, not the run
            raise EpisodeFailed("policy", None, f"{type(error).__name__}: {error}"[:300]) from None
        finally:
            state.record.tools = tools.tools_called
            state.record.final_answer = state.trajectory.final_answer
            state.record.usage = state.trajectory.usage

    async def verify(self, state: EpisodeState) -> Reply:
        state.verify_body = verify_request(state.episode.task, state.trajectory)
        reply = await state.client.post("verify", state.verify_body, state.cookies, state.calls)
        row = reply.json_or_none()
        if reply.status != 200:
            raise EpisodeFailed("http", "verify", f"verify answered {reply.status}: {reply.text[:200]}")
        if not isinstance(row, dict) or not isinstance(row.get("reward"), (int, float)):
            raise EpisodeFailed("protocol", "verify", f"verify sent no reward: {reply.text[:200]}")
        record = state.record
        record.reward = float(row["reward"])
        record.masked = bool(row.get("mask_sample"))
        record.failure_kind = row.get("failure_kind")
        record.failure_reason = row.get("failure_reason")
        record.judge_rating = row.get("judge_rating") if isinstance(row.get("judge_rating"), int) else None
        record.judge_text = row.get("judge_text") if isinstance(row.get("judge_text"), str) else None
        documents = row.get("session_documents")
        record.documents = (
            documents if isinstance(documents, list) and all(isinstance(d, str) for d in documents) else None
        )
        record.grader = row.get("grader") if isinstance(row.get("grader"), dict) else None
        record.canonical_answer = row.get("canonical_answer")
        return reply


class EnvironmentServerDriver(Driver):
    name = "environment-server"

    def seed_body(self, state: EpisodeState) -> dict[str, Any]:
        sid = new_resources_session_id()
        state.record.resources_session_id = sid
        return episode_seed(state.episode.task, state.episode.rollout_id, sid)

    async def seed(self, state: EpisodeState) -> None:
        body = self.seed_body(state)
        reply = await state.client.post("seed_session", body, None, state.calls)  # no cookie with the seed
        if reply.status != 200:
            raise EpisodeFailed("http", "seed_session", f"episode seed answered {reply.status}: {reply.text[:200]}")
        answer = reply.json_or_none()
        if not isinstance(answer, dict) or answer.get("resources_session_id") != body["resources_session_id"]:
            raise EpisodeFailed("protocol", "seed_session", f"seed reply names another session: {reply.text[:200]}")
        if not reply.cookies:
            raise EpisodeFailed("protocol", "seed_session", "Resources seed did not establish a session cookie")
        state.cookies.take(reply)

    async def finish(self, state: EpisodeState) -> None:
        sid = state.record.resources_session_id
        if sid is None:
            return
        try:
            reply = await state.client.post(
                "close_session", close_request(sid, state.episode.rollout_id), state.cookies, state.calls
            )
        except TransportFailure as failed:
            state.record.closed = False
            if state.record.failure is None:
                state.record.failure = Failure("transport", failed.route, failed.detail)
            return
        state.record.closed = reply.status == 200
        if reply.status != 200 and state.record.failure is None:
            state.record.failure = Failure(
                "http", "close_session", f"close answered {reply.status}: {reply.text[:200]}"
            )


class LegacyAgentDriver(Driver):
    name = "legacy-agent"
    follow_cookies = True  # the legacy agent uses each reply's cookies for its next request

    def __init__(self, seed_with: AgentRunSeed = "task"):
        self.seed_with = seed_with

    def seed_body(self, state: EpisodeState) -> dict[str, Any]:
        if self.seed_with == "empty":
            return {}
        # finance_agent sends its whole /run body; a stray resources_session_id would make it an episode seed
        body = {k: v for k, v in state.episode.task.data.items() if k != "resources_session_id"}
        return {
            **body,
            "responses_create_params": {"input": state.trajectory.input},
            "question": state.episode.task.question,
            "expected_answer": state.episode.task.expected_answer,
        }

    async def seed(self, state: EpisodeState) -> None:
        reply = await state.client.post("seed_session", self.seed_body(state), state.cookies, state.calls)
        if reply.status != 200:
            raise EpisodeFailed("http", "seed_session", f"agent-run seed answered {reply.status}: {reply.text[:200]}")
        if not state.cookies.values:
            raise EpisodeFailed("protocol", "seed_session", "the agent-run seed set no session cookie")


def make_driver(name: str, agent_run_seed: AgentRunSeed = "task") -> Driver:
    if name == "environment-server":
        return EnvironmentServerDriver()
    if name == "legacy-agent":
        return LegacyAgentDriver(agent_run_seed)
    raise ValueError(f"unknown driver {name!r}; choose from {', '.join(DRIVERS)}")
