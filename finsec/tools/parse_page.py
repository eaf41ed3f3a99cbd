"""parse_html_page (contract §A.8, Decision 12): fetch or look up a page's text and store it under a key.

A document is stored by content: the session's shard records `key -> digest`, and the text goes to the app's
document store once, however many sessions parse it. The common case (a filing this replica already holds,
as in every GRPO group after its first rollout) costs one shard call and nothing else.
"""

from __future__ import annotations

from finsec.document_cache import DocumentCache
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts, filing_of
from finsec.tools.limits import key_problem, url_problem
from session_store import Claims, DocumentRef, DocumentRefused, SessionStore, StoreFull

__all__ = ["PageParser"]


class PageParser:
    def __init__(
        self, store: SessionStore, documents: DocumentCache, filings: FilingTexts, *, large_doc_threshold_chars: int
    ):
        self._store = store
        self._documents = documents
        self._filings = filings
        self._threshold = large_doc_threshold_chars

    def argument_error(self, url: str, key: str) -> str | None:
        """§A.8 step 2, the length and character rules of URLs and keys, and the filing-URL rules: all of them
        before the session check (Decision 13)."""
        if not url:
            return "ERROR: url is required."
        if not key:
            return "ERROR: key is required."
        if problem := url_problem(url) or key_problem(key):
            return problem
        try:
            filing_of(url)
        except DocumentUnavailable as error:
            return str(error)
        return None

    async def parse(self, sid: str, claims: Claims, url: str, key: str) -> str:
        try:
            filing = filing_of(url) is not None
            found = self._documents.local_filing(url) if filing else None
            if found is None:
                await self._store.check_open(sid, claims)  # 404 before any upstream work (Decision 13)
                found = await self._documents.filing(url) if filing else None
                if found is None:
                    parsed = await self._filings.parse(url)
                    found = (parsed.digest, parsed.text)
            digest, text = found
            await self._documents.remember(digest, text, url, filing=filing)
        except DocumentUnavailable as error:
            return str(error)
        except StoreFull as error:
            return f"ERROR: {error}"
        try:
            stored = await self._store.put_document(sid, key, DocumentRef(digest, len(text), url), claims)
        except DocumentRefused as error:  # a per-session limit: the agent can overwrite a key instead
            return str(error)
        lines = []
        if stored.overwritten:
            lines.append("WARNING: The key already exists in the data storage. The new result overwrites the old one.")
        lines.append(f"SUCCESS: The result has been saved to the data storage under the key: {key}.")
        lines.append("The data_storage currently contains the following keys:")
        lines.extend(stored.keys)
        if len(text) > self._threshold:  # Decision 12
            lines.append(
                f"NOTE: The document under '{key}' is {len(text):,} characters long. To read it in parts, pass "
                f"input_character_ranges to retrieve_information, e.g. "
                f'[{{"key": "{key}", "start": 0, "end": {self._threshold}}}].'
            )
        return "\n".join(lines) + "\n"
