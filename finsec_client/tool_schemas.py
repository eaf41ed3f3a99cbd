"""The tools as an OpenAI-compatible model sees them: names, descriptions, and JSON schemas derived from the
server's own request models (finsec/contract.py), so they cannot drift from what the routes accept."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from finsec.contract import (
    EdgarSearchRequest,
    ParseHtmlPageRequest,
    RetrieveInformationRequest,
    SecFilingSearchRequest,
    SubmitFinalResultRequest,
    WebSearchRequest,
)

TOOLS: dict[str, tuple[type[BaseModel], str]] = {
    "sec_filing_search": (SecFilingSearchRequest, (
        "List a company's SEC filings by stock ticker: form, filing date, report date and filing_url for each, "
        "newest first. Filter with form_types (e.g. [\"10-K\"]) and start_date/end_date (YYYY-MM-DD).")),
    "edgar_search": (EdgarSearchRequest, (
        "Full-text search over EDGAR filings. Returns matching filings with their URLs.")),
    "parse_html_page": (ParseHtmlPageRequest, (
        "Fetch a filing (or page) by URL, reduce it to text and store it in this session under `key`.")),
    "retrieve_information": (RetrieveInformationRequest, (
        "Ask a question about stored documents: the prompt must name each document as {{key}}. Returns the "
        "passages that answer it. input_character_ranges restricts a key to [{\"key\", \"start\", \"end\"}].")),
    "submit_final_result": (SubmitFinalResultRequest, (
        "Submit your final answer, with figures and units. Call it exactly once, when you are done.")),
    "web_search": (WebSearchRequest, "Search the web (only when the server has web search configured)."),
}
DEFAULT_TOOLS = ("sec_filing_search", "edgar_search", "parse_html_page", "retrieve_information",
                 "submit_final_result")


def tool_schemas(names: tuple[str, ...] = DEFAULT_TOOLS) -> list[dict[str, Any]]:
    """Chat-completions `tools`: [{"type": "function", "function": {name, description, parameters}}]."""
    return [{"type": "function", "function": {"name": name, "description": TOOLS[name][1],
                                              "parameters": _parameters(TOOLS[name][0])}} for name in names]


def _parameters(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("required", [])
    return schema
