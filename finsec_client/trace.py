"""`finsec rollouts --trace`: one episode, printed request by request, then the contract's promises after it
(a re-sent verify is answered from cache, a closed session's tools say session_lost and its verify is masked,
a late seed is refused; an agent-run session is released by its verify)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from finsec_client.client import Call, Reply, ServerClient, TransportFailure
from finsec_client.drivers import Driver, EnvironmentServerDriver, EpisodeFailed, EpisodeState, make_driver
from finsec_client.records import EpisodeRecord, Failure
from finsec_client.runner import RunPlan, make_policy

__all__ = ["driver_seed_again", "trace_episode", "Tracer"]


class Tracer:
    def __init__(self, out: TextIO):
        self.out = out
        self.label: str | None = None  # names the next request (a probe) instead of its route

    def __call__(self, call: Call, body: Any, reply: Reply | None) -> None:
        step, self.label = self.label or call.route, None
        status = "---" if call.status is None else str(call.status)
        detail = (call.error or "") if reply is None else _detail(call.route, body, reply)
        self.out.write(f"  {status:>3}  {step:<46} {detail[:110]}\n")
        self.out.flush()


def _json(reply: Reply) -> Any:
    return reply.json_or_none() or {}


def _detail(route: str, body: Any, reply: Reply) -> str:
    answer = _json(reply)
    if reply.status != 200:
        if isinstance(answer, dict):
            return " ".join(str(answer.get(k)) for k in ("failure_kind", "detail") if answer.get(k))[:110]
        return reply.text[:110]
    results = answer.get("results") if isinstance(answer, dict) else None
    if route == "seed_session":
        return answer.get("resources_session_id", "agent-run seed: {}")[:40] if isinstance(answer, dict) else ""
    if route == "sec_filing_search" and isinstance(results, str):
        try:
            rows = json.loads(results)
        except ValueError:
            return results[:100]
        if isinstance(rows, list) and rows:
            forms = ", ".join(sorted({r.get("form", "?") for r in rows}))
            return f"{len(rows)} {forms} filings of {rows[0].get('ticker')}, newest {rows[0].get('filing_date')}"
        return results[:100]
    if route == "retrieve_information" and isinstance(results, str):
        parts = results.split("\n\n")
        best = parts[1].splitlines() if len(parts) > 1 else [results]
        return "best passage " + " ".join(best[:3])[:100]
    if route == "submit_final_result":
        return str((body or {}).get("final_result", ""))
    if route == "verify" and isinstance(answer, dict):
        text = f"reward={answer.get('reward')}"
        if answer.get("mask_sample"):
            text += f" mask_sample=true failure_kind={answer.get('failure_kind')}"
        elif answer.get("judge_text"):
            text += f" ({answer['judge_text']})"
        return text
    if route == "close_session" and isinstance(answer, dict):
        return f"closed {answer.get('resources_session_id', '')}"
    if isinstance(results, str):
        return results.splitlines()[0] if results else ""
    return ""


async def trace_episode(plan: RunPlan, out: TextIO) -> EpisodeRecord:
    tracer = Tracer(out)
    episode = plan.episode(0)
    driver = make_driver(episode.driver, plan.agent_run_seed)
    policy = make_policy(plan)
    out.write(f"episode 0 ({episode.driver} driver, {policy.name} policy): {episode.task.question}\n")
    async with plan.client(observer=tracer) as client:
        state = driver.start(client, episode, policy.name, None)
        try:
            await driver.seed(state)
            await driver.play(state, policy)
            await driver.verify(state)
            if isinstance(driver, EnvironmentServerDriver):
                tracer.label = "verify re-sent before close (cached)"
                await client.post("verify", state.verify_body, state.cookies, [])
        except EpisodeFailed as failed:
            state.record.failure = failed.failure
        except TransportFailure as failed:
            state.record.failure = Failure("transport", failed.route, failed.detail)
        await driver.finish(state)
        if state.record.failure is None:
            try:
                await _after(driver, state, client, tracer)
            except TransportFailure:
                pass
        close = getattr(policy, "aclose", None)
        if close is not None:
            await close()
    state.record.add_calls(state.calls)
    out.write(f"expected answer: {episode.task.expected_answer}; outcome: {state.record.outcome}\n")
    return state.record


async def _after(driver: Driver, state: EpisodeState, client: ServerClient, tracer: Tracer) -> None:
    """What the contract promises once the episode is over (§C.4-C.6)."""
    probe: list[Call] = []
    if isinstance(driver, EnvironmentServerDriver):
        tracer.label = "retrieve_information after close"
        await client.post("retrieve_information", {"prompt": "{{filing}}"}, state.cookies, probe)
        tracer.label = "verify after close (masked)"
        await client.post("verify", state.verify_body, state.cookies, probe)
        tracer.label = "late seed after close (fenced)"
        await client.post("seed_session", driver_seed_again(state), None, probe)
    else:
        tracer.label = "parse_html_page after verify (released)"
        parsed = [
            json.loads(i["arguments"])
            for i in state.trajectory.output
            if i.get("type") == "function_call" and i.get("name") == "parse_html_page"
        ]
        url = parsed[-1].get("url") if parsed else "https://www.sec.gov/"
        await client.post("parse_html_page", {"url": url, "key": "again"}, state.cookies, probe)


def driver_seed_again(state: EpisodeState) -> dict[str, Any]:
    episode = state.episode
    return {
        "resources_session_id": state.record.resources_session_id,
        "episode_id": {"rollout_id": episode.rollout_id, "attempt": 0},
        "task_id": {"taskset": episode.task.taskset, "task_id": episode.task.task_id},
        "task_data": episode.task.data,
    }
