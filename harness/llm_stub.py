"""A real OpenAI-compatible server on loopback for the model-layer tests.

Tests script the replies (`stub.reply(...)`, served in order) and read back every request the stub received
(`stub.requests`). It serves /v1/responses and /v1/chat/completions from one queue; an unscripted request gets a
500 naming the problem, so a test that sends more requests than it expects fails visibly.

For a model that plays many episodes at once, where no fixed order of replies fits, `stub.respond_with(fn)` sets
a function from the request body to the reply body, used when the queue is empty; `tool_calls_reply(...)` is a
chat completion that calls tools, as an agent model's reply does. A chat completion asked for with `stream: true`
is sent as server-sent events.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from finsec_client.threaded_server import ThreadedServer


@dataclass(frozen=True)
class Scripted:
    status: int = 200
    body: dict[str, Any] | str = ""  # a dict is sent as JSON, a string as text/plain
    delay: float = 0.0


@dataclass(frozen=True)
class Received:
    path: str
    body: Any  # the parsed JSON, or the raw text when it is not JSON
    headers: dict[str, str]


def responses_reply(text: str | None = None, *, incomplete: str | None = None, **extra: Any) -> dict[str, Any]:
    """A Responses-API object with one message holding `text` (no message when text is None)."""
    output = [] if text is None else [{"type": "message", "role": "assistant", "content": [_part(text)]}]
    return {
        "object": "response",
        "status": "incomplete" if incomplete else "completed",
        "output": output,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        **extra,
    }


def chat_reply(text: str | None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def tool_calls_reply(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """A chat completion whose assistant message calls these tools: (name, arguments) pairs."""
    tool_calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    return {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": tool_calls},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _chunks(reply: dict[str, Any], request: dict[str, Any]) -> Iterator[str]:
    """A chat completion as the server-sent events of a streamed one (`stream: true`): one delta with the whole
    message, the finish reason, the usage when `stream_options.include_usage` asks for it, then [DONE]."""
    choice = reply["choices"][0]
    message = {
        **choice["message"],
        "tool_calls": [{**call, "index": i} for i, call in enumerate(choice["message"].get("tool_calls") or [])]
        or None,
    }
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": "stub"}
    events = [
        {**base, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
    ]
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append({**base, "choices": [], "usage": reply["usage"]})
    for event in events:
        yield f"data: {json.dumps(event)}\n\n"
    yield "data: [DONE]\n\n"


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


class LlmStub:
    def __init__(self) -> None:
        self._script: deque[Scripted] = deque()
        self._responder: Callable[[Any], dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.app = FastAPI()
        self.app.post("/v1/responses")(self._serve)
        self.app.post("/v1/chat/completions")(self._serve)
        self._server = ThreadedServer(self.app, lifespan="on")
        self.port: int = self._server.port
        self.base_url = f"{self._server.url}/v1"

    # --- scripting, from the test thread ---

    def reply(self, body: dict[str, Any] | str = "", status: int = 200, delay: float = 0.0) -> None:
        with self._lock:
            self._script.append(Scripted(status, body, delay))

    def respond_with(self, responder: Callable[[Any], dict[str, Any]] | None) -> None:
        """Answer every request the queue does not with `responder(request body)` (None: back to 500s)."""
        with self._lock:
            self._responder = responder

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self._responder = None

    @property
    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    # --- the server ---

    async def _serve(self, request: Request) -> Response:
        raw = (await request.body()).decode()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        with self._lock:
            self.requests.append(Received(request.url.path, body, dict(request.headers)))
            scripted = self._script.popleft() if self._script else None
            responder = self._responder
        if scripted is None and responder is not None:
            try:
                reply = responder(body)
            except Exception as error:  # a bug in the test's model: say so, as a failed model call
                return JSONResponse({"error": {"message": f"llm_stub responder: {error!r}"}}, status_code=500)
            if isinstance(body, dict) and body.get("stream") and reply.get("object") == "chat.completion":
                return StreamingResponse(_chunks(reply, body), media_type="text/event-stream")
            return JSONResponse(reply)
        if scripted is None:
            return JSONResponse({"error": {"message": "llm_stub: no scripted reply left"}}, status_code=500)
        if scripted.delay:
            await asyncio.sleep(scripted.delay)
        if isinstance(scripted.body, dict):
            return JSONResponse(scripted.body, status_code=scripted.status)
        return Response(scripted.body, status_code=scripted.status, media_type="text/plain")

    def start(self) -> LlmStub:
        self._server.__enter__()
        return self

    def stop(self) -> None:
        self._server.__exit__(None, None, None)


def closed_port_url() -> str:
    """A loopback URL nobody listens on: every request to it is a connection error."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextmanager
def running_stub() -> Iterator[LlmStub]:
    stub = LlmStub().start()
    try:
        yield stub
    finally:
        stub.stop()
