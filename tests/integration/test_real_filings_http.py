"""The Amazon FY2024 operating-cash-flow question answered through the tools, with the embedded retrieval and
grader (no model endpoint), the server pointed at ../shared/data/edgar-real (skipped when absent)."""

from __future__ import annotations

import json

import pytest

from harness.real_filings import EDGAR_REAL, needs_real_filings

from .conftest import close_body, deployed_app, episode_seed, new_session_id, verify_body

pytestmark = needs_real_filings
QUESTION = "What was Amazon's net cash provided by operating activities in fiscal year 2024?"
EXPECTED = "$115,877 million"


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-real", corpus_dir=EDGAR_REAL)


def test_amazon_operating_cash_flow_end_to_end(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid, question=QUESTION, expected_answer=EXPECTED))
        hits = json.loads(
            client.post(
                "/edgar_search",
                json={"search_query": "Amazon net cash provided by operating activities", "form_types": ["10-K"]},
            ).json()["results"]
        )
        assert hits[0]["ticker"] == "AMZN"
        filings = json.loads(
            client.post(
                "/sec_filing_search", json={"ticker": "AMZN", "form_types": ["10-K"], "start_date": "2025-01-01"}
            ).json()["results"]
        )
        url = filings[0]["filing_url"]
        assert url == hits[0]["filingUrl"]
        assert (
            client.post("/parse_html_page", json={"url": url, "key": "amzn_10k"})
            .json()["results"]
            .startswith("SUCCESS")
        )
        passages = client.post("/retrieve_information", json={"prompt": QUESTION + " {{amzn_10k}}"}).json()["results"]
        assert "115,877" in passages[:8000]
        rewards = {}
        for answer in ("$115.9 billion", "115,877 million", "$11.6 billion"):
            body = {**verify_body(answer, expected=EXPECTED), "question": QUESTION}
            rewards[answer] = client.post("/verify", json=body).json()["reward"]
        client.post("/close_session", json=close_body(sid))
    assert rewards == {"$115.9 billion": 1.0, "115,877 million": 1.0, "$11.6 billion": 0.0}
