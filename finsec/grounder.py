"""Grounding in /verify: the answer's figures checked against the texts of the documents this session stored.
The rule is in finsec/grading/grounding.py.

What it costs a verify:
- no shard call of its own: the deterministic verify's one call (`finish_verify`) hands back the session's
  document refs as they were before it released anything. Only where the verdict itself depends on grounding
  (`require_grounded_answer`) or the judge path is taken are the refs read first (`document_refs`, a read with
  no side effects);
- texts from this replica's document cache (a hop only on the replica's first use of a text);
- the numbers of each text indexed once per replica, off the event loop, and kept by digest under a byte budget
  (`grounding_index_cache_bytes`). A GRPO group of 16 verifies of one filing indexes it once; concurrent first
  uses share one build.
Nothing is looked up when there is nothing to check: an answer with no figures, or a session that is not open
(never seeded, released, or lost: its verify is masked). A text the document store lost gives null grounding:
the server cannot tell.
"""

from __future__ import annotations

import asyncio
from typing import Any

from finsec import offload
from finsec.document_cache import DocumentCache
from finsec.grading.answer import submitted_answer
from finsec.grading.grounding import NOT_CHECKED, FigureIndex, Grounding, answer_figures, ground
from finsec.single_flight import SingleFlight
from session_store import BoundedLru, DocumentRef, SessionStore

__all__ = ["Grounder"]


class Grounder:
    def __init__(self, store: SessionStore, documents: DocumentCache, *, index_cache_bytes: int):
        self._store = store
        self._documents = documents
        self._indexes: BoundedLru[str, FigureIndex] = BoundedLru(index_cache_bytes, lambda index: index.nbytes)
        self._building: SingleFlight[str, FigureIndex] = SingleFlight()

    async def ground(self, sid: str, response: dict[str, Any], size: int) -> Grounding:
        """Grounding of the trajectory's submitted answer in the open session's documents, read first."""
        figures = await self.figures(response, size)
        if not figures:
            return NOT_CHECKED
        refs = await self._store.document_refs(sid)
        return NOT_CHECKED if refs is None else await self.against(figures, refs, size)

    async def figures(self, response: dict[str, Any], size: int) -> list:
        """The answer's figures; reading a big trajectory runs off the event loop."""
        return await offload.run(size, lambda: answer_figures(submitted_answer(response)))

    async def against(self, figures: list, refs: dict[str, DocumentRef], size: int) -> Grounding:
        """Grounding of `figures` in the texts of these document refs."""
        if not figures or not refs:
            return NOT_CHECKED if not figures else ground(figures, [])
        digests = sorted({ref.digest for ref in refs.values()})
        texts = await self._documents.texts(digests)
        if len(texts) < len(digests):  # the document store lost a text: cannot tell
            return NOT_CHECKED
        indexes = [await self._index(digest, text) for digest, text in texts.items()]
        return await offload.run(size, ground, figures, indexes)  # a long answer has many figures to look up

    async def _index(self, digest: str, text: str) -> FigureIndex:
        index = self._indexes.get(digest)
        if index is None:
            # Once per text and replica: always a worker thread, whatever the text's size.
            index = await self._building.run(digest, lambda: asyncio.to_thread(FigureIndex, text))
            self._indexes.put(digest, index)
        return index
