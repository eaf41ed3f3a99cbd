"""The agent's tools (contract §A.6-A.12), as thin routes over `finsec/tools/`.

Order inside a tool (Decision 13): time budget, argument checks, session-open check (404 session_lost), then
the work. The budget is read from the signed cookie (identity.started_at), so the search tools need no shard.
Whatever else goes wrong in the work is the tool's error result, never a 500 (`_answer`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from typing import overload

from fastapi import APIRouter, Request

from deployments.http import identity
from deployments.http.strict_json import StrictJsonRoute
from deployments.services import services
from finsec.contract import (
    EdgarSearchRequest,
    ParseHtmlPageRequest,
    RetrieveInformationRequest,
    SecFilingSearchRequest,
    SubmitFinalResultRequest,
    ToolResult,
    WebSearchRequest,
)
from finsec.tool_error import ToolError
from finsec.tools.catalog import TOOLS
from finsec.tools.edgar_search import edgar_search as run_edgar_search
from finsec.tools.filing_search import sec_filing_search as run_filing_search
from finsec.tools.limits import MAX_FINAL_RESULT_CHARS, MAX_PROMPT_CHARS, MAX_QUERY_CHARS, budget_exhausted, too_long
from finsec.tools.web_search import web_search as run_web_search
from session_store import SessionConflict, SessionLost, StoreUnavailable

__all__ = [
    "edgar_search",
    "parse_html_page",
    "retrieve_information",
    "router",
    "sec_filing_search",
    "submit_final_result",
    "TOOL_NAMES",
    "unknown_tool",
    "unknown_tool_result",
    "unknown_tool_router",
    "web_search",
]

log = logging.getLogger(__name__)
router = APIRouter(route_class=StrictJsonRoute)
# HTTP statuses by design (deployments/http/error_handlers.py)
_SESSION_ERRORS = (SessionLost, SessionConflict, StoreUnavailable)

TOOL_NAMES = tuple(TOOLS)


async def _budget_spent(request: Request) -> str | None:
    """The time budget (§A.15), from the seed time the signed cookie carries, judged by the clock of the shard
    that set it (`SessionStore.shard_now`), so no skew or step of this node's clock moves it. A spent one is
    confirmed with the shard, because a session that is no longer open (evicted, released) has no recorded
    start and so no limit; if the shard cannot answer, the cookie decides."""
    svc, started, sid = services(request), identity.started_at(request), identity.session_id(request)
    budget = svc.settings.max_rollout_time_seconds
    if started is None or not budget:
        return None
    try:
        if budget_exhausted(await svc.store.shard_now(sid) - started, budget) is None:
            return None
        shard_started = await svc.store.started_at(sid)
        if shard_started is None:
            return None
        started = shard_started  # the except below then uses the shard's start, not the cookie's (as before)
        return budget_exhausted(await svc.store.shard_now(sid) - started, budget)
    except StoreUnavailable:  # the shard cannot say: the cookie and this node's clock decide
        return budget_exhausted(svc.clock() - started, budget)


@overload
def _json_error(message: str) -> str: ...
@overload
def _json_error(message: None) -> None: ...
@overload
def _json_error(message: str | None) -> str | None: ...
def _json_error(message: str | None) -> str | None:
    return None if message is None else json.dumps({"error": message.removeprefix("ERROR: ")})


async def _answer(tool: str, work: Awaitable[str], *, json_errors: bool) -> ToolResult:
    """The work's result, or the tool's error result for any failure it did not turn into one itself (§A.0
    soft tool errors, §A.7 step 5, §A.8 step 6): only the session errors stay HTTP statuses."""
    try:
        return ToolResult(results=await work)
    except _SESSION_ERRORS:
        raise
    except ToolError as error:
        message = str(error)
    except Exception as error:
        log.exception("%s failed", tool)
        message = (
            f"ERROR: {tool} failed because of a fault in this server ({type(error).__name__}), not "
            "because of its arguments. Try again, or go on with another tool."
        )
    return ToolResult(results=_json_error(message) if json_errors else message)


@router.post("/sec_filing_search")
async def sec_filing_search(request: Request, body: SecFilingSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    if problem := _json_error(too_long("ticker", body.ticker, 32)):
        return ToolResult(results=problem)
    settings = services(request).settings
    return await _answer(
        "sec_filing_search",
        run_filing_search(
            services(request).companies,
            body.ticker,
            body.form_types,
            body.start_date,
            body.end_date,
            max_results=settings.max_filing_results,
            max_end_date=settings.max_end_date,
        ),
        json_errors=True,
    )


@router.post("/edgar_search")
async def edgar_search(request: Request, body: EdgarSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    if problem := _json_error(too_long("search_query", body.search_query, MAX_QUERY_CHARS)):
        return ToolResult(results=problem)
    svc = services(request)
    return await _answer(
        "edgar_search", run_edgar_search(svc.full_text, body.model_dump(), svc.settings.max_end_date), json_errors=True
    )


@router.post("/web_search")
async def web_search(request: Request, body: WebSearchRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    if problem := _json_error(too_long("search_query", body.search_query, MAX_QUERY_CHARS)):
        return ToolResult(results=problem)
    svc = services(request)
    return await _answer(
        "web_search",
        run_web_search(
            svc.web,
            body.search_query,
            body.start_date,
            body.end_date,
            body.number_of_results,
            svc.settings.max_end_date,
        ),
        json_errors=True,
    )


@router.post("/parse_html_page")
async def parse_html_page(request: Request, body: ParseHtmlPageRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    parser = services(request).parser
    if problem := parser.argument_error(body.url, body.key):
        return ToolResult(results=problem)
    return await _answer(
        "parse_html_page",
        parser.parse(identity.session_id(request), identity.claims(request), body.url, body.key),
        json_errors=False,
    )


@router.post("/retrieve_information")
async def retrieve_information(request: Request, body: RetrieveInformationRequest) -> ToolResult:
    if spent := await _budget_spent(request):
        return ToolResult(results=spent)
    if problem := too_long("prompt", body.prompt, MAX_PROMPT_CHARS):
        return ToolResult(results=problem)
    # The embedded backend is always configured, so §E.1 step 2 ("model not configured") never fires.
    return await _answer(
        "retrieve_information",
        services(request).retriever.retrieve(
            identity.session_id(request), identity.claims(request), body.prompt, body.input_character_ranges
        ),
        json_errors=False,
    )


@router.post("/submit_final_result")
async def submit_final_result(body: SubmitFinalResultRequest) -> ToolResult:
    if not body.final_result:
        return ToolResult(results="ERROR: final_result is required. Please provide your answer.")
    if problem := too_long("final_result", body.final_result, MAX_FINAL_RESULT_CHARS):
        return ToolResult(results=problem)
    return ToolResult(results=json.dumps({"success": True, "result": body.final_result}))


unknown_tool_router = APIRouter()


@unknown_tool_router.post("/{tool_name}")
async def unknown_tool(tool_name: str) -> ToolResult:
    """Registered after every named route, so those always win (§A.12)."""
    return ToolResult(results=unknown_tool_result(tool_name))


def unknown_tool_result(tool_name: str, available: tuple[str, ...] | list[str] = TOOL_NAMES) -> str:
    message = f"Tool '{tool_name}' does not exist. Available tools: {', '.join(available)}"
    return json.dumps({"error": message[:2_000]})
