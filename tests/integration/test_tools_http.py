"""Every tool route over real HTTP against the Serve app on the embedded corpus: success shapes and each error
text of contract §A.6-A.12, stringified-list coercion (§A.14), date validation and the max_end_date clamp
(Decision 9), and parse_html_page's refusal of what is not an SEC filing."""

from __future__ import annotations

import json

import pytest

from finsec.corpus.generate import ISSUERS, filings

from .conftest import deployed_app, episode_seed, new_session_id

CUTOFF = "2025-03-01"  # the embedded 10-Qs are filed 2025-05-02: after it
HLXR = ISSUERS[0]
TEN_K = next(f for f in filings() if f.issuer == HLXR and f.form == "10-K" and f.fiscal_year == 2024)
URL = "https://www.sec.gov/" + TEN_K.url_path


@pytest.fixture(scope="module")
def app(serve_url):
    # loopback names allowlisted on purpose: the address check must still refuse them after resolution
    yield from deployed_app(
        serve_url,
        "it-tools",
        max_end_date=CUTOFF,
        large_doc_threshold_chars=500,
        fetch_allowed_hosts=["localhost", "127.0.0.1"],
    )


@pytest.fixture
def client(app):
    with app.client() as client:
        yield client


def results(response) -> object:
    assert response.status_code == 200, response.text
    text = response.json()["results"]
    try:
        return json.loads(text)
    except ValueError:
        return text


# ----- sec_filing_search (§A.6) -----


def test_sec_filing_search_lists_filings_newest_first_within_the_cutoff(client):
    rows = results(client.post("/sec_filing_search", json={"ticker": HLXR.ticker.lower()}))
    assert [r["filing_date"] for r in rows] == sorted((r["filing_date"] for r in rows), reverse=True)
    assert all(r["filing_date"] <= CUTOFF for r in rows) and {r["form"] for r in rows} == {"10-K", "8-K"}
    assert set(rows[0]) == {
        "ticker",
        "company_name",
        "form",
        "filing_date",
        "report_date",
        "accession_number",
        "filing_url",
    }
    assert rows[0]["filing_url"] == URL


@pytest.mark.parametrize("form_types", [["10-K"], '["10-K"]', "['10-K']"], ids=["list", "json", "python"])
def test_sec_filing_search_form_filter_accepts_stringified_lists(client, form_types):
    rows = results(client.post("/sec_filing_search", json={"ticker": HLXR.ticker, "form_types": form_types}))
    assert rows and all(r["form"] == "10-K" for r in rows)


@pytest.mark.parametrize("form_types", ["10-K", "null", '{"form": "10-K"}'])
def test_sec_filing_search_rejects_a_bare_string_with_422(client, form_types):
    r = client.post("/sec_filing_search", json={"ticker": HLXR.ticker, "form_types": form_types})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "form_types"]


def test_sec_filing_search_error_texts(client):
    unknown = results(client.post("/sec_filing_search", json={"ticker": "NOPE9"}))
    assert unknown["error"] == "No company found for ticker 'NOPE9'" and "company_tickers.json" in unknown["suggestion"]
    empty = results(
        client.post(
            "/sec_filing_search",
            json={
                "ticker": HLXR.ticker,
                "form_types": ["DEF 14A"],
                "start_date": "2024-01-01",
                "end_date": "2024-02-01",
            },
        )
    )
    assert empty["error"] == (
        f"No filings found for '{HLXR.ticker}' with form types ['DEF 14A'], start_date=2024-01-01, end_date=2024-02-01"
    )
    assert empty["suggestion"].startswith("Try broadening your search")
    bad = results(client.post("/sec_filing_search", json={"ticker": HLXR.ticker, "end_date": "2024/12/31"}))
    assert bad == {"error": "Invalid end_date format: '2024/12/31'. Expected YYYY-MM-DD."}
    later = results(
        client.post(
            "/sec_filing_search", json={"ticker": HLXR.ticker, "start_date": "2024-06-01", "end_date": "2024-01-01"}
        )
    )
    assert "later than end_date" in later["error"]


# ----- edgar_search (§A.7) -----


def test_edgar_search_full_text_ranks_the_matching_filing_first(client):
    rows = results(client.post("/edgar_search", json={"search_query": f"{HLXR.business} revenues", "top_n_results": 3}))
    assert rows[0]["ticker"] == HLXR.ticker and len(rows) <= 3
    assert set(rows[0]) == {
        "accessionNo",
        "cik",
        "companyNameLong",
        "ticker",
        "description",
        "formType",
        "type",
        "filingUrl",
        "filedAt",
    }
    assert all(r["filedAt"] <= CUTOFF for r in rows)


def test_edgar_search_filters_and_browse(client):
    rows = results(client.post("/edgar_search", json={"search_query": "*", "ciks": f"['{HLXR.cik}']"}))
    assert rows and {r["cik"] for r in rows} == {str(HLXR.cik)}
    rows = results(
        client.post("/edgar_search", json={"search_query": "net income", "form_types": ["10-K"], "ciks": [HLXR.cik]})
    )
    assert rows and {(r["formType"], r["cik"]) for r in rows} == {("10-K", str(HLXR.cik))}


def test_edgar_search_errors(client):
    assert results(client.post("/edgar_search", json={"search_query": "  "}))["error"].startswith(
        "search_query is required and cannot be empty"
    )
    later = results(
        client.post("/edgar_search", json={"search_query": "x", "start_date": "2024-06-01", "end_date": "2024-01-01"})
    )
    assert later["error"] == (
        "Parameter start_date '2024-06-01' was set to a date that is later than end_date '2024-01-01'"
    )
    outside = results(
        client.post(
            "/edgar_search", json={"search_query": "revenue", "start_date": "1990-01-01", "end_date": "1991-01-01"}
        )
    )
    assert outside["error"].startswith("No filings are indexed between 1990-01-01 and 1991-01-01")
    assert results(client.post("/edgar_search", json={"search_query": "x", "ciks": ["abc"]}))["error"]
    for bad in ({"page": 0}, {"top_n_results": 101}, {"top_n_results": 0}):
        assert client.post("/edgar_search", json={"search_query": "x", **bad}).status_code == 422


# ----- parse_html_page and retrieve_information (§A.8, §A.9, §E) -----


def test_parse_html_page_messages(client):
    client.post("/seed_session", json={})
    assert results(client.post("/parse_html_page", json={"url": "", "key": "a"})) == "ERROR: url is required."
    assert results(client.post("/parse_html_page", json={"url": URL, "key": ""})) == "ERROR: key is required."
    first = results(client.post("/parse_html_page", json={"url": URL, "key": "a"}))
    assert first.startswith(
        "SUCCESS: The result has been saved to the data storage under the key: a.\n"
        "The data_storage currently contains the following keys:\na\n"
    )
    assert "input_character_ranges" in first  # Decision 12: this module's threshold is 500 characters
    client.post("/parse_html_page", json={"url": URL, "key": "b"})
    again = results(client.post("/parse_html_page", json={"url": URL, "key": "a"}))
    assert (
        again.startswith(
            "WARNING: The key already exists in the data storage. The new result overwrites the old one.\nSUCCESS"
        )
        and "keys:\na\nb\n" in again
    )


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1:8000/healthz", "127.0.0.1 is a loopback address"),
        ("http://localhost:8000/healthz", "localhost resolves to"),  # allowlisted name, loopback address
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://10.1.2.3/", "10.1.2.3 is a private-network address"),
        ("https://example.com/", "not on the allowlist"),
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("http://user@localhost/", "credentials"),
    ],
)
def test_parse_html_page_refuses_what_is_not_an_sec_filing_or_allowlisted(client, app, url, why):
    client.post("/seed_session", json={})
    text = results(client.post("/parse_html_page", json={"url": url, "key": "x"}))
    assert text.startswith(f"Refused to fetch {url}") and why in text, text
    # nothing was stored
    assert results(client.post("/retrieve_information", json={"prompt": "{{x}}"})).startswith(
        "ERROR: The key 'x' was not found"
    )


def test_parse_html_page_reports_missing_filings(client):
    client.post("/seed_session", json={})
    missing = URL.rsplit("/", 1)[0] + "/no-such-document.htm"
    assert results(client.post("/parse_html_page", json={"url": missing, "key": "x"})) == (
        f"Failed to download filing from {missing}. The SEC server may be temporarily unavailable."
    )


def test_retrieve_information_errors_and_ranges(client):
    client.post("/seed_session", json={})
    client.post("/parse_html_page", json={"url": URL, "key": "doc"})
    assert results(client.post("/retrieve_information", json={"prompt": "no key"})).startswith(
        "ERROR: Your prompt must include at least one key from data storage in the format {{key_name}}."
    )
    assert results(client.post("/retrieve_information", json={"prompt": "{{doc}} {{ doc }}"})) == (
        "ERROR: The key ' doc ' was not found in the data storage. Available keys are: doc. "
        "Use the parse_html_page tool to add keys to the data storage."
    )
    full = results(client.post("/retrieve_information", json={"prompt": "Net cash provided by operating {{doc}}"}))
    assert f"{TEN_K.facts['NetCashProvidedByUsedInOperatingActivities']:,}" in full
    ranged = results(
        client.post(
            "/retrieve_information",
            json={
                "prompt": "Net cash provided by operating {{doc}}",
                "input_character_ranges": '[{"key": "doc", "start": 0, "end": 200}]',
            },
        )
    )
    assert f"{TEN_K.facts['NetCashProvidedByUsedInOperatingActivities']:,}" not in ranged
    bad = results(
        client.post(
            "/retrieve_information",
            json={"prompt": "{{doc}}", "input_character_ranges": [{"key": "doc", "start": "0", "end": 10}]},
        )
    )
    assert bad.startswith("ERROR: input_character_ranges for key 'doc' needs integer start and end")
    assert (
        client.post(
            "/retrieve_information",
            json={"prompt": "{{doc}}", "input_character_ranges": '{"key": "doc", "start": 0, "end": 9}'},
        ).status_code
        == 422
    )


def test_passage_character_ranges_point_into_the_stored_document(client):
    """The ranges the embedded backend cites are usable as input_character_ranges (they index the document)."""
    client.post("/seed_session", json={})
    client.post("/parse_html_page", json={"url": URL, "key": "doc"})
    reply = results(client.post("/retrieve_information", json={"prompt": "Purchases of property {{doc}}"}))
    header = reply.split("\n\n")[1].splitlines()[0]  # "[doc characters S-E]"
    start, end = map(int, header.split()[-1].rstrip("]").split("-"))
    again = results(
        client.post(
            "/retrieve_information",
            json={
                "prompt": "Purchases of property {{doc}}",
                "input_character_ranges": [{"key": "doc", "start": start, "end": end}],
            },
        )
    )
    assert f"[doc characters {start}-{end}]" in again


# ----- submit_final_result, web_search, unknown tools -----


def test_submit_final_result(client):
    assert results(client.post("/submit_final_result", json={"final_result": ""})) == (
        "ERROR: final_result is required. Please provide your answer."
    )
    assert results(client.post("/submit_final_result", json={"final_result": "$3.8 billion"})) == {
        "success": True,
        "result": "$3.8 billion",
    }
    assert client.post("/submit_final_result", json={}).status_code == 422


def test_web_search_is_off_without_a_key(client):
    assert results(client.post("/web_search", json={"search_query": "apple 10-k"})) == {
        "error": "web_search is not available. Use sec_filing_search, parse_html_page, and retrieve_information "
        "instead."
    }
    assert client.post("/web_search", json={"search_query": "x", "number_of_results": 21}).status_code == 422


def test_search_tools_never_touch_session_state(client, app):
    sid = new_session_id()
    client.post("/seed_session", json=episode_seed(sid))
    client.post("/close_session", json={"resources_session_id": sid, "episode_id": {"rollout_id": "r1"}})
    for route, body in (
        ("/sec_filing_search", {"ticker": HLXR.ticker}),
        ("/edgar_search", {"search_query": "x"}),
        ("/web_search", {"search_query": "x"}),
        ("/submit_final_result", {"final_result": "x"}),
    ):
        assert client.post(route, json=body).status_code == 200, route
    assert app.describe(sid)["open"] is False
