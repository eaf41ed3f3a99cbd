"""A document store at its byte budget (document_store_bytes), filled with the real filings of
../shared/data/edgar-real (skipped when absent)."""

from __future__ import annotations

import pytest

from harness.real_filings import EDGAR_REAL, manifest, needs_real_filings

from .conftest import close_body, deployed_app, episode_seed, new_session_id

pytestmark = needs_real_filings


@pytest.fixture(scope="module")
def small_store(serve_url):
    yield from deployed_app(serve_url, "it-real-small-store", corpus_dir=EDGAR_REAL, document_store_bytes=1_000_000)


def test_a_full_document_store_is_a_tool_error_and_the_session_goes_on(small_store):
    """The document store's own refusal crosses the actor hop as itself: the tool says what to do (a 200 with
    ERROR text), not a 503 claiming the store is restarting."""
    urls = ["https://www.sec.gov/" + row["url_path"] for row in manifest()]
    sid = new_session_id()
    with small_store.client() as client:
        assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
        results = []
        for i, url in enumerate(urls):
            reply = client.post("/parse_html_page", json={"url": url, "key": f"doc{i}"})
            assert reply.status_code == 200, reply.text
            results.append(reply.json()["results"])
        refused = [r for r in results if r.startswith("ERROR")]
        assert refused and all("document store is full" in r and "document_store_bytes" in r for r in refused)
        assert results[0].startswith("SUCCESS")  # what was stored before it filled stays usable
        passages = client.post("/retrieve_information", json={"prompt": "net sales {{doc0}}"})
        assert passages.status_code == 200 and passages.json()["results"]
        assert client.post("/close_session", json=close_body(sid)).status_code == 200
