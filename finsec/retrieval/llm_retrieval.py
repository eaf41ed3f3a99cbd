"""retrieve_information's LLM backend (contract §E.2, §E.3): one call, no retry, every failure a readable string."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

from finsec.llm.endpoint import ModelClient, ModelEndpoint, ModelHTTPError
from finsec.llm.templates import STOCK_DIR, load_prompt
from finsec.metrics import NO_METRICS, Metrics

__all__ = ["DEFAULT_CALL_TIMEOUT_SECONDS", "LlmRetrieval", "no_output_message", "output_text", "STOCK_SYSTEM_PROMPT"]

STOCK_SYSTEM_PROMPT = STOCK_DIR / "retrieval.yaml"
_BODY_LIMIT = 500
# A model that never answers must not hang the tool: NeMo Gym's aiohttp client gave up after 300 s in all.
DEFAULT_CALL_TIMEOUT_SECONDS = 300.0


def output_text(reply: dict[str, Any]) -> str:
    """Every output_text part of every message item, concatenated; reasoning items are not the answer."""
    output = reply.get("output")
    return "".join(
        part["text"]
        for item in (output if isinstance(output, list) else [])
        if isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("content"), list)
        for part in item["content"]
        if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)
    )


def no_output_message(reply: dict[str, Any]) -> str:
    """Says why the reply was empty, naming only what the server reported."""
    details = reply.get("incomplete_details")
    facts = {
        "incomplete_details.reason": details.get("reason") if isinstance(details, dict) else None,
        "status": reply.get("status"),
        "error": _error_text(reply.get("error")),
    }
    present = ", ".join(f"{name}={value}" for name, value in facts.items() if value not in (None, ""))
    return "ERROR: Retrieval LLM returned no output." + (f" ({present})" if present else "")


def _error_text(error: Any) -> str | None:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return error if error is None or isinstance(error, str) else json.dumps(error)


class LlmRetrieval:
    """Answers a fully substituted retrieve_information prompt with an OpenAI-compatible model.

    `max_output_tokens` is `retrieval_max_output_tokens`: it fills the create-params' cap only when they leave it
    unset, and None then means an explicit null (uncapped). `call_timeout` bounds the whole call (None: no bound
    beyond the endpoint's HTTP timeout).
    """

    def __init__(
        self,
        endpoint: ModelEndpoint,
        *,
        system_prompt: str | None = None,
        system_prompt_fpath: str | Path = STOCK_SYSTEM_PROMPT,
        responses_create_params: dict[str, Any] | None = None,
        max_output_tokens: int | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT_SECONDS,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self.call_timeout = call_timeout
        self.metrics = metrics
        self.system_prompt = load_prompt(system_prompt, system_prompt_fpath, "retrieval_system_prompt")
        self.create_params = copy.deepcopy(responses_create_params) if responses_create_params else {"input": []}
        self.max_output_tokens = max_output_tokens
        self.client = ModelClient(endpoint)

    def request(self, prompt: str) -> dict[str, Any]:
        body = copy.deepcopy(self.create_params)
        body["input"] = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": prompt}]
        body.setdefault("max_output_tokens", self.max_output_tokens)
        return body

    async def answer(self, prompt: str) -> str:
        began, ok = time.monotonic(), False
        try:
            reply = await asyncio.wait_for(self.client.create(self.request(prompt)), self.call_timeout)
            ok = True
        except TimeoutError:
            return f"ERROR: Retrieval LLM call failed: no reply within {self.call_timeout:g} seconds"
        except ModelHTTPError as error:
            return f"ERROR: Retrieval LLM HTTP {error.status_code}: {error.text[:_BODY_LIMIT]}"
        except Exception as error:  # the model reads this instead of the episode failing
            return f"ERROR: Retrieval LLM call failed: {str(error) or type(error).__name__}"
        finally:
            self.metrics.model_call("retrieval", ok, time.monotonic() - began)
        return output_text(reply) or no_output_message(reply)

    async def aclose(self) -> None:
        await self.client.aclose()
