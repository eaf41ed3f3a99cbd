"""finsec-serve as an OpenEnv environment (`openenv-core`, the environment API TRL's GRPO trainer drives): `reset`
seeds an episode session, `step` calls one tool, and `submit_final_result` ends the episode with the reward of
/verify, after which the session is closed. The environment is an OpenEnv server of its own in front of a running
finsec-serve, one environment per WebSocket session:

    python -m finsec_client.openenv --finsec-url http://127.0.0.1:8000 --port 8011

and a trainer talks to it with `FinsecEnv`, openenv-core's client:

    with FinsecEnv(base_url="http://127.0.0.1:8011").sync() as env:
        env.reset(task={"question": ..., "expected_answer": ...})
        env.step(FinsecAction(tool="sec_filing_search", arguments={"ticker": "HLXR1"}))
        result = env.step(FinsecAction(tool="submit_final_result", arguments={"final_result": "..."}))
        result.reward, result.observation.mask_sample

An episode is the environment server's (NeMo Gym's `single_agent_turn`): an episode seed with a fresh
`resources_session_id`, each tool with the seed's cookie, verify, close. OpenEnv has no masked samples: a reward
whose `mask_sample` is true (the session was lost) must be left out by the trainer, as NeMo Gym's are. Needs the
`openenv` extra."""

from __future__ import annotations

import argparse
import functools
import uuid
from typing import Any, Literal

import httpx
from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from finsec_client.client import CLIENT_HEADERS
from finsec_client.drivers import close_request, episode_seed, new_resources_session_id, verify_request
from finsec_client.tasks import Task, embedded_tasks, task_of
from finsec_client.toolbox import Trajectory

__all__ = [
    "FinsecAction",
    "FinsecEnv",
    "FinsecEnvironment",
    "FinsecObservation",
    "FinsecState",
    "main",
    "make_app",
    "MAX_STEPS",
]

MAX_STEPS = 32  # an episode that never submits is verified (with no answer) after this many tool calls


class FinsecAction(Action):
    """One tool call: `{"tool": "sec_filing_search", "arguments": {"ticker": "HLXR1"}}`."""

    tool: Literal[
        "sec_filing_search",
        "edgar_search",
        "parse_html_page",
        "retrieve_information",
        "web_search",
        "submit_final_result",
    ]
    arguments: dict[str, Any] = Field(default_factory=dict)


class FinsecObservation(Observation):
    question: str | None = None  # the task's, after reset
    status_code: int | None = None  # the tool route's HTTP status
    result: str | None = None  # the tool's result (its `results`), or the error body as the agent would see it
    # After the last step, from /verify's row:
    mask_sample: bool | None = None  # true: the session was lost; leave the reward out of training
    failure_kind: str | None = None
    failure_reason: str | None = None
    closed: bool | None = None  # /close_session answered 200


class FinsecState(State):
    resources_session_id: str | None = None
    question: str | None = None


class FinsecEnvironment(Environment[FinsecAction, FinsecObservation, FinsecState]):
    """One episode at a time against finsec-serve at `finsec_url`; the OpenEnv server makes one per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each instance has its own HTTP client and session

    def __init__(
        self,
        finsec_url: str,
        tasks: list[Task] | None = None,
        timeout_seconds: float = 120.0,
        max_steps: int = MAX_STEPS,
    ):
        super().__init__()
        self._http = httpx.Client(base_url=finsec_url.rstrip("/"), timeout=timeout_seconds, headers=CLIENT_HEADERS)
        self._tasks = tasks
        self._max_steps = max_steps
        self._task: Task | None = None
        self._trajectory = Trajectory([])
        self._cookie = ""  # the seed reply's cookies, sent with every later request (and no other reply's)
        self._rollout_id = ""
        self._open = False  # seeded and not closed
        self._state = FinsecState()

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task: dict[str, Any] | None = None, **kwargs: Any
    ) -> FinsecObservation:
        """`task`: a task row (`question`, `expected_answer`, the rest its data); else the task set's row `seed`
        (the embedded corpus's questions unless the environment was given tasks)."""
        self._close()
        if task is not None:
            self._task = task_of(task)
        else:
            if self._tasks is None:  # built once per environment, not on every reset
                self._tasks = embedded_tasks()
            self._task = self._tasks[(seed or 0) % len(self._tasks)]
        self._trajectory = Trajectory([{"role": "user", "content": self._task.question}])
        self._cookie = ""
        self._rollout_id = f"openenv_{uuid.uuid4().hex}"  # never ends in -a<N> (contract §A.1)
        sid = new_resources_session_id()
        reply = self._http.post("/seed_session", json=episode_seed(self._task, self._rollout_id, sid))
        if reply.status_code != 200 or not reply.cookies:
            raise RuntimeError(f"finsec-serve refused the episode seed ({reply.status_code}): {reply.text[:300]}")
        self._cookie, self._open = "; ".join(f"{k}={v}" for k, v in reply.cookies.items()), True
        self._http.cookies.clear()
        self._state = FinsecState(
            episode_id=episode_id or self._rollout_id,
            step_count=0,
            resources_session_id=sid,
            question=self._task.question,
        )
        return FinsecObservation(question=self._task.question)

    def step(self, action: FinsecAction, timeout_s: float | None = None, **kwargs: Any) -> FinsecObservation:
        if not self._open:
            return FinsecObservation(result="The episode is over; reset to start another.", done=True)
        self._state.step_count += 1
        call_id = f"call_{self._state.step_count}"
        self._trajectory.called(action.tool, action.arguments, call_id)
        reply = self._post(f"/{action.tool}", action.arguments)
        text = reply.text
        if reply.status_code == 200 and isinstance(results := _json(reply).get("results"), str):
            text = results
        self._trajectory.answered(call_id, text)
        if action.tool == "submit_final_result" or self._state.step_count >= self._max_steps:
            return self._finish(reply.status_code, text)
        return FinsecObservation(status_code=reply.status_code, result=text)

    @property
    def state(self) -> FinsecState:
        return self._state

    def close(self) -> None:
        """The OpenEnv session ended: an episode still open is closed, so finsec-serve releases it now."""
        try:
            self._close()
        except httpx.HTTPError:
            pass  # finsec-serve's TTL releases it
        finally:
            self._http.close()

    def _finish(self, status_code: int, text: str) -> FinsecObservation:
        assert self._task is not None  # step() finishes an open episode only, and reset() set its task
        reply = self._post("/verify", verify_request(self._task, self._trajectory))
        row = _json(reply)
        closed = self._close()
        if reply.status_code != 200 or not isinstance(row.get("reward"), (int, float)):
            raise RuntimeError(f"finsec-serve's verify answered {reply.status_code}: {reply.text[:300]}")
        return FinsecObservation(
            status_code=status_code,
            result=text,
            done=True,
            reward=float(row["reward"]),
            mask_sample=bool(row.get("mask_sample")),
            failure_kind=row.get("failure_kind"),
            failure_reason=row.get("failure_reason"),
            closed=closed,
        )

    def _close(self) -> bool:
        if not self._open:
            return False
        self._open = False
        sid = self._state.resources_session_id
        assert sid is not None  # an open episode's state names its session (reset)
        reply = self._post("/close_session", close_request(sid, self._rollout_id))
        return reply.status_code == 200

    def _post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._http.post(route, json=body, headers={"cookie": self._cookie} if self._cookie else None)
        finally:
            self._http.cookies.clear()  # what a reply sets is not sent on: the seed's cookies are the episode's


class FinsecEnv(EnvClient[FinsecAction, FinsecObservation, FinsecState]):
    """openenv-core's client for the environment (WebSocket; `.sync()` for blocking calls)."""

    def _step_payload(self, action: FinsecAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[FinsecObservation]:
        reward, done = payload.get("reward"), payload.get("done", False)
        observation = FinsecObservation(**payload.get("observation", {}), reward=reward, done=done)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> FinsecState:
        return FinsecState(**payload)


def make_app(finsec_url: str, *, tasks: list[Task] | None = None, max_concurrent_envs: int = 256):
    """The OpenEnv server's ASGI app: one FinsecEnvironment per WebSocket session, at most `max_concurrent_envs`."""
    factory = functools.partial(FinsecEnvironment, finsec_url, tasks)
    return create_app(
        factory, FinsecAction, FinsecObservation, env_name="finsec", max_concurrent_envs=max_concurrent_envs
    )


def _json(reply: httpx.Response) -> dict[str, Any]:
    try:
        body = reply.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(
        prog="python -m finsec_client.openenv",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--finsec-url", required=True, help="a running finsec-serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--max-concurrent-envs", type=int, default=256, help="OpenEnv sessions at once")
    options = parser.parse_args(argv)
    uvicorn.run(
        make_app(options.finsec_url, max_concurrent_envs=options.max_concurrent_envs),
        host=options.host,
        port=options.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
