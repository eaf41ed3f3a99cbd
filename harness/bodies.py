"""Request bodies of the contract, and the session cookie's claims, as every test suite builds and reads them."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]  # the project root


def new_session_id() -> str:
    return f"resources-session-{uuid.uuid4().hex}"


def episode_seed(sid: str, rollout: str = "r1", task: str = "t1", **task_data: Any) -> dict[str, Any]:
    return {
        "resources_session_id": sid,
        "episode_id": {"rollout_id": rollout, "attempt": 0},
        "task_id": {"taskset": "finance", "task_id": task},
        "task_data": {"question": "q", "expected_answer": "42", **task_data},
    }


def close_body(sid: str, rollout: str = "r1") -> dict[str, Any]:
    return {"resources_session_id": sid, "episode_id": {"rollout_id": rollout, "attempt": 0}}


def verify_body(answer: str | None = "42", expected: str = "42") -> dict[str, Any]:
    output = []
    if answer is not None:
        output.append(
            {
                "type": "function_call",
                "name": "submit_final_result",
                "call_id": "c",
                "arguments": json.dumps({"final_result": answer}),
            }
        )
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "What is it?"}]},
        "response": {"output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}},
        "question": "What is it?",
        "expected_answer": expected,
    }


def cookie_claims(response: httpx.Response, name: str) -> dict[str, Any]:
    """The claims of the session cookie a response sets (Starlette format: base64(json).timestamp.signature)."""
    for header in response.headers.get_list("set-cookie"):
        cookie_name, _, rest = header.partition("=")
        if cookie_name == name:
            return claims_of(rest.split(";")[0])
    raise AssertionError(f"response {response.status_code} set no {name} cookie")


def claims_of(cookie: str) -> dict[str, Any]:
    """The claims a session cookie's value carries."""
    payload = cookie.split(".")[0]
    return json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
