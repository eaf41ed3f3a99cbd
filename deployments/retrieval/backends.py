"""retrieve_information's two backends, behind one call: the stored documents named by the prompt go in,
the tool's text comes out (contract §E)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from ..llm.retrieval import LlmRetrieval
from .passages import PassageRetriever
from .prompt import substitute, without_placeholders

Documents = dict[str, tuple[str, int]]  # key -> (text, after input_character_ranges; its offset in the document)


class RetrievalBackend(Protocol):
    async def answer(self, prompt: str, documents: Documents) -> str: ...


class PassageBackend:
    """The embedded default: the passages that best match the prompt's own words."""

    def __init__(self, passages: PassageRetriever):
        self._passages = passages

    async def answer(self, prompt: str, documents: Documents) -> str:
        return await asyncio.to_thread(self._passages.answer, without_placeholders(prompt), documents)


class ModelBackend:
    """NeMo Gym's behaviour: the documents substituted into the prompt and sent to a model (§E.1 step 7-9)."""

    def __init__(self, model: LlmRetrieval):
        self._model = model

    async def answer(self, prompt: str, documents: Documents) -> str:
        return await self._model.answer(substitute(prompt, {key: text for key, (text, _) in documents.items()}))
