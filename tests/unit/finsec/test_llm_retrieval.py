"""LlmRetrieval (contract §E.2, §E.3) against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from finsec.llm.endpoint import ModelEndpoint
from finsec.llm.templates import STOCK_DIR, load_prompt
from finsec.retrieval.llm_retrieval import LlmRetrieval
from harness.llm_stub import LlmStub, chat_reply, closed_port_url, responses_reply

SYSTEM = "Answer from the document only."


def make_retrieval(stub: LlmStub, **kwargs: Any) -> LlmRetrieval:
    endpoint = kwargs.pop("endpoint", None) or ModelEndpoint(base_url=stub.base_url, model="policy")
    kwargs.setdefault("system_prompt", SYSTEM)
    return LlmRetrieval(endpoint, **kwargs)


def answer(retrieval: LlmRetrieval, prompt: str = "What is revenue in DOC?") -> str:
    async def run() -> str:
        try:
            return await retrieval.answer(prompt)
        finally:
            await retrieval.aclose()

    return asyncio.run(run())


def message(*texts: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t} for t in texts]}


def test_request_shape_and_text_concatenation(stub: LlmStub) -> None:
    reasoning = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking..."}]}
    refusal = {"type": "message", "content": [{"type": "refusal", "refusal": "no"}]}
    stub.reply({"status": "completed", "output": [reasoning, message("Revenue ", "was $5M"), refusal, message(".")]})
    params = {"input": [{"role": "user", "content": "dropped"}], "temperature": 0.2, "top_p": 0.9}
    retrieval = make_retrieval(stub, responses_create_params=params, max_output_tokens=8192)
    assert answer(retrieval) == "Revenue was $5M."
    (received,) = stub.requests
    assert received.path == "/v1/responses"
    assert received.body == {
        "input": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is revenue in DOC?"}],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 8192,
        "model": "policy",
    }
    assert params == {"input": [{"role": "user", "content": "dropped"}], "temperature": 0.2, "top_p": 0.9}


@pytest.mark.parametrize(
    ("params", "option", "sent"),
    [
        (None, 8192, 8192),  # unset: filled from retrieval_max_output_tokens
        ({"input": [], "max_output_tokens": 100}, 8192, 100),  # set in the params: kept
        ({"input": [], "max_output_tokens": None}, 8192, None),  # explicitly null in the params: kept
        (None, None, None),  # option null: an explicit null, i.e. uncapped
    ],
)
def test_max_output_tokens_fill_rule(stub: LlmStub, params: dict | None, option: int | None, sent: int | None) -> None:
    stub.reply(responses_reply("ok"))
    answer(make_retrieval(stub, responses_create_params=params, max_output_tokens=option))
    body = stub.bodies[0]
    assert "max_output_tokens" in body and body["max_output_tokens"] == sent


def test_http_error_quotes_the_first_500_characters(stub: LlmStub) -> None:
    stub.reply("x" * 499 + "y" + "z" * 700, status=503)
    assert answer(make_retrieval(stub)) == "ERROR: Retrieval LLM HTTP 503: " + "x" * 499 + "y"


def test_http_error_with_a_json_body(stub: LlmStub) -> None:
    stub.reply({"error": {"message": "context length exceeded"}}, status=400)
    assert answer(make_retrieval(stub)) == (
        'ERROR: Retrieval LLM HTTP 400: {"error":{"message":"context length exceeded"}}'
    )


@pytest.mark.parametrize(
    ("reply", "suffix"),
    [
        (
            responses_reply(None, incomplete="max_output_tokens"),
            " (incomplete_details.reason=max_output_tokens, status=incomplete)",
        ),
        (
            {"output": [message("")], "status": "failed", "error": {"code": "x", "message": "engine died"}},
            " (status=failed, error=engine died)",
        ),
        ({"output": [{"type": "reasoning", "summary": []}]}, ""),
        ({"output": [], "incomplete_details": None, "status": None, "error": "bad"}, " (error=bad)"),
    ],
)
def test_empty_output_explains_itself(stub: LlmStub, reply: dict, suffix: str) -> None:
    stub.reply(reply)
    assert answer(make_retrieval(stub)) == "ERROR: Retrieval LLM returned no output." + suffix


def test_a_600k_character_prompt_is_forwarded_intact(stub: LlmStub) -> None:
    prompt = 'Summarise {x} and "quotes" and ünïcode.\n' + "0123456789" * 60_000
    assert len(prompt) > 600_000
    stub.reply(responses_reply("summary"))
    assert answer(make_retrieval(stub), prompt) == "summary"
    assert stub.bodies[0]["input"][1]["content"] == prompt


def test_transport_failure_is_a_readable_error() -> None:
    retrieval = LlmRetrieval(ModelEndpoint(base_url=closed_port_url()), system_prompt=SYSTEM)
    result = answer(retrieval)
    prefix = "ERROR: Retrieval LLM call failed: "
    assert result.startswith(prefix) and len(result) > len(prefix)


def test_non_json_reply_is_a_call_failure(stub: LlmStub) -> None:
    stub.reply("<html>proxy</html>")
    assert answer(make_retrieval(stub)).startswith("ERROR: Retrieval LLM call failed: reply is not JSON")


def test_timeout_is_a_call_failure_and_not_retried(stub: LlmStub) -> None:
    stub.reply(responses_reply("late"), delay=1.0)
    endpoint = ModelEndpoint(base_url=stub.base_url, timeout_seconds=0.1)
    result = answer(make_retrieval(stub, endpoint=endpoint))
    assert result.startswith("ERROR: Retrieval LLM call failed: ") and "Timeout" in result
    assert len(stub.requests) == 1


def test_no_retry_after_an_http_error(stub: LlmStub) -> None:
    stub.reply("down", status=500)
    stub.reply(responses_reply("would succeed"))
    assert answer(make_retrieval(stub)) == "ERROR: Retrieval LLM HTTP 500: down"
    assert len(stub.requests) == 1


def test_chat_completions_mode(stub: LlmStub) -> None:
    endpoint = ModelEndpoint(base_url=stub.base_url, api="chat_completions", api_key="sk-r")
    params = {"input": [], "model": "policy", "temperature": 0.0, "truncation": "auto"}
    stub.reply(chat_reply("Revenue was $5M."))
    assert answer(make_retrieval(stub, endpoint=endpoint, responses_create_params=params, max_output_tokens=256)) == (
        "Revenue was $5M."
    )
    (received,) = stub.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-r"
    assert received.body == {
        "model": "policy",
        "temperature": 0.0,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is revenue in DOC?"}],
        "max_tokens": 256,
    }


def test_chat_completions_uncapped_and_truncated_empty(stub: LlmStub) -> None:
    endpoint = ModelEndpoint(base_url=stub.base_url, api="chat_completions")
    stub.reply(chat_reply(None, finish_reason="length"))
    result = answer(make_retrieval(stub, endpoint=endpoint, max_output_tokens=None))
    assert result == (
        "ERROR: Retrieval LLM returned no output. (incomplete_details.reason=max_output_tokens, status=incomplete)"
    )
    assert "max_tokens" not in stub.bodies[0]  # null means uncapped: the server's default applies


def test_system_prompt_from_yaml_and_the_stock_prompt(stub: LlmStub, tmp_path: Path) -> None:
    path = tmp_path / "retrieval.yaml"
    path.write_text("retrieval_system_prompt: |\n\n  Only the filing.\n\n")
    stub.reply(responses_reply("ok"))
    answer(make_retrieval(stub, system_prompt=None, system_prompt_fpath=path))
    assert stub.bodies[0]["input"][0] == {"role": "system", "content": "Only the filing."}
    stock = load_prompt(None, STOCK_DIR / "retrieval.yaml", "retrieval_system_prompt")
    assert LlmRetrieval(ModelEndpoint(base_url=stub.base_url)).system_prompt == stock
    assert "not" in stock and stock == stock.strip()


def test_a_placeholder_repeated_to_paste_a_filing_thousands_of_times_is_refused_unsent(stub: LlmStub) -> None:
    """Every occurrence of {{doc}} is replaced (§E.1 step 7): 10,000 of them in a 50,000-character prompt would
    make one model call of 10,000 copies of the document. The size is checked first, and nothing is sent."""
    from finsec.retrieval.backends import ModelBackend, Selection

    backend = ModelBackend(make_retrieval(stub))
    filing = Selection("digest", "Total net sales | 391,035\n" * 40_000)  # ~1 MB
    stub.reply(responses_reply("ok"))
    assert asyncio.run(backend.answer("revenue {{doc}}", {"doc": filing})) == "ok"
    reply = asyncio.run(backend.answer("{{doc}} " * 10_000, {"doc": filing}))
    assert reply.startswith("ERROR: with its documents pasted in") and "Name each document once" in reply
    assert len(stub.bodies) == 1
