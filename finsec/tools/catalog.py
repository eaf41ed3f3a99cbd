"""The agent's tools as a model sees them: names, descriptions and JSON schemas derived from the request models
the routes validate (finsec/contract.py), so no transport (chat-completions tools, MCP) can drift from them."""

from __future__ import annotations

import copy
import functools
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

__all__ = ["DEFAULT_TOOLS", "INSTRUCTIONS", "parameters", "TOOLS"]

TOOLS: dict[str, tuple[type[BaseModel], str]] = {
    "sec_filing_search": (
        SecFilingSearchRequest,
        (
            "List a company's SEC filings by stock ticker: form, filing date, report date and filing_url for each, "
            'newest first. Filter with form_types (e.g. ["10-K"]) and start_date/end_date (YYYY-MM-DD).'
        ),
    ),
    "edgar_search": (
        EdgarSearchRequest,
        ("Full-text search over EDGAR filings. Returns matching filings with their URLs."),
    ),
    "parse_html_page": (
        ParseHtmlPageRequest,
        ("Fetch a filing (or page) by URL, reduce it to text and store it in this session under `key`."),
    ),
    "retrieve_information": (
        RetrieveInformationRequest,
        (
            "Ask a question about stored documents: the prompt must name each document as {{key}}. Returns the "
            'passages that answer it. input_character_ranges restricts a key to [{"key", "start", "end"}].'
        ),
    ),
    "submit_final_result": (
        SubmitFinalResultRequest,
        ("Submit your final answer, with figures and units. Call it exactly once, when you are done."),
    ),
    "web_search": (WebSearchRequest, "Search the web (only when the server has web search configured)."),
}
# What an agent is told, with the tools, before the question.
INSTRUCTIONS = (
    "You are a financial analyst answering questions from SEC filings. Use the tools: find the company's filings "
    "with sec_filing_search, store the right one with parse_html_page, read it with retrieve_information "
    "(name the stored key as {{key}} in the prompt), and give your answer, with its figures and units, by "
    "calling submit_final_result once."
)
# What an agent is offered unless web search is configured.
DEFAULT_TOOLS = ("sec_filing_search", "edgar_search", "parse_html_page", "retrieve_information", "submit_final_result")


def parameters(name: str) -> dict[str, Any]:
    """The tool's arguments as a JSON schema, without pydantic's titles (noise in a model's prompt). Each call
    gets its own copy: the schema is made once (a task file's rows each carry every tool's)."""
    return copy.deepcopy(_schema(name))


@functools.cache
def _schema(name: str) -> dict[str, Any]:
    schema = TOOLS[name][0].model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("required", [])
    return schema
