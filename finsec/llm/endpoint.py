"""An OpenAI-compatible model server, and the client that sends it Responses-API requests (contract §D.4, §E.3).

Callers always speak the Responses API. When the server only offers Chat Completions (`api: chat_completions`),
the client translates the request and the reply (see `chat.py`), so callers never see the difference.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from finsec.llm.chat import chat_request, responses_reply

__all__ = ["ModelClient", "ModelEndpoint", "ModelHTTPError", "ModelReplyError"]

_ERROR_TEXT_LIMIT = 500


class ModelEndpoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description='the API root that /responses hangs off, e.g. "http://127.0.0.1:8001/v1"')
    api_key: SecretStr | None = Field(None, description="sent as a Bearer token when set")
    api: Literal["responses", "chat_completions"] = "responses"
    model: str | None = Field(None, description="used when the create-params name no model")
    timeout_seconds: float | None = Field(None, gt=0, description="HTTP timeout of one request; null: none")


class ModelHTTPError(Exception):
    """The server answered with a non-2xx status. The full body is kept; the message quotes its start."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"HTTP {status_code}: {text[:_ERROR_TEXT_LIMIT]}")
        self.status_code = status_code
        self.text = text


class ModelReplyError(Exception):
    """A 2xx reply whose body is not a JSON object."""


class ModelClient:
    """One pooled HTTP client per endpoint; close it with `aclose()`.

    `create` raises ModelHTTPError, ModelReplyError, or httpx.HTTPError for transport failures and timeouts.
    """

    def __init__(self, endpoint: ModelEndpoint) -> None:
        self.endpoint = endpoint
        self._root = endpoint.base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {endpoint.api_key.get_secret_value()}"} if endpoint.api_key else {}
        # No pool timeout: under load a request may queue for a connection; the caller's own deadline bounds it.
        timeout = httpx.Timeout(endpoint.timeout_seconds, pool=None)
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout)

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST a Responses create body and return the Responses-shaped reply."""
        if self.endpoint.model and body.get("model") is None:
            body = {**body, "model": self.endpoint.model}
        if self.endpoint.api == "chat_completions":
            return responses_reply(await self._post("/chat/completions", chat_request(body)))
        return await self._post("/responses", body)

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = await self._http.post(self._root + path, json=body)
        if not reply.is_success:
            raise ModelHTTPError(reply.status_code, reply.text)
        try:
            data = reply.json()
        except ValueError as error:
            raise ModelReplyError(f"reply is not JSON ({error}): {reply.text[:_ERROR_TEXT_LIMIT]!r}") from None
        if not isinstance(data, dict):
            raise ModelReplyError(f"reply is not a JSON object: {reply.text[:_ERROR_TEXT_LIMIT]!r}")
        return data

    async def aclose(self) -> None:
        await self._http.aclose()
