"""retrieve_information's two backends, behind one call: the stored documents named by the prompt go in,
the tool's text comes out (contract §E)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from finsec import offload
from finsec.metrics import NO_METRICS, Metrics
from finsec.retrieval.llm_retrieval import LlmRetrieval
from finsec.retrieval.passages import Excerpt, IndexedDocument, PassageRetriever
from finsec.retrieval.prompt import substitute, without_placeholders
from finsec.single_flight import SingleFlight
from session_store.lru import BoundedLru

__all__ = [
    "MAX_SUBSTITUTED_CHARS",
    "ModelBackend",
    "PassageBackend",
    "QUESTION_INLINE_CHARS",
    "RetrievalBackend",
    "SCORE_INLINE_CHARS",
    "Selection",
]

SCORE_INLINE_CHARS = 3_000_000  # of stored documents, read through cached indexes
QUESTION_INLINE_CHARS = 2_000  # of prompt: each character of a question costs far more than one of a document


@dataclass(frozen=True)
class Selection:
    """A stored document named by the prompt: its text (by digest) and the range input_character_ranges gave."""

    digest: str
    text: str
    start: int | None = None
    end: int | None = None

    def sliced(self) -> str:
        return self.text[self.start : self.end]


class RetrievalBackend(Protocol):
    async def answer(self, prompt: str, documents: dict[str, Selection]) -> str: ...


class PassageBackend:
    """The embedded default: the passages that best match the prompt's own words. Indexes are cached by
    digest, so one index serves every session that stores the same text; building one runs off the loop."""

    def __init__(self, passages: PassageRetriever, index_cache_bytes: int, metrics: Metrics = NO_METRICS):
        self._passages = passages
        self._metrics = metrics
        self._indexes: BoundedLru[str, IndexedDocument] = BoundedLru(index_cache_bytes, lambda d: d.nbytes)
        self._building: SingleFlight[str, IndexedDocument] = SingleFlight()  # first calls for one text: one build

    async def _index(self, selection: Selection) -> IndexedDocument:
        index = self._indexes.get(selection.digest)
        self._metrics.cache_lookup("indexes", index is not None)
        if index is not None:
            return index
        index = await self._building.run(selection.digest, lambda: asyncio.to_thread(IndexedDocument, selection.text))
        self._indexes.put(selection.digest, index)
        return index

    async def answer(self, prompt: str, documents: dict[str, Selection]) -> str:
        excerpts = {key: Excerpt(await self._index(s), s.start or 0, s.end) for key, s in documents.items()}
        # Several big filings, or a long prompt (its words are weighed, split into parts and scored), go to a
        # worker thread: the whole input decides, not the documents alone.
        heavy = (
            sum(len(s.text) for s in documents.values()) >= SCORE_INLINE_CHARS or len(prompt) >= QUESTION_INLINE_CHARS
        )
        return await offload.run(int(heavy), self._passages.answer, without_placeholders(prompt), excerpts, limit=1)


MAX_SUBSTITUTED_CHARS = 16_000_000  # a prompt with its documents pasted in: what one model call may carry


class ModelBackend:
    """NeMo Gym's behaviour: the documents substituted into the prompt and sent to a model (§E.1 step 7-9)."""

    def __init__(self, model: LlmRetrieval):
        self.model = model

    async def answer(self, prompt: str, documents: dict[str, Selection]) -> str:
        contents = {key: s.sliced() for key, s in documents.items()}
        # Every occurrence is replaced: 10,000 "{{doc}}" in a prompt would paste a filing 10,000 times.
        size = len(prompt) + sum(prompt.count("{{" + key + "}}") * len(text) for key, text in contents.items())
        if size > MAX_SUBSTITUTED_CHARS:
            return (
                f"ERROR: with its documents pasted in at every placeholder, this prompt would be {size:,} "
                f"characters, over the {MAX_SUBSTITUTED_CHARS:,} one retrieval may send. Name each document "
                "once, or read a part of it with input_character_ranges."
            )
        return await self.model.answer(substitute(prompt, contents))
