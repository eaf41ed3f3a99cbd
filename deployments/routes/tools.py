"""The agent's tools (contract §A.8-A.12). Order inside a stateful tool (Decision 13): time budget, argument
checks, session-open check (404 session_lost), then the work. The session lookup is one shard round trip made
up front; its `SessionLost` is held back until the checks before it have had their say."""

from __future__ import annotations

import hashlib
import json
from typing import Awaitable, TypeVar

from fastapi import APIRouter, Request

from session_store.errors import SessionLost

from .. import identity
from ..budget import budget_exhausted
from ..contract import (
    EdgarSearchRequest,
    ParseHtmlPageRequest,
    RetrieveInformationRequest,
    SecFilingSearchRequest,
    SubmitFinalResultRequest,
    ToolResult,
    WebSearchRequest,
)
from ..edgar.filing_text import DocumentUnavailable
from ..retrieval.prompt import (
    NO_PLACEHOLDER,
    PromptError,
    character_ranges,
    missing_key_error,
    placeholder_keys,
)
from ..retrieval.backends import Selection
from ..services import services
from ..tools.edgar_search import edgar_search as run_edgar_search
from ..tools.filing_search import sec_filing_search as run_filing_search
from ..tools.web_search import web_search as run_web_search

router = APIRouter()
T = TypeVar("T")

TOOL_NAMES = (
    "sec_filing_search",
    "edgar_search",
    "parse_html_page",
    "retrieve_information",
    "submit_final_result",
    "web_search",
)


async def _session_lookup(call: Awaitable[T]) -> tuple[T | None, SessionLost | None]:
    try:
        return await call, None
    except SessionLost as lost:
        return None, lost


async def _budget_spent(request: Request) -> str | None:
    """The time-budget check for the search tools, which need no session (a lost one has no budget)."""
    budget = services(request).settings.max_rollout_time_seconds
    if not budget:
        return None
    age, _ = await _session_lookup(
        services(request).store.session_age(identity.session_id(request), identity.claimed_incarnation(request))
    )
    return budget_exhausted(age, budget)


@router.post("/sec_filing_search")
async def sec_filing_search(request: Request, body: SecFilingSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    settings = services(request).settings
    return ToolResult(results=await run_filing_search(
        services(request).companies, body.ticker, body.form_types, body.start_date, body.end_date,
        max_results=settings.max_filing_results, max_end_date=settings.max_end_date,
    ))


@router.post("/edgar_search")
async def edgar_search(request: Request, body: EdgarSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    svc = services(request)
    arguments = body.model_dump()
    return ToolResult(results=await run_edgar_search(svc.full_text, arguments, svc.settings.max_end_date))


@router.post("/web_search")
async def web_search(request: Request, body: WebSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    svc = services(request)
    return ToolResult(results=await run_web_search(
        svc.web, body.search_query, body.start_date, body.end_date, body.number_of_results, svc.settings.max_end_date
    ))


@router.post("/parse_html_page")
async def parse_html_page(request: Request, body: ParseHtmlPageRequest) -> ToolResult:
    svc = services(request)
    sid, claimed = identity.session_id(request), identity.claimed_incarnation(request)
    age, lost = await _session_lookup(svc.store.session_age(sid, claimed))
    if spent := budget_exhausted(age, svc.settings.max_rollout_time_seconds):
        return ToolResult(results=spent)
    if not body.url:
        return ToolResult(results="ERROR: url is required.")
    if not body.key:
        return ToolResult(results="ERROR: key is required.")
    if lost:
        raise lost
    try:
        text = await svc.filings.text(body.url)
    except DocumentUnavailable as error:
        return ToolResult(results=str(error))
    stored = await svc.store.put_document(sid, body.key, text, claimed)
    lines = []
    if stored.overwritten:
        lines.append("WARNING: The key already exists in the data storage. The new result overwrites the old one.")
    lines.append(f"SUCCESS: The result has been saved to the data storage under the key: {body.key}.")
    lines.append("The data_storage currently contains the following keys:")
    lines.extend(stored.keys)
    threshold = svc.settings.large_doc_threshold_chars
    if len(text) > threshold:  # Decision 12
        lines.append(
            f"NOTE: The document under '{body.key}' is {len(text):,} characters long. To read it in parts, pass "
            f"input_character_ranges to retrieve_information, e.g. "
            f"[{{\"key\": \"{body.key}\", \"start\": 0, \"end\": {threshold}}}]."
        )
    return ToolResult(results="\n".join(lines) + "\n")


@router.post("/retrieve_information")
async def retrieve_information(request: Request, body: RetrieveInformationRequest) -> ToolResult:
    svc = services(request)
    keys = placeholder_keys(body.prompt)
    view, lost = await _session_lookup(
        svc.store.read_documents(identity.session_id(request), keys, identity.claimed_incarnation(request))
    )
    if spent := budget_exhausted(view and view.age_seconds, svc.settings.max_rollout_time_seconds):
        return ToolResult(results=spent)
    if lost:  # the embedded backend is always configured, so §E.1 step 2 never fires
        raise lost
    if not keys:
        return ToolResult(results=NO_PLACEHOLDER)
    for key in keys:
        if key not in view.texts:
            return ToolResult(results=missing_key_error(key, view.keys))
    try:
        ranges = character_ranges(body.input_character_ranges)
    except PromptError as error:
        return ToolResult(results=str(error))
    documents = {}
    for key in keys:
        text = view.texts[key]
        start, end = ranges.get(key, (None, None))
        documents[key] = Selection(hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), text, start, end)
    return ToolResult(results=await svc.retrieval.answer(body.prompt, documents))


@router.post("/submit_final_result")
async def submit_final_result(body: SubmitFinalResultRequest) -> ToolResult:
    if not body.final_result:
        return ToolResult(results="ERROR: final_result is required. Please provide your answer.")
    return ToolResult(results=json.dumps({"success": True, "result": body.final_result}))


unknown_tool_router = APIRouter()


@unknown_tool_router.post("/{tool_name}")
async def unknown_tool(tool_name: str) -> ToolResult:
    """Registered after every named route, so those always win (§A.12)."""
    message = f"Tool '{tool_name}' does not exist. Available tools: {', '.join(TOOL_NAMES)}"
    return ToolResult(results=json.dumps({"error": message}))
