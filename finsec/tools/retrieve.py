"""retrieve_information (contract §E): the documents a prompt names, by key, through the retrieval backend.

The shard answers with digests only; texts come from this replica's document cache, and cross a hop only on
its first use of a text. A text the document store lost (it restarted) is parsed again from its URL when it is
a filing, which yields the same text; otherwise the session's state is gone, and it is reported as lost.
"""

from __future__ import annotations

import logging
from typing import Any

from finsec import offload
from finsec.document_cache import DocumentCache
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts, filing_of
from finsec.retrieval.backends import RetrievalBackend, Selection
from finsec.retrieval.prompt import NO_PLACEHOLDER, PromptError, character_ranges, missing_key_error, placeholder_keys
from session_store import Claims, DocumentRef, SessionLost, SessionStore

__all__ = ["Retriever"]

log = logging.getLogger(__name__)
_INLINE_RANGES = 1_000


class Retriever:
    def __init__(self, store: SessionStore, documents: DocumentCache, filings: FilingTexts, backend: RetrievalBackend):
        self._store = store
        self._documents = documents
        self._filings = filings
        self._backend = backend

    async def retrieve(self, sid: str, claims: Claims, prompt: str, ranges: list[Any] | None) -> str:
        # The prompt's and the ranges' own errors first, then the session (Decision 13), then its keys.
        keys = placeholder_keys(prompt)
        if not keys:
            return NO_PLACEHOLDER
        # a long list of ranges is a walk long enough to stall other requests (tests/unit/deployments/test_hostile_bodies.py,
        # "200,000 range objects"): off the event loop when it is long
        try:
            bounds = await offload.run(len(ranges or ()), character_ranges, ranges, limit=_INLINE_RANGES)
        except PromptError as error:
            return str(error)
        view = await self._store.read_documents(sid, keys, claims)  # 404 when not open (§E.1 step 3)
        for key in keys:
            if key not in view.documents:
                return missing_key_error(key, view.keys)
        refs = view.documents
        texts = await self._documents.texts(sorted({ref.digest for ref in refs.values()}))
        for ref in refs.values():
            if ref.digest not in texts:
                texts[ref.digest] = await self._recover(sid, ref)
        selections = {
            key: Selection(ref.digest, texts[ref.digest], *bounds.get(key, (None, None))) for key, ref in refs.items()
        }
        return await self._backend.answer(prompt, selections)

    async def _recover(self, sid: str, ref: DocumentRef) -> str:
        try:
            parsed = await self._filings.parse(ref.url) if filing_of(ref.url) is not None else None
        except DocumentUnavailable:
            parsed = None
        if parsed is not None and parsed.digest == ref.digest:
            await self._documents.remember(ref.digest, parsed.text, ref.url, filing=True)
            return parsed.text
        log.warning(
            "session %s: the text of %s is gone from the document store; reporting the session lost", sid, ref.url
        )
        await self._store.mark_lost(sid)
        raise SessionLost(sid, "the server lost the text of one of its documents (its document store restarted)")
