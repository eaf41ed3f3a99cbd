"""The main job on the embedded default: a local Ray cluster, the Serve app, a few sessions driven through
their lifecycle over HTTP, then a clean shutdown. No network, no keys.

    python -m deployments.demo [--replicas 2] [--shards 4]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

import httpx

from .corpus.generate import embedded_corpus_dir, questions
from .local import deploy, start_ray_and_serve, stop_ray_and_serve, undeploy
from .settings import Settings


def _submit(answer: str) -> dict:
    call = {"type": "function_call", "name": "submit_final_result", "call_id": "c1",
            "arguments": json.dumps({"final_result": answer})}
    return {"output": [call]}


def _say(step: str, response: httpx.Response, detail: str = "") -> None:
    print(f"  {response.status_code}  {step:<44} {detail}")


def run_episode(base_url: str, task: dict, answer: str, index: int) -> None:
    """One rollout as NeMo Gym's single_agent_turn drives it (contract §A.1-A.3, §C)."""
    rsid = f"resources-session-{uuid.uuid4().hex}"
    episode = {"rollout_id": f"demo-{index}", "attempt": 0}
    seed = {"resources_session_id": rsid, "episode_id": episode,
            "task_id": {"taskset": "embedded", "task_id": str(index)}, "task_data": task}
    print(f"episode {index}: {task['question']}")
    with httpx.Client(base_url=base_url, timeout=60) as client:
        r = client.post("/seed_session", json=seed)
        _say("episode seed", r, r.json()["resources_session_id"][:34] + "...")
        r = client.post("/sec_filing_search", json={"ticker": task["ticker"], "form_types": [task["form"]]})
        found = json.loads(r.json()["results"])
        _say("sec_filing_search", r, f"{len(found)} {task['form']} filings of {task['ticker']}, newest "
             f"{found[0]['filing_date']}")
        r = client.post("/parse_html_page", json={"url": task["url"], "key": "filing"})
        _say("parse_html_page -> key 'filing'", r, r.json()["results"].splitlines()[0][:60])
        r = client.post("/retrieve_information", json={"prompt": task["question"] + " {{filing}}"})
        best = r.json()["results"].split("\n\n")[1].splitlines()
        _say("retrieve_information", r, f"best passage {best[0]} {best[1][:40]}...")
        r = client.post("/submit_final_result", json={"final_result": answer})
        _say("submit_final_result", r, answer)
        body = {"responses_create_params": {"input": [{"role": "user", "content": task["question"]}]},
                "response": _submit(answer), "question": task["question"], "expected_answer": task["expected_answer"]}
        r = client.post("/verify", json=body)
        _say("verify", r, f"reward={r.json()['reward']} (expected {task['expected_answer']}: {r.json()['judge_text']})")
        r = client.post("/verify", json=body)
        _say("verify re-sent before close (cached)", r, f"reward={r.json()['reward']}")
        r = client.post("/close_session", json={"resources_session_id": rsid, "episode_id": episode})
        _say("close_session", r)
        r = client.post("/retrieve_information", json={"prompt": "{{filing}}"})
        _say("retrieve_information after close", r, r.json().get("failure_kind", ""))
        r = client.post("/verify", json=body)
        _say("verify after close (masked)", r, f"mask_sample={r.json()['mask_sample']} "
             f"failure_kind={r.json()['failure_kind']}")
        r = client.post("/seed_session", json=seed)
        _say("late seed after close (fenced)", r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    options = parser.parse_args()

    started = time.monotonic()
    corpus = embedded_corpus_dir()
    settings = Settings(app_name="finsec-demo", num_shards=options.shards, corpus_dir=corpus)
    print(f"embedded corpus: {corpus}")
    base_url = start_ray_and_serve()
    try:
        deploy(settings, base_url, replicas=options.replicas)
        print(f"finsec-serve is up at {base_url} ({options.replicas} ingress replicas, {options.shards} shards) "
              f"after {time.monotonic() - started:.1f}s\n")
        tasks = questions()
        thousands = float(tasks[0]["expected_answer"].strip("$ thousand").replace(",", ""))
        run_episode(base_url, tasks[0], f"about ${thousands / 1000:,.1f} million", 0)  # other units, same amount
        run_episode(base_url, tasks[1], "$1 thousand", 1)
        print("\nagent-run session (legacy agent):")
        with httpx.Client(base_url=base_url, timeout=60) as client:
            _say("agent-run seed {}", client.post("/seed_session", json={}))
            r = client.post("/parse_html_page", json={"url": tasks[2]["url"], "key": "doc"})
            _say("parse_html_page", r, r.json()["results"].splitlines()[0][:60])
            r = client.post("/verify", json={
                "responses_create_params": {"input": tasks[2]["question"]}, "response": _submit("no idea"),
                "question": tasks[2]["question"], "expected_answer": tasks[2]["expected_answer"]})
            _say("verify (releases the agent-run session)", r, f"reward={r.json()['reward']}")
            r = client.post("/parse_html_page", json={"url": tasks[2]["url"], "key": "doc"})
            _say("parse_html_page after verify", r, r.json().get("failure_kind", ""))
        print(f"\ndone in {time.monotonic() - started:.1f}s; shutting down")
    finally:
        undeploy(settings)
        stop_ray_and_serve()


if __name__ == "__main__":
    main()
